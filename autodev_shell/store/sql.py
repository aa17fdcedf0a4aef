"""The run store's SQLite connection: transactions, errors, and how times and text are kept.

`StoreConnection` is what every part of `RunStore` (store/run_store.py) writes and reads
through: one connection in autocommit mode, explicit `BEGIN IMMEDIATE … COMMIT` transactions,
and every SQLite failure turned into a `StoreError` whose message is one sentence naming the
file (SPEC C3). The tables themselves are made in store.py; the thread, the revisions and the
controls each have their own module (store/thread.py, store/revisions.py, store/command_queue.py).
`size_wal` gives the WAL its working size at a connection's first commit (docs/performance.md).
"""

from __future__ import annotations

import errno
import os
import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Literal

from autodev_core.errors import AutodevError

# The layout's marks, which `RunStore.open` checks (store.py makes the tables) and `autodev
# status` checks too when it reads the file without opening a `RunStore` (status_read.py).
#: How long a writer waits for another connection's write lock (a CLI enqueuing a control
#: while the daemon commits) before the write fails, in milliseconds.
BUSY_TIMEOUT_MS: Final = 5_000
#: The tables of the layout (store.py's `_SCHEMA`; `commit_marker` is a view from layout 2 on,
#: store_layout.py).
_TABLES: Final = (
    "run", "aliases", "posts", "run_state", "commit_marker", "heartbeat", "controls",
    "turn_inputs",
)

StoreErrorKind = Literal["missing", "not-a-store", "corrupt", "busy", "write-failed",
                         "read-failed"]


