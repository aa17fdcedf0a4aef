"""The panel's reading of a run (docs/panel.md): the store through `mode=ro` connections only, in
autocommit (no read transaction is ever left open: it would freeze `PRAGMA data_version` and
hold back the daemon's WAL checkpoints), the lanes from their files.

What the panel shows of the run's state is the core's: `status.report.status_report` (the very
function of `autodev status`), the stored scheduler state restored by the core's converter, the
persistence line and the core's turn gate (B9). Nothing here decides anything.
"""

from __future__ import annotations

import sqlite3
import threading
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote

from ..status.report import status_report
from ..store.folder import LANES_DIR, LOG_FILE, run_db
from ..store.run_store import CANONICAL_TIER, RunStore, StoreError
from ..store.sql import BUSY_TIMEOUT_MS

if TYPE_CHECKING:
    from autodev_core.scheduler.state import SchedulerState

#: Posts sent when a page opens, and the most one page of older posts holds.
FIRST_PAGE: Final = 50
MAX_PAGE: Final = 500
#: The author of a message said by the operator (`runner.USER`).
USER: Final = "user"
#: Search over the whole thread (`GET /api/search`, docs/panel.md "Search and filters"): the
#: most matches one answer holds, the most posts one answer reads (a longer thread is searched
#: a window at a time, the answer naming where to go on), the longest search accepted, and the
#: excerpt of each match sent (a post may hold 1 MiB: the permalink opens it whole).
SEARCH_PAGE: Final = 50
SEARCH_SCAN: Final = 100_000
SEARCH_MAX_CHARS: Final = 500
EXCERPT_CHARS: Final = 300
#: The search kinds: a participant's post, or a message said to the team by the operator.
SEARCH_KINDS: Final = ("", "post", "message")


def connect_ro(db: Path) -> sqlite3.Connection:
    """A read-only connection to the run's store: SQLite refuses every write through it."""
    return sqlite3.connect(f"file:{quote(str(db))}?mode=ro", uri=True, isolation_level=None,
                           timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False)


def like_pattern(words: str) -> str:
    """`%words%` for `LIKE … ESCAPE '\\'`, the search's own `%`, `_` and `\\` escaped: they
    match themselves, never any text."""
    escaped = words.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _holds(needle: str, text: str, participant: str, engine: str) -> bool:
    """`autodev_holds(needle, text, participant, engine)`: the search for words SQLite's `LIKE`
    cannot take as they are (it folds the case of ASCII letters only, and ends a pattern at a
    NUL); one call per post."""
    return needle in text.lower() or needle in participant.lower() or needle in engine.lower()


def _plain(words: str) -> bool:
    return words.isascii() and words.isprintable()


