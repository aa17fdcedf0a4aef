"""Disk-failure injection for the run store.

Tests run as root, and root writes read-only files and directories, so "make the database
read-only" injects nothing. Instead the store is opened with a `sqlite3.Connection` subclass
(`RunStore.open(..., factory=...)`) whose `execute` raises the error SQLite raises on a failing
disk, `sqlite3.OperationalError("disk I/O error")`, for the statements a `DiskSwitch` names.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
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

    def check(self, sql: str) -> None:
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
        def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
            switch.check(sql)
            return super().execute(sql, parameters)

        def executemany(self, sql: str, parameters: Any, /) -> sqlite3.Cursor:
            switch.check(sql)
            return super().executemany(sql, parameters)

    return FaultyConnection