class StoreError(AutodevError):
    """The run store could not be opened, read or written.

    `kind` says which: "missing" (no file), "not-a-store" (a file, but not an autodev store),
    "corrupt" (not a database, malformed, truncated, or integrity check failed),
    "busy" (another process held the store's lock for longer than the busy timeout: nothing was
    read or written, and nothing says the store is damaged),
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


#: The WAL file format's fixed sizes: the file's header and each frame's header (a frame is
#: its header and one page).
_WAL_HEADER: Final = 32
_FRAME_HEADER: Final = 24
#: Frames past `wal_autocheckpoint` the WAL is sized for: the commit that crosses the
#: checkpoint's threshold ends past it (a large revision writes a few dozen pages).
_WAL_SLACK_FRAMES: Final = 64
#: What fills a frame the WAL is sized with: page number 0, which no frame ever has (SQLite
#: reads a frame with page 0 as the end of the log, whatever its salts and checksums), then
#: bytes that are not zeros, so that every block of it is written (a virtual disk may keep
#: no block for zeros, and a first write to such a block is as slow as growing the file).
_FILL_PAGE_NUMBER: Final = b"\0\0\0\0"
_FILL_BYTE: Final = b"\xa5"
#: The size of the sizing's writes, one memory page (`size_wal`).
_CHUNK: Final = 4096


def size_wal(conn: sqlite3.Connection) -> None:
    """Give the WAL of `conn`'s database its working size now, as frames no reader takes.

    A WAL grows by each commit's frames until its automatic checkpoint, after which commits
    overwrite it from its start. While it grows, each commit's `fdatasync` also makes the
    file's new blocks and size durable, which on a quiet disk costs about half as much again
    as the commit (docs/performance.md). Sized once, those blocks are then only overwritten.

    Call it inside a write transaction (`BEGIN IMMEDIATE`): SQLite's write lock keeps every
    other connection from appending frames meanwhile. Only whole frames past the file's end
    are written, where SQLite has none, and each has page number 0: SQLite's recovery stops at
    the first frame that has page 0 or salts or checksums that do not match the header's,
    as it does at the old frames past the end of a WAL it restarted. The working size is also
    the connection's `journal_size_limit`: a WAL a large revision grew past it (a huge message)
    is cut back to it when SQLite restarts the log after a checkpoint, instead of keeping its
    largest size for the rest of the run; SQLite deletes the WAL when the last connection
    closes. The frames reach the disk with the caller's commit (its `fdatasync` of
    the WAL). A WAL whose size is not a whole number of frames is left alone; one that cannot
    be sized (a full disk) is cut back to its size and grows as before.
    """
    try:
        checkpoint_pages = int(_scalar(conn, "PRAGMA wal_autocheckpoint"))
        page = int(_scalar(conn, "PRAGMA page_size"))
        database = next(
            (str(row[2]) for row in conn.execute("PRAGMA database_list") if row[1] == "main"), "")
    except sqlite3.Error:
        return  # left to the commit's own statements to fail, or not
    if checkpoint_pages <= 0 or not database:
        return  # no automatic checkpoint (no working size), or no file (in memory)
    frame = _FRAME_HEADER + page
    wanted = _WAL_HEADER + (checkpoint_pages + _WAL_SLACK_FRAMES) * frame
    with suppress(sqlite3.Error):  # a WAL that stays large costs disk space, nothing else
        conn.execute(f"PRAGMA journal_size_limit = {wanted}")
    try:  # SQLite's own name for its WAL; never made here (SQLite sets its mode)
        fd = os.open(f"{database}-wal", os.O_WRONLY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        size = os.fstat(fd).st_size
        start = max(size, _WAL_HEADER)  # an empty WAL: SQLite writes the header first
        if start >= wanted or (start - _WAL_HEADER) % frame:
            return
        fill = memoryview(
            (_FILL_PAGE_NUMBER + _FILL_BYTE * (frame - len(_FILL_PAGE_NUMBER)))
            * ((wanted - start) // frame))
        try:
            # One memory page at a time, as SQLite's own small writes fill the WAL: the kernel
            # sizes its page-cache entries by the write, and a commit's small write into a
            # large one costs time in proportion to its size.
            offset, end = start, start + len(fill)
            while offset < end:
                piece = fill[offset - start:min(end, (offset // _CHUNK + 1) * _CHUNK) - start]
                if os.pwrite(fd, piece, offset) != len(piece):  # short: no more room
                    raise OSError(errno.EFBIG, "the WAL could not be sized")
                offset += len(piece)
        except OSError:
            with suppress(OSError):
                os.ftruncate(fd, size)
    finally:
        os.close(fd)


def _describe(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


class StoreConnection:
    """The connection one `RunStore` holds and the transactions the parts of it run. `RunStore`
    sets these attributes when it opens the file (store.py)."""

    path: Path
    tier: str
    _conn: sqlite3.Connection
    _run_id: str

    @property
    def run_id(self) -> str:
        """The run this store belongs to (its owner identity, B1)."""
        return self._run_id

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
        if is_busy(exc):
            return busy_error(self.path, exc, doing=what)
        corrupt = isinstance(exc, sqlite3.DatabaseError) and _looks_corrupt(exc)
        kind: StoreErrorKind = "corrupt" if corrupt else ("write-failed" if write else
                                                           "read-failed")
        return StoreError(
            f"Could not {what} in the run store {self.path} ({_describe(exc)}).",
            path=self.path, kind=kind, detail=_describe(exc),
        )

    def _read_one(self, what: str, sql: str) -> Any:
        try:
            return _scalar(self._conn, sql)
        except sqlite3.Error as exc:
            raise self._error(what, exc, write=False) from exc


def _scalar(conn: sqlite3.Connection, sql: str) -> Any:
    row = conn.execute(sql).fetchone()
    if row is None:
        raise sqlite3.DatabaseError(f"expected a row from: {sql}")
    return row[0]


def _rollback(conn: sqlite3.Connection) -> None:
    # SQLite may have rolled back already, leaving nothing to roll back.
    with suppress(sqlite3.Error):
        conn.execute("ROLLBACK")


def is_busy(exc: BaseException) -> bool:
    """SQLite gave up waiting for a lock another connection holds (SQLITE_BUSY, SQLITE_LOCKED
    and their extended codes, e.g. BUSY_RECOVERY while another process rebuilds the WAL index
    after a crash): a fact about the other process, never about the file."""
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(code, int) and code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def busy_error(path: str | os.PathLike[str], exc: sqlite3.Error, *,
               doing: str = "") -> StoreError:
    """A store whose lock another process held past the busy timeout: said as what it is, so
    no one restores a sound store (a daemon stopped with SIGSTOP or Ctrl-Z while it held the
    lock, or one recovering the store after a kill -9)."""
    could_not = f"could not {doing}: " if doing else ""
    return StoreError(
        f"The run store {path} is busy ({_describe(exc)}): {could_not}another process has held "
        f"its lock for over {BUSY_TIMEOUT_MS // 1000} s (a daemon stopped with SIGSTOP or "
        "Ctrl-Z, or one recovering the store after a crash); nothing was read or written and "
        "nothing says the store is damaged. Try again.",
        path=path, kind="busy", detail=_describe(exc),
    )


def _looks_corrupt(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return "malformed" in text or "not a database" in text or "corrupt" in text