def excerpt(text: str, words: str) -> tuple[str, bool, bool]:
    """At most EXCERPT_CHARS of `text` around the first match of `words` (its start when the
    match is in the author or the engine): the excerpt, and whether text was cut before and
    after it."""
    found = text.lower().find(words.lower()) if words else -1
    start = max(0, found - EXCERPT_CHARS // 3) if found > 0 else 0
    start = min(start, max(0, len(text) - EXCERPT_CHARS))
    end = min(len(text), start + EXCERPT_CHARS)
    return text[start:end], start > 0, end < len(text)


def open_ro_store(run_dir: Path) -> RunStore:
    """A `RunStore` over a `mode=ro` connection, for the read paths of the shell's functions
    (`status_report`'s full path, the persistence line, the turn gate)."""
    db = run_db(run_dir)
    if not db.exists():
        raise StoreError(f"There is no run store at {db}.", path=db, kind="missing")
    return RunStore(db, connect_ro(db), tier=CANONICAL_TIER)


def post_json(row: tuple[Any, ...]) -> dict[str, Any]:
    seq, revision, key, participant, engine, text, at = row
    return {
        "seq": int(seq), "revision": int(revision), "key": str(key), "author": str(participant),
        "engine": str(engine), "text": str(text), "at": str(at),
        "kind": "message" if participant == USER else "post",
    }


_POST_COLUMNS: Final = "seq, revision, post_key, participant, engine, text, at"


class RunReader:
    """One read-only connection for the poller (data_version, new posts) and short queries."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.db = run_db(run_dir)
        self.lanes_dir = run_dir / LANES_DIR
        self.log_file = run_dir / LOG_FILE
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()  # one statement at a time on the shared connection

    def _connection(self) -> sqlite3.Connection | None:
        if self._conn is None:
            if not self.db.exists():
                return None  # no run yet, or a restore is replacing it: asked again later
            try:
                self._conn = connect_ro(self.db)
                self._conn.create_function("autodev_holds", 4, _holds, deterministic=True)
            except sqlite3.Error:
                return None
        return self._conn

    def reset(self) -> None:
        """Forget the connection (the store file was replaced: a restore, B14)."""
        if self._conn is not None:
            self._conn.close()
        self._conn = None

    def close(self) -> None:
        self.reset()

    def _rows(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            conn = self._connection()
            if conn is None:
                return []
            try:
                return conn.execute(sql, args).fetchall()  # autocommit: no transaction left open
            except sqlite3.Error:
                self.reset()
                return []

    def data_version(self) -> int | None:
        """`PRAGMA data_version`: changes when another connection commits."""
        rows = self._rows("PRAGMA data_version")
        return int(rows[0][0]) if rows else None

    def posts_after(self, seq: int, limit: int = MAX_PAGE + 1) -> list[dict[str, Any]]:
        rows = self._rows(f"SELECT {_POST_COLUMNS} FROM posts WHERE seq > ? ORDER BY seq "
                          "LIMIT ?", (seq, limit))
        return [post_json(r) for r in rows]

    def posts_after_revision(self, revision: int, limit: int) -> list[dict[str, Any]]:
        rows = self._rows(f"SELECT {_POST_COLUMNS} FROM posts WHERE revision > ? ORDER BY seq "
                          "LIMIT ?", (revision, limit))
        return [post_json(r) for r in rows]

    def newest_posts(self, limit: int = FIRST_PAGE) -> list[dict[str, Any]]:
        """The newest `limit` posts, oldest first: read from the end of the thread's primary
        key, so a thread of 100,000 posts costs as much as one of 100."""
        rows = self._rows(f"SELECT {_POST_COLUMNS} FROM posts ORDER BY seq DESC LIMIT ?",
                          (limit,))
        return [post_json(r) for r in reversed(rows)]

    def posts_before(self, revision: int, limit: int) -> list[dict[str, Any]]:
        """Up to `limit` posts of revisions before `revision`, oldest first, and every other
        post of the oldest revision among them (a revision is never cut in two by paging)."""
        rows = self._rows(f"SELECT {_POST_COLUMNS} FROM posts WHERE revision < ? ORDER BY seq "
                          "DESC LIMIT ?", (revision, limit))
        if rows:
            oldest = rows[-1]
            rows += self._rows(f"SELECT {_POST_COLUMNS} FROM posts WHERE revision = ? AND "
                               "seq < ? ORDER BY seq DESC", (oldest[1], oldest[0]))
        return [post_json(r) for r in reversed(rows)]

    def search(self, words: str, *, author: str = "", kind: str = "", before: int | None = None,
               limit: int = SEARCH_PAGE) -> dict[str, Any]:
        """The posts before `before` (a seq; the thread's end without it) whose text, author or
        engine holds `words` (case ignored; `%`, `_` and quotes are plain characters), by
        `author` and of `kind` when given, newest first: at most `limit`, and at most
        SEARCH_SCAN posts read. `next` is where a further search starts (its `before`), None
        once the thread's start is reached."""
        # A `before` past the thread's end (past SQLite's integers, even) starts at its end.
        end = self.last_seq() + 1 if before is None else min(before, self.last_seq() + 1)
        low = max(0, end - SEARCH_SCAN)
        where: list[str] = ["seq < ?", "seq >= ?"]
        args: list[object] = [end, low]
        if author:
            where.append("participant = ?")
            args.append(author)
        if kind:
            where.append("participant = ?" if kind == "message" else "participant <> ?")
            args.append(USER)
        if words and _plain(words):
            # SQLite's LIKE stops at a NUL in the text; a post holding one (what a CLI printed,
            # kept as it was) is read by the Python comparison instead.
            where.append("(" + " OR ".join(f"{c} LIKE ? ESCAPE '\\'" for c in
                                           ("text", "participant", "engine"))
                         + " OR (instr(CAST(text AS BLOB), X'00') > 0"
                           " AND autodev_holds(?, text, participant, engine)))")
            args += [like_pattern(words)] * 3 + [words.lower()]
        elif words:
            where.append("autodev_holds(?, text, participant, engine)")
            args.append(words.lower())
        rows = self._rows(f"SELECT {_POST_COLUMNS} FROM posts WHERE {' AND '.join(where)} "
                          "ORDER BY seq DESC LIMIT ?", (*args, limit))
        if len(rows) == limit:
            after: int | None = int(rows[-1][0])
        else:
            first = self._rows("SELECT MIN(seq) FROM posts")
            after = low if first and first[0][0] is not None and low > first[0][0] else None
        found = []
        for row in rows:
            post = post_json(row)
            post["excerpt"], post["cut_before"], post["cut_after"] = excerpt(post.pop("text"),
                                                                               words)
            found.append(post)
        return {"posts": found, "next": after, "from": end, "to": low}

    def post(self, seq: int) -> dict[str, Any] | None:
        """One post by its seq (a permalink), whole."""
        rows = self._rows(f"SELECT {_POST_COLUMNS} FROM posts WHERE seq = ?", (seq,))
        return post_json(rows[0]) if rows else None

    def last_revision(self) -> int:
        """The revision of the newest post (0: none)."""
        rows = self._rows("SELECT revision FROM posts ORDER BY seq DESC LIMIT 1")
        return int(rows[0][0]) if rows else 0

    def last_seq(self) -> int:
        rows = self._rows("SELECT COALESCE(MAX(seq), 0) FROM posts")
        return int(rows[0][0]) if rows else 0

    def status(self, now: datetime | None = None) -> tuple[dict[str, Any], Any, datetime]:
        """`autodev status`'s facts, zone and instant (the same function, read-only)."""
        return status_report(self.run_dir, now=now, open_store=open_ro_store, read_only=True)

    def scheduler_state(self) -> SchedulerState | None:
        """The committed scheduler state, restored by the core's converter; None when there is
        none yet or it cannot be read (the status line says which)."""
        from autodev_core.scheduler.state import SchedulerState
        from autodev_core.serialization import from_json

        rows = self._rows("SELECT scheduler_json FROM run_state WHERE id = 1")
        if not rows or not rows[0][0] or rows[0][0] == "{}":
            return None
        try:
            state: SchedulerState = from_json(rows[0][0], SchedulerState)
        except Exception:
            return None
        return state

    def gate(self) -> str:
        """The core's turn gate (B9) over what is on disk, in its own words."""
        from autodev_core.control.persistence import turn_gate

        from ..durability.on_disk import read_on_disk
        from ..status.report import store_identity

        try:
            store = open_ro_store(self.run_dir)
        except StoreError as exc:
            return str(exc)
        try:
            identity = store_identity(store)
            disk = read_on_disk(store, identity)
            stored = store.marker()
            gate = turn_gate(disk.state, identity,
                             marker=stored.as_core() if stored is not None else None)
        except Exception as exc:
            return f"unknown ({exc})"
        finally:
            store.close()
        verdict = "the next turn may start" if gate.may_start else "the next turn waits"
        detail = f": {gate.detail}" if gate.detail else ""
        return f"{verdict} ({gate.reason}){detail}"

    def notice_lines(self, limit_bytes: int = 256 * 1024) -> list[str]:
        """The end of the run's log (`autodev.log`): the lines that set limits are read from it."""
        try:
            with self.log_file.open("rb") as handle:
                size = handle.seek(0, 2)
                handle.seek(max(0, size - limit_bytes))
                data = handle.read()
        except OSError:
            return []
        return data.decode("utf-8", "replace").splitlines()
