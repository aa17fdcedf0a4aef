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
        self.raised = 0

    def fail(self, prefixes: Iterable[str] = WRITES, *, after: int = 0,
             error: str = DISK_IO_ERROR) -> None:
        self.prefixes = tuple(p.upper() for p in prefixes)
        self.after = after
        self.error = error

    def heal(self) -> None:
        self.prefixes = ()

    def check(self, sql: str) -> None:
        statement = sql.lstrip().upper()
        if self.prefixes and statement.startswith(self.prefixes):
            if self.after > 0:
                self.after -= 1
                return
            self.raised += 1
            raise sqlite3.OperationalError(self.error)


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
