"""The canonical store: one SQLite database per run (SPEC C3, B13).

It holds the run's identity, the thread, the run state (scheduler and persistence state, both
opaque JSON text made by the core's converters), the commit marker, the heartbeat, the control
queue fed by `autodev stop|pause|resume|say` from other processes, and the persisted turn
inputs of B19. The database runs in WAL mode with `synchronous=FULL`, and each revision is one
`BEGIN IMMEDIATE … COMMIT` transaction: posts, state and marker land together or not at all.

This module decides nothing. It writes what it is given, reads back what is there, and turns
every SQLite failure into a `StoreError` whose message is one sentence naming the file. Whether
a write counts as confirmed is the core's call (`autodev_core.control.persistence`, B4-B9).

This module makes and opens the file (the schema, its checks, the run's identity); the rest of
`RunStore` is in its parts: `store_sql` (the connection, transactions, `StoreError`),
`store_revisions` (commit, snapshot, marker), `store_thread` (posts, turn inputs) and
`store_controls` (the control queue, the heartbeat, the call's process group). Every name is
still imported from here.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from ..private import open_private
from .command_queue import CONTROL_COMMANDS, CallProcess, Control, Heartbeat, StoreControls
from .layout import LAYOUT, MARKER_VIEW
from .revisions import CommitResult, Marker, Snapshot, StoreRevisions
from .sql import (
    _TABLES,
    BUSY_TIMEOUT_MS,
    StoreError,
    StoreErrorKind,
    _describe,
    _rollback,
    _text,
    _utcnow,
    busy_error,
    clean_text,
    is_busy,
)
from .thread import NewPost, Post, StoreThread

#: Version of the layout below; a store written by a newer layout is refused, not guessed at.
#: A layout-1 store is brought to this one by its first commit (store_layout.py).
SCHEMA_VERSION: Final = LAYOUT
#: The tier name this store reports to the persistence reducer (B5: canonical by default).
CANONICAL_TIER: Final = "sqlite"

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
CREATE TABLE run_state (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    revision INTEGER NOT NULL,
    scheduler_json TEXT NOT NULL,
    persistence_json TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    marker_run_id TEXT,
    marker_revision INTEGER,
    marker_tier TEXT,
    marker_at TEXT
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
""" + MARKER_VIEW


