"""What passes between the daemon and other processes through the run store: the control
queue fed by `autodev stop|pause|resume|say` (SPEC C6) and `autodev limits clear`
(docs/cli.md), the heartbeat (C2), and the process
group of the call in flight (C1).

A part of `RunStore` (autodev_shell/store/run_store.py).
"""

from __future__ import annotations

import os
from datetime import datetime
from typing import Final, Literal, get_args

import attrs

from .sql import StoreConnection, StoreError, _text, _time, _utcnow, clean_text

#: Commands another process may queue for the daemon (C6: `autodev stop|pause|resume|say`;
#: `clear`: `autodev limits clear ENGINE`, docs/cli.md), stated once: the loop's one table
#: turns each into its event (`runner._CONTROL_EVENTS`).
ControlCommand = Literal["stop", "pause", "resume", "say", "clear"]
CONTROL_COMMANDS: Final[frozenset[ControlCommand]] = frozenset(get_args(ControlCommand))


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


class StoreControls(StoreConnection):
    """The control queue, the heartbeat and the call's process group of one run's store."""

    # --- controls (C6) ----------------------------------------------------------------------

    def enqueue_control(self, command: str, arg: str = "", *,
                        now: datetime | None = None) -> int:
        """Queue `command` for the daemon (from any process); returns its id."""
        if command not in CONTROL_COMMANDS:
            raise ValueError(
                f"unknown control command {command!r}; one of {', '.join(sorted(CONTROL_COMMANDS))}"
            )
        text = clean_text(arg)  # before the write lock: a long text takes its time here
        with self._transaction(f"queue the {command} command") as conn:
            cursor = conn.execute(
                "INSERT INTO controls (command, arg, queued_at) VALUES (?, ?, ?)",
                (command, text, _text(now or _utcnow())),
            )
            return int(cursor.lastrowid or 0)

    def enqueue_clear(self, engine: str, *, now: datetime | None = None) -> int:
        """Queue `autodev limits clear ENGINE` (docs/cli.md): the daemon lifts `engine`'s
        limit (a provider alone: its outage too) at its next step, or at once in a wait. The
        one function the CLI and the panel call; `ValueError` names a malformed engine."""
        from autodev_core.engine import Engine

        try:
            parsed = Engine.parse(engine)
        except ValueError as exc:
            raise ValueError(f"cannot clear {engine!r}: {exc}") from None
        return self.enqueue_control("clear", str(parsed), now=now)

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

    # --- the call's process group (C1) ----------------------------------------------

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
