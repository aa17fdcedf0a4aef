"""The daemon's writes (SPEC C2, C3, B4-B9, B14-B16, B20): one revision per step, the turn
gate's wait for confirmed writes, the heartbeat, the replicas' sync between commits, and the
check that the store is still the file it opened.

`Commits` is the part of `Runner` (autodev_shell/runner.py) that writes: the loop hands it the
scheduler state after each step, with the posts and taken controls that step carries, and it
commits them through `Durability` (durability/writes.py) as the next revision. It decides
nothing: whether a write is confirmed and whether a turn may start are the core's answers.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from contextlib import suppress
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Final

from autodev_core.control.identity import RunIdentity
from autodev_core.errors import AutodevError
from autodev_core.serialization import to_json

from ..clock import Clock
from ..durability.writes import Durability, PersistResult
from ..store.run_store import NewPost, RunStore, StoreError
from ..store.runlock import lock_path

if TYPE_CHECKING:
    from autodev_core.scheduler import SchedulerState

    from .logsink import LogSink
    from .operator_commands import Controls

#: Real seconds between attempts to write a revision the turn gate is waiting for (B9).
GATE_RETRY_SECONDS: Final = 1.0


class RunFolderGone(AutodevError):
    """The run's database (or its write-ahead log) was removed or replaced under the daemon:
    whatever it wrote now would be lost, so it stops writing and exits."""


def _file_id(path: Path) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


class Commits:
    """What one run's daemon writes, and the facts it keeps to write it (see module doc)."""

    def __init__(self, *, store: RunStore, durability: Durability, identity: RunIdentity,
                 clock: Clock, log: LogSink, controls: Controls) -> None:
        self.store = store
        self.durability = durability
        self.identity = identity
        self.clock = clock
        self.log = log
        self.controls = controls
        # C3: the counter goes on from the highest revision known anywhere (store, marker,
        # shadow copy), so a restart after a shadowed write never reuses a pending revision.
        self.revision = max(store.revision, durability.highest_revision)
        self.untaken: set[int] = set()  # controls carried out, not yet marked taken
        self._beat_failed = False
        self._sync_failed = False
        self._db_file = _file_id(store.path)
        self._wal_path = Path(f"{store.path}-wal")
        self._wal_file = _file_id(self._wal_path)

    # --- persistence (C3, B4-B9) -----------------------------------------------------------

    def commit(
        self, state: SchedulerState, posts: Sequence[NewPost], *, reason: str,
        taken: Sequence[int] = (),
    ) -> PersistResult:
        """Commit `state` (after a step) as the next revision, with the step's posts and the
        controls it carried out (C3)."""
        self.check_store_file()
        self.revision += 1
        self.untaken.update(taken)
        result = self.durability.persist_revision(
            self.revision,
            posts,
            to_json(state),
            identity=self.identity,
            now=self.clock.now(),
            reason=reason,
            taken_controls=tuple(sorted(self.untaken)),
        )
        if result.outcome == "committed":
            self.untaken.clear()
        if result.shadow_dropped:
            self.log.note(self.clock.now(), "the shadow copy is full; left out: "
                          + "; ".join(result.shadow_dropped))
        if result.outcome != "committed":
            self.log.note(
                self.clock.now(),
                f"revision {self.revision} not confirmed "
                f"({result.outcome}: {result.error or result.gate.reason})",
            )
        return result

    def gate_open(self) -> bool:
        """B9: a turn starts only when the last writes are confirmed; else retry the write."""
        while True:
            gate = self.durability.gate(self.identity)
            if gate.may_start:
                return True
            if not gate.retry_write:
                self.log.note(self.clock.now(), f"turn deferred: {gate.reason} {gate.detail}")
            result = self.durability.retry(identity=self.identity, now=self.clock.now())
            if result.gate.may_start:
                return True
            if self.clock.wait(
                GATE_RETRY_SECONDS * self._clock_factor(),
                lambda: self.controls.has("stop", "pause"),
            ):
                return False

    # --- the replicas between commits (B14-B16) ---------------------------------------------

    def sync_replicas(self, now: datetime, *, flush: bool = False) -> None:
        """The replica steps the core's cadence says are due now; with `flush`, every replica
        behind the store is brought level (pause, stop, a clean exit). A failure is logged once
        (and again after a success): the replica stays "pending sync" and is tried again."""
        result = self.durability.sync_replicas(now=now, flush=flush).result
        if result.failed:
            if not self._sync_failed:
                failures = "; ".join(f"{f.replica}: {f.error}" for f in result.failed)
                self.log.note(now, f"replicas not synced ({failures}); the store holds every "
                                   "revision, the sync is tried again")
            self._sync_failed = True
        elif result.succeeded:
            self._sync_failed = False

    # --- the heartbeat and the store file (C2) ---------------------------------------------

    def beat(self, now: datetime) -> None:
        """The heartbeat (C2). A store that cannot take it (a full disk) never stops the
        daemon: the lock file's time stands in for it (a metadata write needs no free space),
        and the log says so once, and again when the store takes it back."""
        try:
            self.store.heartbeat(now)
        except StoreError as exc:
            with suppress(OSError):
                os.utime(lock_path(self.store.path))
            if not self._beat_failed:
                self.log.note(now, f"heartbeat not written ({exc}); the lock file's time stands "
                                   "in for it until the store takes writes again")
            self._beat_failed = True
        else:
            if self._beat_failed:
                self.log.note(now, "heartbeat written to the store again")
            self._beat_failed = False
        self.sync_replicas(now)  # B14: a replica left behind while the daemon waits catches up

    def check_store_file(self) -> None:
        """The store this daemon writes is still the file at its path, and so is its WAL (same
        device and inode as when it started): checked every slice and before every write.
        Raises `RunFolderGone` otherwise."""
        problem = ""
        if _file_id(self.store.path) != self._db_file:
            problem = f"{self.store.path} was removed or replaced"
        else:
            wal = _file_id(self._wal_path)
            if self._wal_file is None:
                self._wal_file = wal  # the first write makes it
            elif wal != self._wal_file:
                problem = f"{self._wal_path} was removed or replaced"
        if problem:
            raise RunFolderGone(
                f"The run store {problem} while the daemon was running; it stops writing now "
                "(nothing more can be saved there). Restore the run folder, or start a new run."
            )

    def _clock_factor(self) -> float:
        return float(getattr(self.clock, "factor", 1.0))


def revision_span(revisions: Sequence[int]) -> str:
    """Revisions as a log line names them: "none", "4" or "4-7"."""
    if not revisions:
        return "none"
    return str(revisions[0]) if len(revisions) == 1 else f"{revisions[0]}-{revisions[-1]}"
