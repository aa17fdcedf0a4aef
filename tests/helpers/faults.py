"""Disk-failure injection for the run store.

Tests run as root, and root writes read-only files and directories, so "make the database
read-only" injects nothing. Instead the store is opened with a `sqlite3.Connection` subclass
(`RunStore.open(..., factory=...)`) whose `execute` raises the error SQLite raises on a failing
disk, `sqlite3.OperationalError("disk I/O error")`, for the statements a `DiskSwitch` names.

The same class is the seam through which a test looks at what the store does, instead of
patching its private names (docs/design.md): a `DiskSwitch` keeps every connection opened
through it (`connection` is the store's own once the store is open) and calls its `listeners`
with each statement before the statement runs.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable
from typing import Any

DISK_IO_ERROR = "disk I/O error"
#: Statement prefixes that write; ROLLBACK is left alone so a failed transaction still undoes.
WRITES = ("BEGIN IMMEDIATE", "INSERT", "UPDATE", "DELETE", "COMMIT")


class DiskSwitch:
    """Turns failures on and off. `fail(prefixes)` makes matching statements raise; `after`
    lets that many matching statements succeed first (to fail mid-transaction)."""

    def __init__(self) -> None:
        self.prefixes: tuple[str, ...] = ()
        self.after = 0
        self.error = DISK_IO_ERROR
        self.code = sqlite3.SQLITE_IOERR
        self.raised = 0
        #: Every connection opened through `faulty_connection(self)`, in order.
        self.connections: list[sqlite3.Connection] = []
        #: Called with (database, sql) before each statement runs (and before it may fail).
        self.listeners: list[Callable[[str, str], None]] = []

    @property
    def connection(self) -> sqlite3.Connection:
        """The connection opened last: the store's own once `RunStore.open` returned (a store
        being made is first made through another, on a file beside it)."""
        return self.connections[-1]

    def fail(self, prefixes: Iterable[str] = WRITES, *, after: int = 0,
             error: str = DISK_IO_ERROR, code: int = sqlite3.SQLITE_IOERR) -> None:
        """`error` and `code` are the message and (extended) result code SQLite would give,
        e.g. "database is locked" and `SQLITE_BUSY`."""
        self.prefixes = tuple(p.upper() for p in prefixes)
        self.after = after
        self.error = error
        self.code = code

    def heal(self) -> None:
        self.prefixes = ()

    def check(self, sql: str, database: str = "") -> None:
        for listen in self.listeners:
            listen(database, sql)
        statement = sql.lstrip().upper()
        if self.prefixes and statement.startswith(self.prefixes):
            if self.after > 0:
                self.after -= 1
                return
            self.raised += 1
            failure = sqlite3.OperationalError(self.error)
            failure.sqlite_errorcode = self.code  # as SQLite's own errors carry it
            raise failure


def faulty_connection(switch: DiskSwitch) -> type[sqlite3.Connection]:
    """A connection class whose statements go through `switch` first."""

    class FaultyConnection(sqlite3.Connection):
        def __init__(self, database: Any, *args: Any, **kwargs: Any) -> None:
            super().__init__(database, *args, **kwargs)
            self.database = str(database)
            switch.connections.append(self)

        def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
            switch.check(sql, self.database)
            return super().execute(sql, parameters)

        def executemany(self, sql: str, parameters: Any, /) -> sqlite3.Cursor:
            switch.check(sql, self.database)
            return super().executemany(sql, parameters)

    return FaultyConnection
