"""The run store's SQLite connection: transactions, errors, and how times and text are kept.

`StoreConnection` is what every part of `RunStore` (autodev_shell/store.py) writes and reads
through: one connection in autocommit mode, explicit `BEGIN IMMEDIATE … COMMIT` transactions,
and every SQLite failure turned into a `StoreError` whose message is one sentence naming the
file (SPEC C3). The tables themselves are made in store.py; the thread, the revisions and the
controls each have their own module (store_thread.py, store_revisions.py, store_controls.py).
"""

from __future__ import annotations

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


def _looks_corrupt(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return "malformed" in text or "not a database" in text or "corrupt" in text