class RunStore(StoreRevisions, StoreThread, StoreControls):
    """One run's SQLite database. Open with `RunStore.open`; close when done (or use `with`).

    This class opens the file and keeps the run's identity; its other jobs are its parts, each
    in its own module over the one connection (`sql.StoreConnection`): the revisions
    (`revisions`), the thread and turn inputs (`thread`), and the controls, heartbeat and call
    process (`command_queue`).

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

        The file is opened by SQLite alone, never read here first: closing any other descriptor
        of it would silently drop every lock this process's SQLite connections hold on it (POSIX
        record locks belong to the process and the file), and another process could then take
        the store for unused and delete the WAL under them. An orchestrator may hold a store
        open and open it again (`tests/shell/test_store_locks.py`).
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


def _configure(conn: sqlite3.Connection, path: Path) -> None:
    try:
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()
        conn.execute("PRAGMA synchronous = FULL")  # C3: a returned commit is on disk.
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA foreign_keys = ON")
    except sqlite3.DatabaseError as exc:
        code = getattr(exc, "sqlite_errorcode", None)
        if is_busy(exc):
            raise busy_error(path, exc) from exc
        if code == sqlite3.SQLITE_NOTADB:
            raise StoreError(
                f"The run store {path} is not an SQLite database (corrupt or overwritten).",
                path=path, kind="corrupt", detail="not a database",
            ) from exc
        if code in _NOT_OPENED:
            raise _not_opened(path, exc) from exc
        raise _corrupt(path, exc) from exc
    if mode is None or str(mode[0]).lower() != "wal":
        raise StoreError(f"The run store {path} cannot be switched to WAL mode.",
                         path=path, kind="read-failed", detail=str(mode))


#: SQLite could not open or write the files beside the database (a read-only folder or file
#: system, another user's files, no descriptor left): nothing says the file is damaged.
_NOT_OPENED: Final = frozenset(
    {sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_PERM})


def _not_opened(path: Path, exc: sqlite3.Error) -> StoreError:
    """A store SQLite could not open, said as what it is, not as a corrupt file (whose hint is
    `autodev restore`): in WAL mode SQLite writes its index (`-shm`) beside the database even
    to read it, so a folder it cannot write to cannot be read either."""
    folder = path.parent
    try:
        read_only = bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        read_only = False
    if read_only or not os.access(folder, os.W_OK):
        where = "on a read-only file system" if read_only else "not writable by this user"
        why = (f"{folder} is {where}, and SQLite writes its index beside the database even "
               "to read it")
    else:
        why = "check the permissions of its files and the open-file limit"
    return StoreError(
        f"The run store {path} cannot be opened ({_describe(exc)}): {why}; the store itself "
        "may be sound.",
        path=path, kind="read-failed", detail=_describe(exc),
    )


def _corrupt(path: Path, exc: sqlite3.Error) -> StoreError:
    """A failed read of the file's own pages, called corrupt unless SQLite only waited for
    another process's lock (`busy_error`): only a damaged file earns `autodev restore`'s hint."""
    if is_busy(exc):
        return busy_error(path, exc)
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


#: A WAL, index or journal left where no database is any more is moved aside under this name
#: (`run.db.orphaned-<time>-wal`), never deleted.
ORPHANED_SUFFIX: Final = ".orphaned-"
_SQLITE_SIDE_FILES: Final = ("-wal", "-shm", "-journal")


def _set_orphans_aside(path: Path, now: datetime) -> None:
    """Move aside what SQLite left beside a database that is gone (`rm run.db` after a kill -9,
    a file emptied): SQLite finds a WAL or a rollback journal by its name alone and would
    replay the old store's pages onto the new file, bringing the old run back under the new
    one, or making it corrupt once the pages no longer fit (tests/e2e/test_store_orphan_wal.py).
    Kept, never deleted: the WAL may be the only copy of the old run's last revisions. Called
    by the store's creator (the daemon or a restore, both holding the run lock) before the new
    file is linked into place, so no process ever opens the new file beside them."""
    stamp = now.astimezone(UTC).strftime("%Y%m%dT%H%M%S%f")
    moved = False
    for suffix in _SQLITE_SIDE_FILES:
        orphan = Path(f"{path}{suffix}")
        if orphan.exists():
            os.replace(orphan, path.with_name(f"{path.name}{ORPHANED_SUFFIX}{stamp}{suffix}"))
            moved = True
    if moved:
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


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
        # Private whatever the umask (docs/store.md): SQLite gives the `-wal` and `-shm` files
        # the database file's own mode, so an empty file made 0600 here keeps all three 0600.
        os.close(open_private(tmp, os.O_RDWR | os.O_EXCL))
        conn = sqlite3.connect(str(tmp), isolation_level=None, factory=factory,
                               timeout=BUSY_TIMEOUT_MS / 1000)
        try:
            # Small pages: a revision rewrites a handful of pages (the post, its key, the run
            # state, the marker), each whole in the WAL; at 1 KiB a short revision writes ~7 KiB
            # instead of ~21 KiB at SQLite's default 4 KiB (store layout 2). Set before the first
            # table; a store made earlier keeps its page size.
            conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
            _configure(conn, tmp)
            _create(conn, run_id, integrity_id, aliases, now)
        finally:
            conn.close()  # the last connection checkpoints the WAL into the file
        if path.exists() and path.stat().st_size == 0:
            path.unlink()  # an empty placeholder holds nothing
        if not path.exists():
            _set_orphans_aside(path, now)
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
        names = {r[0] for r in conn.execute(  # commit_marker is a view from layout 2 on
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
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


__all__ = [
    "BUSY_TIMEOUT_MS",
    "CANONICAL_TIER",
    "CONTROL_COMMANDS",
    "PAGE_SIZE",
    "SCHEMA_VERSION",
    "CallProcess",
    "CommitResult",
    "Control",
    "Heartbeat",
    "Marker",
    "NewPost",
    "Post",
    "RunStore",
    "Snapshot",
    "StoreError",
    "StoreErrorKind",
    "clean_text",
]
