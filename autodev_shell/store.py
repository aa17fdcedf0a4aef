"""The canonical store: one SQLite database per run (SPEC C3, B13).

It holds the run's identity, the thread, the run state (scheduler and persistence state, both
opaque JSON text made by the core's converters), the commit marker, the heartbeat, the control
queue fed by `autodev stop|pause|resume|say` from other processes, and the persisted turn
inputs of B19. The database runs in WAL mode with `synchronous=FULL`, and each revision is one
`BEGIN IMMEDIATE … COMMIT` transaction: posts, state and marker land together or not at all.

This module decides nothing. It writes what it is given, reads back what is there, and turns
every SQLite failure into a `StoreError` whose message is one sentence naming the file. Whether
a write counts as confirmed is the core's call (`autodev_core.persistence`, B4-B9).
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Literal

import attrs

from autodev_core.errors import AutodevError
from autodev_core.persistence import CommitMarker
from autodev_core.turn_input import InputRecord

from .private import open_private

#: Version of the layout below; a store written by a newer layout is refused, not guessed at.
SCHEMA_VERSION: Final = 1
#: The tier name this store reports to the persistence reducer (B5: canonical by default).
CANONICAL_TIER: Final = "sqlite"
#: How long a writer waits for another connection's write lock (a CLI enqueuing a control
#: while the daemon commits) before the write fails, in milliseconds.
BUSY_TIMEOUT_MS: Final = 5_000
#: Commands another process may queue for the daemon (C6: `autodev stop|pause|resume|say`).
CONTROL_COMMANDS: Final = frozenset({"stop", "pause", "resume", "say"})
#: The first 16 bytes of every SQLite 3 database file.
_SQLITE_HEADER: Final = b"SQLite format 3\x00"

_TABLES: Final = (
    "run", "aliases", "posts", "run_state", "commit_marker", "heartbeat", "controls",
    "turn_inputs",
)

_SCHEMA: Final = """
CREATE TABLE run (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    run_id TEXT NOT NULL,
    integrity_id TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    schema_version INTEGER NOT NULL
);
CREATE TABLE aliases (
    alias TEXT PRIMARY KEY,
    added_at TEXT NOT NULL
);
CREATE TABLE posts (
    seq INTEGER PRIMARY KEY,
    post_key TEXT NOT NULL UNIQUE,
    revision INTEGER NOT NULL,
    at TEXT NOT NULL,
    participant TEXT NOT NULL,
    engine TEXT NOT NULL,
    text TEXT NOT NULL
);
CREATE INDEX posts_by_revision ON posts (revision);
CREATE TABLE run_state (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    revision INTEGER NOT NULL,
    scheduler_json TEXT NOT NULL,
    persistence_json TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE commit_marker (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    run_id TEXT NOT NULL,
    revision INTEGER NOT NULL,
    tier TEXT NOT NULL,
    at TEXT NOT NULL
);
CREATE TABLE heartbeat (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    at TEXT NOT NULL,
    pid INTEGER NOT NULL
);
CREATE TABLE controls (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    command TEXT NOT NULL,
    arg TEXT NOT NULL,
    queued_at TEXT NOT NULL,
    taken_at TEXT
);
CREATE TABLE turn_inputs (
    parent_input_id TEXT PRIMARY KEY,
    bound_text TEXT NOT NULL,
    context TEXT NOT NULL,
    saved_at TEXT NOT NULL
);
"""

StoreErrorKind = Literal["missing", "not-a-store", "corrupt", "write-failed", "read-failed"]


class StoreError(AutodevError):
    """The run store could not be opened, read or written.

    `kind` says which: "missing" (no file), "not-a-store" (a file, but not an autodev store),
    "corrupt" (not a database, malformed, truncated, or integrity check failed),
    "write-failed" (a commit did not happen; nothing of it was written), "read-failed".
    """

    def __init__(self, message: str, *, path: str | os.PathLike[str], kind: StoreErrorKind,
                 detail: str = "") -> None:
        self.path = str(path)
        self.kind: StoreErrorKind = kind
        self.detail = detail
        super().__init__(message)


def _aware(value: datetime) -> datetime:
    if not isinstance(value, datetime) or value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"the store keeps aware datetimes only, not {value!r}")
    return value


def _check_aware(value: datetime) -> None:
    _aware(value)


def _text(value: datetime) -> str:
    return _aware(value).isoformat()


def _time(value: str) -> datetime:
    return datetime.fromisoformat(value)


_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(value: str) -> str:
    """`value` as SQLite can keep it: any text a CLI printed is stored, NUL bytes included,
    but a lone surrogate (a JSON `\\ud800` escape in a CLI's event, an undecodable byte in a
    command-line argument) cannot be UTF-8, so it becomes U+FFFD instead of failing the write."""
    return _SURROGATE.sub("\ufffd", value)


def _utcnow() -> datetime:
    # The shell may read the clock; every method still takes `now` so tests pin it.
    return datetime.now(UTC)


@attrs.frozen
class NewPost:
    """A post to commit. `key` makes the write idempotent: a replayed commit carrying the same
    key (say turn id + attempt) never adds the post twice. Empty → "r<revision>.<index>"."""

    participant: str = attrs.field(converter=clean_text)
    engine: str = attrs.field(converter=clean_text)
    text: str = attrs.field(converter=clean_text)
    at: datetime = attrs.field(validator=lambda _i, _a, v: _check_aware(v))
    key: str = attrs.field(default="", converter=clean_text)


@attrs.frozen
class Post:
    """A post as stored: its place in the thread (`seq`) and the revision that committed it."""

    seq: int
    revision: int
    key: str
    participant: str
    engine: str
    text: str
    at: datetime


@attrs.frozen
class Marker:
    """The commit marker (C3): which run, which revision, which tier, when."""

    run_id: str
    revision: int
    tier: str
    at: datetime

    def as_core(self) -> CommitMarker:
        """The marker as the core's B8 planner reads it. A marker exists only inside a
        committed transaction, so it is accepted by construction."""
        return CommitMarker(run_id=self.run_id, revision=self.revision, tier=self.tier)


@attrs.frozen
class Snapshot:
    """Everything the canonical store holds for a run, read in one transaction (B15's source).

    `revision` 0 means nothing was ever committed.
    """

    run_id: str
    integrity_id: str
    aliases: tuple[str, ...]
    revision: int
    scheduler_state_json: str
    persistence_state_json: str
    marker: Marker | None
    posts: tuple[Post, ...]


@attrs.frozen
class CommitResult:
    """What one commit did: `added` posts are new, `duplicates` were already there (a
    replay). `replayed` is true when `revision` was not above the stored one, so the state
    and marker were left as they were."""

    revision: int
    added: int
    duplicates: int
    replayed: bool


@attrs.frozen
class Control:
    """A command queued by another process for the daemon (`autodev stop`, …)."""

    id: int
    command: str
    arg: str
    queued_at: datetime


@attrs.frozen
class CallProcess:
    """The process group of the call in flight, as recorded when it started."""

    pid: int
    pgid: int
    ticks: int | None  # the leader's start time, /proc/<pid>/stat field 22
    started_at: datetime


#: Made on first use, so stores made before it keep opening.
_CALL_PROCESS_TABLE: Final = (
    "CREATE TABLE IF NOT EXISTS call_process (id INTEGER PRIMARY KEY CHECK (id = 1), "
    "pid INTEGER NOT NULL, pgid INTEGER NOT NULL, ticks INTEGER, started_at TEXT NOT NULL)"
)


@attrs.frozen
class Heartbeat:
    at: datetime
    pid: int


def _describe(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


class RunStore:
    """One run's SQLite database. Open with `RunStore.open`; close when done (or use `with`).

    `factory` is handed to `sqlite3.connect`: tests pass a `sqlite3.Connection` subclass whose
    `execute` fails on demand, to inject disk errors as root (who can write read-only files).
    """

    def __init__(self, path: Path, conn: sqlite3.Connection, *, tier: str) -> None:
        self.path = path
        self.tier = tier
        self._conn = conn
        # The run a store belongs to never changes once written (B1), so it is read once and
        # stays answerable while the disk fails.
        self._run_id = str(self._read_one("read the run id", "SELECT run_id FROM run WHERE id = 1"))

    # --- opening ---------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        create: bool = False,
        run_id: str = "",
        integrity_id: str = "",
        aliases: Iterable[str] = (),
        now: datetime | None = None,
        check: bool = True,
        tier: str = CANONICAL_TIER,
        factory: type[sqlite3.Connection] = sqlite3.Connection,
    ) -> RunStore:
        """Open the store at `path`; with `create`, make it (for `run_id`) if it is absent.

        `check` runs `PRAGMA integrity_check` first, so a corrupt or truncated file is refused
        with a `StoreError` (kind "corrupt") instead of failing later mid-run.
        """
        where = Path(path)
        exists = where.exists() and where.stat().st_size > 0
        if not exists and not create:
            raise StoreError(f"There is no run store at {where}.", path=where, kind="missing")
        if not exists and not run_id.strip():
            raise ValueError("creating a run store needs the run id it belongs to (B1)")
        if not exists:
            _create_file(where, run_id.strip(), integrity_id.strip(), aliases, now or _utcnow(),
                         factory)
        _check_header(where)
        try:
            conn = sqlite3.connect(
                str(where), isolation_level=None, factory=factory, timeout=BUSY_TIMEOUT_MS / 1000
            )
        except sqlite3.Error as exc:
            raise StoreError(
                f"The run store {where} cannot be opened ({_describe(exc)}).",
                path=where, kind="corrupt", detail=_describe(exc),
            ) from exc
        try:
            _configure(conn, where)
            if check:
                _integrity(conn, where)
            _check_schema(conn, where)
            return cls(where, conn, tier=tier)
        except BaseException:
            conn.close()
            raise

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # --- transactions ----------------------------------------------------------------------

    @contextmanager
    def _transaction(self, what: str, *, write: bool = True) -> Iterator[sqlite3.Connection]:
        conn = self._conn
        if conn.in_transaction:  # A failed ROLLBACK earlier left one open; start clean.
            _rollback(conn)
        try:
            conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        except sqlite3.Error as exc:
            raise self._error(what, exc, write=write) from exc
        try:
            yield conn
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            _rollback(conn)
            raise self._error(what, exc, write=write) from exc
        except BaseException:
            _rollback(conn)
            raise

    def _error(self, what: str, exc: sqlite3.Error, *, write: bool) -> StoreError:
        corrupt = isinstance(exc, sqlite3.DatabaseError) and _looks_corrupt(exc)
        kind: StoreErrorKind = "corrupt" if corrupt else ("write-failed" if write else
                                                           "read-failed")
        return StoreError(
            f"Could not {what} in the run store {self.path} ({_describe(exc)}).",
            path=self.path, kind=kind, detail=_describe(exc),
        )

    # --- the revision commit (C3) -----------------------------------------------------------

    def commit(
        self,
        revision: int,
        posts: Sequence[NewPost],
        scheduler_state_json: str,
        *,
        persistence_state_json: str,
        now: datetime,
        run_id: str | None = None,
        taken_controls: Sequence[int] = (),
        turn_inputs: Sequence[InputRecord] = (),
    ) -> CommitResult:
        """Commit one revision in one transaction: its posts, the run state and the marker.
        `taken_controls` are the ids of queued controls this revision carries out (a `say`'s
        post, a pause…): they are marked taken in the same transaction, so a control is never
        taken without its effect, nor its effect written without taking it.

        Posts are keyed, so replaying a commit never duplicates one. A revision not above the
        stored one is a replay: its missing posts are added, state and marker stay. The
        marker carries `run_id` (the run the write was queued for; default: the store's run).
        Raises `StoreError` when nothing was written.
        """
        if isinstance(revision, bool) or not isinstance(revision, int) or revision <= 0:
            raise ValueError(f"a committed revision is a positive int, not {revision!r}")
        for name, value in (("scheduler_state_json", scheduler_state_json),
                            ("persistence_state_json", persistence_state_json)):
            if not isinstance(value, str):
                raise TypeError(f"{name} is JSON text from the core's converter, not {value!r}")
        stamp = _text(now)
        marker_run = (self.run_id if run_id is None else run_id).strip()
        added = 0
        with self._transaction(f"commit revision {revision}") as conn:
            stored = _scalar(conn, "SELECT revision FROM run_state WHERE id = 1")
            replayed = revision <= int(stored)
            for index, post in enumerate(posts):
                key = post.key or f"r{revision}.{index}"
                cursor = conn.execute(
                    "INSERT INTO posts (post_key, revision, at, participant, engine, text) "
                    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (post_key) DO NOTHING",
                    (key, revision, _text(post.at), post.participant, post.engine, post.text),
                )
                added += max(cursor.rowcount, 0)
            for control in taken_controls:
                conn.execute(
                    "UPDATE controls SET taken_at = ? WHERE id = ? AND taken_at IS NULL",
                    (stamp, int(control)),
                )
            for record in turn_inputs:  # saved when the store could not take them (B19)
                _save_turn_input(conn, record, stamp)
            if not replayed:
                conn.execute(
                    "UPDATE run_state SET revision = ?, scheduler_json = ?, persistence_json = ?,"
                    " updated_at = ? WHERE id = 1",
                    (revision, scheduler_state_json, persistence_state_json, stamp),
                )
                conn.execute(
                    "INSERT INTO commit_marker (id, run_id, revision, tier, at) "
                    "VALUES (1, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET "
                    "run_id = excluded.run_id, revision = excluded.revision, "
                    "tier = excluded.tier, at = excluded.at",
                    (marker_run, revision, self.tier, stamp),
                )
        return CommitResult(revision, added, len(posts) - added, replayed)

    def import_snapshot(self, snapshot: Snapshot, *, now: datetime) -> None:
        """Fill this store, which must be empty, from `snapshot` in one transaction: the
        restore path of a checkpoint (B14). Posts keep their seq and revision."""
        with self._transaction("import a snapshot") as conn:
            stored = int(_scalar(conn, "SELECT revision FROM run_state WHERE id = 1"))
            count = int(_scalar(conn, "SELECT count(*) FROM posts"))
            if stored or count:
                raise StoreError(
                    f"The run store {self.path} is not empty (revision {stored}, {count} posts),"
                    " so a snapshot cannot be imported into it.",
                    path=self.path, kind="write-failed", detail="not empty",
                )
            conn.execute("UPDATE run SET run_id = ?, integrity_id = ? WHERE id = 1",
                         (snapshot.run_id, snapshot.integrity_id))
            self._run_id = snapshot.run_id
            conn.executemany("INSERT OR IGNORE INTO aliases (alias, added_at) VALUES (?, ?)",
                             [(a, _text(now)) for a in snapshot.aliases])
            conn.executemany(
                "INSERT INTO posts (seq, post_key, revision, at, participant, engine, text) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(p.seq, p.key, p.revision, _text(p.at), p.participant, p.engine, p.text)
                 for p in snapshot.posts],
            )
            conn.execute(
                "UPDATE run_state SET revision = ?, scheduler_json = ?, persistence_json = ?, "
                "updated_at = ? WHERE id = 1",
                (snapshot.revision, snapshot.scheduler_state_json,
                 snapshot.persistence_state_json, _text(now)),
            )
            if snapshot.marker is not None:
                m = snapshot.marker
                conn.execute(
                    "INSERT INTO commit_marker (id, run_id, revision, tier, at) "
                    "VALUES (1, ?, ?, ?, ?)", (m.run_id, m.revision, m.tier, _text(m.at)),
                )

    # --- reading ---------------------------------------------------------------------------

    @property
    def run_id(self) -> str:
        """The run this store belongs to (its owner identity, B1)."""
        return self._run_id

    @property
    def revision(self) -> int:
        """The last committed revision (0 before the first commit)."""
        return int(self._read_one("read the revision",
                                  "SELECT revision FROM run_state WHERE id = 1"))

    def _read_one(self, what: str, sql: str) -> Any:
        try:
            return _scalar(self._conn, sql)
        except sqlite3.Error as exc:
            raise self._error(what, exc, write=False) from exc

    def snapshot(self) -> Snapshot:
        """The whole canonical state, read in one transaction (the checkpoint's only source)."""
        with self._transaction("read a snapshot", write=False) as conn:
            run = conn.execute(
                "SELECT run_id, integrity_id FROM run WHERE id = 1").fetchone()
            aliases = tuple(r[0] for r in conn.execute("SELECT alias FROM aliases ORDER BY alias"))
            state = conn.execute(
                "SELECT revision, scheduler_json, persistence_json FROM run_state WHERE id = 1"
            ).fetchone()
            marker = _marker(conn)
            posts = _posts(conn, 0)
        return Snapshot(
            run_id=run[0], integrity_id=run[1], aliases=aliases, revision=int(state[0]),
            scheduler_state_json=state[1], persistence_state_json=state[2], marker=marker,
            posts=posts,
        )

    def thread(self, *, after_seq: int = 0) -> tuple[Post, ...]:
        """The posts in thread order (those after `after_seq`, to read incrementally)."""
        with self._transaction("read the thread", write=False) as conn:
            return _posts(conn, after_seq)

    def marker(self) -> Marker | None:
        with self._transaction("read the commit marker", write=False) as conn:
            return _marker(conn)

    def integrity_check(self) -> tuple[str, ...]:
        """`PRAGMA integrity_check` as rows of text: `("ok",)` when the file is sound."""
        try:
            return tuple(str(r[0]) for r in self._conn.execute("PRAGMA integrity_check"))
        except sqlite3.Error as exc:
            raise self._error("run the integrity check", exc, write=False) from exc

    # --- identity (B1) ----------------------------------------------------------------------

    @property
    def integrity_id(self) -> str:
        return str(self._read_one("read the integrity id",
                                  "SELECT integrity_id FROM run WHERE id = 1"))

    def aliases(self) -> tuple[str, ...]:
        with self._transaction("read the aliases", write=False) as conn:
            return tuple(r[0] for r in conn.execute("SELECT alias FROM aliases ORDER BY alias"))

    def add_alias(self, alias: str, *, now: datetime | None = None) -> None:
        """Record another id the host knows this run by (B3)."""
        name = alias.strip()
        if not name:
            raise ValueError("an alias is a non-empty run id")
        with self._transaction("add an alias") as conn:
            conn.execute("INSERT OR IGNORE INTO aliases (alias, added_at) VALUES (?, ?)",
                         (name, _text(now or _utcnow())))

    # --- heartbeat (C2) ---------------------------------------------------------------------

    def heartbeat(self, now: datetime, *, pid: int | None = None) -> None:
        """Record that the daemon (`pid`, default this process) is alive at `now`."""
        with self._transaction("write the heartbeat") as conn:
            conn.execute(
                "INSERT INTO heartbeat (id, at, pid) VALUES (1, ?, ?) ON CONFLICT (id) "
                "DO UPDATE SET at = excluded.at, pid = excluded.pid",
                (_text(now), os.getpid() if pid is None else pid),
            )

    def last_heartbeat(self) -> Heartbeat | None:
        with self._transaction("read the heartbeat", write=False) as conn:
            row = conn.execute("SELECT at, pid FROM heartbeat WHERE id = 1").fetchone()
        return None if row is None else Heartbeat(_time(row[0]), int(row[1]))

    # --- the call's process group (issue 9.7) ----------------------------------------------

    def record_call_process(self, pid: int, pgid: int, ticks: int | None, *,
                            now: datetime) -> None:
        """Record the process group of the call now starting (its leader's pid and start
        time), so that a daemon started after a kill -9 can find it and end it."""
        with self._transaction("record the call's process") as conn:
            conn.execute(_CALL_PROCESS_TABLE)
            conn.execute(
                "INSERT INTO call_process (id, pid, pgid, ticks, started_at) VALUES "
                "(1, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET pid = excluded.pid, "
                "pgid = excluded.pgid, ticks = excluded.ticks, started_at = excluded.started_at",
                (pid, pgid, ticks, _text(now)),
            )

    def clear_call_process(self) -> None:
        """The recorded call has ended (or was ended): forget it."""
        with self._transaction("clear the call's process") as conn:
            conn.execute(_CALL_PROCESS_TABLE)
            conn.execute("DELETE FROM call_process")

    def call_process(self) -> CallProcess | None:
        """The call process recorded and not cleared (a daemon died during its call), if any."""
        try:
            with self._transaction("read the call's process", write=False) as conn:
                row = conn.execute(
                    "SELECT pid, pgid, ticks, started_at FROM call_process WHERE id = 1"
                ).fetchone()
        except StoreError as exc:
            if "no such table" in exc.detail:
                return None  # a store no call was ever recorded in
            raise
        if row is None:
            return None
        ticks = None if row[2] is None else int(row[2])
        return CallProcess(int(row[0]), int(row[1]), ticks, _time(row[3]))

    # --- controls (C6) ----------------------------------------------------------------------

    def enqueue_control(self, command: str, arg: str = "", *,
                        now: datetime | None = None) -> int:
        """Queue `command` for the daemon (from any process); returns its id."""
        if command not in CONTROL_COMMANDS:
            raise ValueError(
                f"unknown control command {command!r}; one of {', '.join(sorted(CONTROL_COMMANDS))}"
            )
        with self._transaction(f"queue the {command} command") as conn:
            cursor = conn.execute(
                "INSERT INTO controls (command, arg, queued_at) VALUES (?, ?, ?)",
                (command, clean_text(arg), _text(now or _utcnow())),
            )
            return int(cursor.lastrowid or 0)

    def pending_controls(self, *, after: int = 0) -> tuple[Control, ...]:
        """The queued commands not yet taken whose id is above `after`, oldest first. Reading
        takes nothing: the daemon marks each taken in the commit that carries it out."""
        with self._transaction("read the queued commands", write=False) as conn:
            rows = conn.execute(
                "SELECT id, command, arg, queued_at FROM controls WHERE taken_at IS NULL "
                "AND id > ? ORDER BY id", (after,),
            ).fetchall()
        return tuple(Control(int(r[0]), r[1], r[2], _time(r[3])) for r in rows)

    def take_controls(self, *, now: datetime | None = None) -> tuple[Control, ...]:
        """The queued commands not yet taken, oldest first, marked taken in the same
        transaction so each is handed out once."""
        with self._transaction("take the queued commands") as conn:
            rows = conn.execute(
                "SELECT id, command, arg, queued_at FROM controls WHERE taken_at IS NULL "
                "ORDER BY id"
            ).fetchall()
            if rows:
                conn.execute(
                    "UPDATE controls SET taken_at = ? WHERE taken_at IS NULL AND id <= ?",
                    (_text(now or _utcnow()), rows[-1][0]),
                )
        return tuple(Control(int(r[0]), r[1], r[2], _time(r[3])) for r in rows)

    # --- turn inputs (B19) ------------------------------------------------------------------

    def save_turn_input(self, record: InputRecord, *, now: datetime) -> None:
        """Persist the context assembled for a turn, bound to its parent input's text (B19).

        `record` comes from the core's `bind_input_context`; it replaces any earlier record of
        the same parent input.
        """
        if not record.parent_input_id:
            raise ValueError("a turn input record needs its parent input's id")
        with self._transaction("save a turn input") as conn:
            _save_turn_input(conn, record, _text(now))

    def load_turn_input(self, parent_input_id: str) -> InputRecord | None:
        """The record persisted for `parent_input_id`, verbatim, or None. Whether it is reused
        is the core's decision (`plan_turn_input`), never the store's."""
        with self._transaction("load a turn input", write=False) as conn:
            row = conn.execute(
                "SELECT parent_input_id, bound_text, context FROM turn_inputs "
                "WHERE parent_input_id = ?", (parent_input_id,),
            ).fetchone()
        return None if row is None else InputRecord(row[0], row[1], row[2])


# --- helpers --------------------------------------------------------------------------------


def _save_turn_input(conn: sqlite3.Connection, record: InputRecord, stamp: str) -> None:
    conn.execute(
        "INSERT INTO turn_inputs (parent_input_id, bound_text, context, saved_at) "
        "VALUES (?, ?, ?, ?) ON CONFLICT (parent_input_id) DO UPDATE SET "
        "bound_text = excluded.bound_text, context = excluded.context, "
        "saved_at = excluded.saved_at",
        (clean_text(record.parent_input_id), clean_text(record.bound_text),
         clean_text(record.context), stamp),
    )


def _scalar(conn: sqlite3.Connection, sql: str) -> Any:
    row = conn.execute(sql).fetchone()
    if row is None:
        raise sqlite3.DatabaseError(f"expected a row from: {sql}")
    return row[0]


def _rollback(conn: sqlite3.Connection) -> None:
    # SQLite may have rolled back already, leaving nothing to roll back.
    with suppress(sqlite3.Error):
        conn.execute("ROLLBACK")


def _looks_corrupt(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return "malformed" in text or "not a database" in text or "corrupt" in text


def _check_header(path: Path) -> None:
    try:
        with path.open("rb") as handle:
            head = handle.read(len(_SQLITE_HEADER))
    except OSError as exc:
        raise StoreError(f"The run store {path} cannot be read ({_describe(exc)}).",
                         path=path, kind="read-failed", detail=_describe(exc)) from exc
    if head != _SQLITE_HEADER:
        raise StoreError(
            f"The run store {path} is not an SQLite database (corrupt or overwritten).",
            path=path, kind="corrupt", detail="bad header",
        )


def _configure(conn: sqlite3.Connection, path: Path) -> None:
    try:
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()
        conn.execute("PRAGMA synchronous = FULL")  # C3: a returned commit is on disk.
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA foreign_keys = ON")
    except sqlite3.DatabaseError as exc:
        raise _corrupt(path, exc) from exc
    if mode is None or str(mode[0]).lower() != "wal":
        raise StoreError(f"The run store {path} cannot be switched to WAL mode.",
                         path=path, kind="read-failed", detail=str(mode))


def _corrupt(path: Path, exc: sqlite3.Error) -> StoreError:
    return StoreError(
        f"The run store {path} is corrupt or truncated ({_describe(exc)}).",
        path=path, kind="corrupt", detail=_describe(exc),
    )


def _integrity(conn: sqlite3.Connection, path: Path) -> None:
    try:
        rows = [str(r[0]) for r in conn.execute("PRAGMA integrity_check")]
    except sqlite3.DatabaseError as exc:
        raise _corrupt(path, exc) from exc
    if rows != ["ok"]:
        raise StoreError(
            f"The run store {path} fails its integrity check ({rows[0] if rows else 'no answer'}).",
            path=path, kind="corrupt", detail="; ".join(rows),
        )


#: Page size of a new store (bytes).
PAGE_SIZE: Final = 1024


def _create_file(path: Path, run_id: str, integrity_id: str, aliases: Iterable[str],
                 now: datetime, factory: type[sqlite3.Connection]) -> None:
    """Make the store whole beside `path`, then link it into place: another process never sees
    a database at `path` without its schema (a `say` racing the daemon's first start)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.creating")
    for leftover in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
        leftover.unlink(missing_ok=True)
    try:
        # Private whatever the umask (issue 9 item 8): SQLite gives the `-wal` and `-shm` files
        # the database file's own mode, so an empty file made 0600 here keeps all three 0600.
        os.close(open_private(tmp, os.O_RDWR | os.O_EXCL))
        conn = sqlite3.connect(str(tmp), isolation_level=None, factory=factory,
                               timeout=BUSY_TIMEOUT_MS / 1000)
        try:
            # Small pages: a revision rewrites a handful of pages (the post, its key, the run
            # state, the marker), each whole in the WAL; at 1 KiB a short revision writes ~7 KiB
            # instead of ~21 KiB at SQLite's default 4 KiB (issue 13). Set before the first
            # table; a store made earlier keeps its page size.
            conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
            _configure(conn, tmp)
            _create(conn, run_id, integrity_id, aliases, now)
        finally:
            conn.close()  # the last connection checkpoints the WAL into the file
        if path.exists() and path.stat().st_size == 0:
            path.unlink()  # an empty placeholder holds nothing
        with contextlib.suppress(FileExistsError):
            os.link(tmp, path)  # never replaces a store another process made meanwhile
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except sqlite3.Error as exc:
        raise StoreError(
            f"The run store {path} cannot be created ({_describe(exc)}).",
            path=path, kind="write-failed", detail=_describe(exc),
        ) from exc
    finally:
        for leftover in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
            leftover.unlink(missing_ok=True)


def _create(conn: sqlite3.Connection, run_id: str, integrity_id: str, aliases: Iterable[str],
            now: datetime) -> None:
    stamp = _text(now)
    conn.execute("BEGIN IMMEDIATE")
    try:
        existing = conn.execute(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'run'"
        ).fetchone()[0]
        if not existing:  # Another process may have created it between our check and now.
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute(
                "INSERT INTO run (id, run_id, integrity_id, created_at, schema_version) "
                "VALUES (1, ?, ?, ?, ?)", (run_id, integrity_id, stamp, SCHEMA_VERSION),
            )
            conn.executemany(
                "INSERT OR IGNORE INTO aliases (alias, added_at) VALUES (?, ?)",
                [(a.strip(), stamp) for a in aliases if a.strip()],
            )
            conn.execute(
                "INSERT INTO run_state (id, revision, scheduler_json, persistence_json, "
                "updated_at) VALUES (1, 0, '{}', '{}', ?)", (stamp,),
            )
        conn.execute("COMMIT")
    except BaseException:
        _rollback(conn)
        raise


def _check_schema(conn: sqlite3.Connection, path: Path) -> None:
    try:
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        missing = [t for t in _TABLES if t not in names]
        if missing:
            raise StoreError(
                f"{path} is an SQLite database but not an autodev run store "
                f"(missing table {missing[0]}).",
                path=path, kind="not-a-store", detail=", ".join(missing),
            )
        row = conn.execute("SELECT schema_version FROM run WHERE id = 1").fetchone()
        state = conn.execute("SELECT revision FROM run_state WHERE id = 1").fetchone()
    except sqlite3.DatabaseError as exc:
        raise _corrupt(path, exc) from exc
    if row is None or state is None:
        raise StoreError(f"The run store {path} has lost its run record.",
                         path=path, kind="corrupt", detail="no run row")
    if int(row[0]) > SCHEMA_VERSION:
        raise StoreError(
            f"The run store {path} was written by a newer autodev (layout {row[0]}, "
            f"this one reads {SCHEMA_VERSION}).",
            path=path, kind="not-a-store", detail=f"schema {row[0]}",
        )


def _marker(conn: sqlite3.Connection) -> Marker | None:
    row = conn.execute("SELECT run_id, revision, tier, at FROM commit_marker WHERE id = 1"
                       ).fetchone()
    return None if row is None else Marker(row[0], int(row[1]), row[2], _time(row[3]))


def _posts(conn: sqlite3.Connection, after_seq: int) -> tuple[Post, ...]:
    rows = conn.execute(
        "SELECT seq, revision, post_key, participant, engine, text, at FROM posts "
        "WHERE seq > ? ORDER BY seq", (after_seq,),
    )
    return tuple(Post(int(r[0]), int(r[1]), r[2], r[3], r[4], r[5], _time(r[6])) for r in rows)
