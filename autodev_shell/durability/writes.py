"""Persisting a revision, as the daemon loop calls it (SPEC B4-B9, B12-B16, C3).

`Durability.persist_revision` carries out what the core decides, in this order:

1. report `Queued(revision, run)` to `reduce_persistence` (B6);
2. commit every pending revision to the canonical store, one transaction each, oldest first,
   re-checking before each write that the run it was queued for is still active (B12);
3. on success report `Accepted(<store tier>, revision)` (B7), remove the shadow copy, and run
   the replica sync steps the core plans (checkpoint, optional search rebuild) at the cadence
   it keeps (`SyncCadence`: a replica is synced when it is a number of revisions or seconds
   behind, else it stays "pending sync", B14), each on its own so one failing does not stop
   the others (B15, B16); `sync_replicas` runs the same steps between commits (a heartbeat)
   and, with `flush`, brings every replica level (pause, stop, a clean exit);
4. on failure write the shadow copy of what is still pending and report
   `Queued(..., recoverable_tier="shadow")` (B6), or plain `Queued` when even the shadow
   failed; the pending revisions are retried on the next call (or `retry`);
5. ask the core's turn gate (B9) whether the next turn may start, passing the facts: the
   commit marker and the shadow copy, if any.

The module decides nothing: every "may", "clear" and "refuse" above is a core function.

Two of its jobs have their own modules: where a daemon resumes from (`read_on_disk`, in
durability/on_disk.py, also what `autodev status` reads) and the shadow file's bookkeeping
between writes (`ShadowFile`, in durability/shadow_file.py). Here remain the commit of what
is pending, the gates asked before writing and before a turn (B9-B11), and the replica sync
that follows a commit (B14-B16).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Final, Literal

import attrs

from autodev_core.control.identity import RunIdentity, check_owner
from autodev_core.control.mutation import (
    LoadState,
    MutationContext,
    RecoveryAborted,
    mutation_block_kind,
    mutation_block_reason,
    recovery_still_active,
)
from autodev_core.control.persistence import (
    DEFAULT_TIERS,
    Accepted,
    PersistenceState,
    Queued,
    TierRoles,
    TurnGate,
    reduce_persistence,
    turn_gate,
)
from autodev_core.control.replicas import (
    DEFAULT_CADENCE,
    ReplicaState,
    SyncCadence,
    SyncOutcome,
    SyncPlan,
    SyncResult,
    audit_replicas,
    combine_sync_results,
    plan_replica_sync,
)
from autodev_core.control.turn_input import InputRecord
from autodev_core.serialization import to_json

from ..store.run_store import NewPost, RunStore, Snapshot, StoreError
from .checkpoint import CheckpointTail, CheckpointWrite, load_checkpoint, write_checkpoint
from .files import ReplicaFileError, sweep_temp_files
from .on_disk import read_on_disk
from .paths import SHADOW_TIER, checkpoint_path, restore_in_progress, shadow_path
from .shadow_file import SHADOW_MAX_BYTES, PendingRevision, ShadowFile

#: Replica names as the core's sync plan and audit see them (B13).
CHECKPOINT_REPLICA: Final = "checkpoint"
SEARCH_REPLICA: Final = "search"

Outcome = Literal["committed", "shadowed", "unsaved", "run-mismatch", "nothing-pending",
                  "blocked"]
#: B11 reasons that keep every write off the store (the others wait for the canonical store,
#: which the retried write is how to reach).
_NO_WRITE: Final = frozenset({"restore-lock", "no-active-run", "not-initialised"})

#: Rebuilds the optional search replica from the canonical snapshot; raises on failure.
SearchRebuild = Callable[[Snapshot], None]


@attrs.frozen
class PersistResult:
    """What one call did, for the loop to log.

    `outcome`: "blocked" (the mutation gate, B10-B11, kept the store from being written; the
    revision stays pending and `error` is the gate's sentence), "committed" (everything
    pending is now in the canonical store), "shadowed"
    (the store failed; the shadow copy holds what is pending), "unsaved" (both failed; it is
    kept in memory and retried), "run-mismatch" (pending writes belong to another run and
    were not applied, B9/B12) or "nothing-pending" (a retry with nothing to do).
    """

    outcome: Outcome
    revision: int
    committed: tuple[int, ...]
    pending: tuple[int, ...]
    state: PersistenceState
    gate: TurnGate
    error: str = ""
    shadow_error: str = ""
    checkpoint: CheckpointWrite | None = None
    sync: SyncResult | None = None
    shadow_dropped: tuple[str, ...] = ()


@attrs.frozen
class ReplicaSync:
    """What one `Durability.sync_replicas` did: the checkpoint write (None when the core
    planned none) and the folded result of every step (B16)."""

    checkpoint: CheckpointWrite | None
    result: SyncResult


class Durability:
    """The persistence side of one run's daemon: the store, its checkpoint and shadow files,
    the persistence state the core reduces, and the revisions not yet committed.

    Build it with `Durability.open` after taking the run lock (C4): it sweeps the temp files
    a killed predecessor left, which is safe only while no other writer is alive. The shadow
    file is `self.shadow` (autodev_shell/durability/shadow_file.py).

    `cadence` is when the replicas follow the primary (the core's `SyncCadence`; None syncs
    them after every commit); `checkpoint_synced_at` is when the checkpoint on disk was
    written, if known (its `written_at`): a replica with no known sync time is synced at the
    first chance.
    """

    def __init__(
        self,
        store: RunStore,
        *,
        state: PersistenceState,
        pending: Sequence[PendingRevision] = (),
        checkpoint_file: Path,
        shadow_file: Path,
        checkpoint_revision: int | None = None,
        tiers: TierRoles = DEFAULT_TIERS,
        search: SearchRebuild | None = None,
        search_revision: int | None = None,
        foreign: Sequence[PendingRevision] = (),
        shadow_max_bytes: int = SHADOW_MAX_BYTES,
        highest_revision: int = 0,
        shadow_dropped: Sequence[str] = (),
        cadence: SyncCadence | None = DEFAULT_CADENCE,
        checkpoint_synced_at: datetime | None = None,
    ) -> None:
        self.store = store
        self.checkpoint_file = checkpoint_file
        self.tiers = tiers
        self._state = state
        self._pending: list[PendingRevision] = list(pending)
        self._checkpoint_revision = checkpoint_revision
        #: The checkpoint file as last read or written: what the next record is appended to
        #: (None: the next write is a whole snapshot, a compaction).
        self._checkpoint_tail: CheckpointTail | None = None
        self._search = search
        self._search_revision = search_revision
        self.cadence = cadence
        #: When each replica was last brought level (B14's "pending sync" ends there).
        self._synced_at: dict[str, datetime] = {}
        if checkpoint_synced_at is not None and checkpoint_revision is not None:
            self._synced_at[CHECKPOINT_REPLICA] = checkpoint_synced_at
        self.shadow = ShadowFile(shadow_file, max_bytes=shadow_max_bytes, foreign=foreign,
                                 dropped=shadow_dropped)
        self._highest = max([highest_revision, *(p.revision for p in self._pending)])
        self._committed = store.revision
        #: Turn inputs (B19) the store could not take when saved; committed with the next write.
        self._turn_inputs: list[InputRecord] = []
        #: B10: "shadow-restored" while revisions taken up from the shadow copy wait for the
        #: store; "loaded" (or "empty-confirmed" for a store that holds nothing) otherwise.
        self.load_state: LoadState = "shadow-restored" if self._pending else (
            "loaded" if self._committed > 0 else "empty-confirmed")

    @classmethod
    def open(
        cls,
        store: RunStore,
        identity: RunIdentity,
        *,
        tiers: TierRoles = DEFAULT_TIERS,
        search: SearchRebuild | None = None,
        checkpoint_file: Path | None = None,
        shadow_file: Path | None = None,
        shadow_max_bytes: int | None = None,
        cadence: SyncCadence | None = DEFAULT_CADENCE,
    ) -> Durability:
        """Resume from what is on disk: the persistence state last committed (its stale pending
        flag settled by the core, B8), and the shadow copy's revisions the store does not hold
        yet (nothing lost across a restart); they are committed with the next write. Shadow
        revisions queued for another run stay in the file, never applied here (B9)."""
        ckpt_file = checkpoint_file or checkpoint_path(store.path)
        shadow_file = shadow_file or shadow_path(store.path)
        for target in (ckpt_file, shadow_file):  # What a killed predecessor left half-written.
            sweep_temp_files(target)
        disk = read_on_disk(store, identity, shadow_file=shadow_file, tiers=tiers)
        try:
            loaded = load_checkpoint(ckpt_file)
        except ReplicaFileError:
            loaded = None  # Unreadable: a replica behind, which the next sync rewrites.
        ckpt = loaded.file if loaded is not None else None
        durability = cls(
            store, state=disk.state, pending=disk.pending, checkpoint_file=ckpt_file,
            shadow_file=shadow_file, checkpoint_revision=ckpt.revision if ckpt else None,
            tiers=tiers, search=search, foreign=disk.foreign,
            highest_revision=disk.highest_revision, shadow_dropped=disk.dropped,
            cadence=cadence, checkpoint_synced_at=ckpt.written_at if ckpt else None,
            **({} if shadow_max_bytes is None else {"shadow_max_bytes": shadow_max_bytes}),
        )
        if disk.pending:
            durability.shadow.revision = disk.pending[-1].revision
        durability._checkpoint_tail = loaded.tail if loaded is not None else None
        return durability

    # --- what the loop reads ---------------------------------------------------------------

    @property
    def state(self) -> PersistenceState:
        return self._state

    @property
    def shadow_file(self) -> Path:
        return self.shadow.file

    @property
    def shadow_max_bytes(self) -> int:
        return self.shadow.max_bytes

    @property
    def pending(self) -> tuple[int, ...]:
        """Revisions waiting for the canonical store, oldest first."""
        return tuple(p.revision for p in self._pending)

    @property
    def highest_revision(self) -> int:
        """The highest revision known anywhere: the store, its marker, the shadow copy (any
        run's entries) and what is pending. A daemon's next revision is above it (C3)."""
        return self._highest

    @property
    def committed_revision(self) -> int:
        """The newest revision the canonical store holds (B20's committed revision)."""
        return self._committed

    def roll_back(self, to_revision: int) -> tuple[int, ...]:
        """B20: discard what a failed attempt left uncommitted above `to_revision`.

        A pending revision that only records scheduler state is the attempt's own change and
        is superseded by the state the loop commits next: it is dropped, never written (the
        controls it would have marked taken are passed again with the next commit). One that
        carries posts holds acknowledged data (C3) and is kept. Returns the revisions dropped.
        """
        dropped = tuple(p.revision for p in self._pending
                        if p.revision > to_revision and not p.posts)
        if dropped:
            self._pending = [p for p in self._pending if p.revision not in dropped]
        return dropped

    @property
    def kept_for_other_runs(self) -> tuple[int, ...]:
        """Shadow revisions of other runs, kept in the file and never applied here (B9)."""
        return tuple(p.revision for p in self.shadow.foreign)

    def gate(self, identity: RunIdentity) -> TurnGate:
        """The core's turn gate (B9), given the marker and the shadow copy as facts. The state
        it returns (a stale pending flag cleared, B8) becomes the state carried on with."""
        marker = None
        try:
            stored = self.store.marker()
            marker = stored.as_core() if stored is not None else None
        except StoreError:
            marker = None  # An unreadable marker proves nothing; the gate decides without it.
        recovery = self.shadow.recovery(self._pending)
        result = turn_gate(self._state, identity, recovery=recovery, marker=marker,
                           tiers=self.tiers)
        self._state = result.state
        return result

    def mutation_context(self, identity: RunIdentity) -> MutationContext:
        """The facts of B10-B11 for a write now: the load state, the restore lock (a restore
        replacing the store, or one that died half-way), whether the canonical store holds
        everything (ready), and whether writes are blocked (B6)."""
        return MutationContext(
            identity, load_state=self.load_state,
            restore_lock=restore_in_progress(self.store.path),
            store_ready=not self._pending, writes_blocked=self._state.writes_blocked,
            initialised=True,
        )

    def block_reason(self, operation: str, identity: RunIdentity) -> str | None:
        """B11's sentence when `operation` may not write the store now, else None. Only a
        restore lock, no active run or an uninitialised state keep a write off the store:
        waiting for the canonical store (loading, shadow-restored, blocked) is ended by the
        retried write itself (B9), which B12 guards."""
        context = self.mutation_context(identity)
        if mutation_block_kind(context) not in _NO_WRITE:
            return None
        return mutation_block_reason(operation, context)

    def save_turn_input(self, record: InputRecord, *, identity: RunIdentity,
                        now: datetime) -> bool:
        """Persist a turn's input record (B19) now, or — when the store cannot take it — with
        the next revision's commit, in the same transaction. True when written now. The gate
        is asked with the operation's own `identity` (B2), never one remembered from an
        earlier write."""
        try:
            if self.block_reason("save a turn input", identity) is not None:
                raise StoreError("blocked by the mutation gate", path=self.store.path,
                                 kind="write-failed")
            self.store.save_turn_input(record, now=now)
        except StoreError:
            self._turn_inputs = [r for r in self._turn_inputs
                                 if r.parent_input_id != record.parent_input_id]
            self._turn_inputs.append(record)
            return False
        return True

    def audit(self) -> tuple[str, tuple[str, ...]]:
        """The core's replica audit (B14): status and the replicas pending sync."""
        audit = audit_replicas(self._primary_revision(), self._replicas())
        return audit.status, audit.pending

    @property
    def checkpoint_revision(self) -> int | None:
        """The revision the checkpoint on disk holds, as this daemon last wrote or read it."""
        return self._checkpoint_revision

    def sync_replicas(self, *, now: datetime, flush: bool = False) -> ReplicaSync:
        """Run the replica sync steps the core plans now (B14-B16): those the cadence says are
        due (a heartbeat between commits), or, with `flush`, every replica behind the primary
        (pause, stop, a clean exit). Each step on its own; a failed one stays behind and is
        tried again when next due."""
        checkpoint, result = self._sync_replicas(now, flush=flush)
        return ReplicaSync(checkpoint, result)

    # --- persisting ------------------------------------------------------------------------

    def persist_revision(
        self,
        revision: int,
        posts: Sequence[NewPost],
        scheduler_state_json: str,
        *,
        identity: RunIdentity,
        now: datetime,
        reason: str = "",
        immediate: bool = False,
        taken_controls: Sequence[int] = (),
    ) -> PersistResult:
        """Queue `revision` for `identity`'s run and write everything pending (see module doc).
        `identity` is resolved by the caller for this operation (B2). `taken_controls` are
        marked taken in the transaction that commits `revision` (nothing marks them when it is
        not committed now: the caller passes them again)."""
        if self._pending and revision <= self._pending[-1].revision:
            newest = self._pending[-1].revision
            raise ValueError(f"revision {revision} is not above the pending revision {newest}")
        owner = check_owner(identity, self.store.run_id)
        if owner in ("mismatch", "no-active-run"):
            error = RecoveryAborted(self.store.run_id, identity.run_id)
            return self._result("run-mismatch", revision, (), identity, error=str(error))
        self._pending.append(PendingRevision(revision, identity.run_id, tuple(posts),
                                             scheduler_state_json, now))
        self._highest = max(self._highest, revision)
        self._state = reduce_persistence(
            self._state, Queued(revision, identity.run_id, reason, immediate), tiers=self.tiers)
        return self._flush(revision, identity, now, taken_controls)

    def retry(self, *, identity: RunIdentity, now: datetime) -> PersistResult:
        """Write what is pending again (the gate said `pending-persist`, B9)."""
        if not self._pending:
            return self._result("nothing-pending", 0, (), identity)
        return self._flush(0, identity, now)

    def _flush(self, revision: int, identity: RunIdentity, now: datetime,
               taken_controls: Sequence[int] = ()) -> PersistResult:
        committed: list[int] = []
        error = ""
        while self._pending:
            head = self._pending[0]
            blocked = self.block_reason(f"commit revision {head.revision}", identity)
            if blocked is not None:  # B10-B11, before each write.
                self._accept(committed, all_done=False)
                return self._result("blocked", revision, tuple(committed), identity,
                                    error=blocked)
            if not recovery_still_active(head.run_id, identity):  # B12, before each write.
                error = str(RecoveryAborted(head.run_id, identity.run_id))
                self._accept(committed, all_done=False)
                return self._result("run-mismatch", revision, tuple(committed), identity,
                                    error=error)
            # A shadow copy keeps only each run's newest scheduler state (C3): an older revision
            # taken up from it carries the newest one, which the next commit writes anyway.
            state_json = head.scheduler_state_json or self._pending[-1].scheduler_state_json
            try:
                self.store.commit(
                    head.revision, head.posts, state_json,
                    persistence_state_json=to_json(self._state), now=now, run_id=head.run_id,
                    taken_controls=taken_controls if head.revision == revision else (),
                    turn_inputs=tuple(self._turn_inputs),
                )
            except StoreError as exc:
                error = str(exc)
                break
            committed.append(head.revision)
            self._committed = max(self._committed, head.revision)
            self._pending.pop(0)
            self._turn_inputs.clear()
        if not self._pending:
            self._accept(committed, all_done=True)
            self.load_state = "loaded"
            shadow_error = self.shadow.clear(active_run=identity.run_id, now=now)
            checkpoint, sync = self._sync_replicas(now)
            return self._result("committed", revision, tuple(committed), identity,
                                shadow_error=shadow_error, checkpoint=checkpoint, sync=sync)
        self._accept(committed, all_done=False)
        return self._shadow(revision, tuple(committed), identity, now, error)

    def _accept(self, committed: list[int], *, all_done: bool) -> None:
        if not committed:
            return
        self._state = reduce_persistence(
            self._state, Accepted(self.store.tier, committed[-1], clear_queued=all_done),
            tiers=self.tiers,
        )
        if not all_done:
            # B6/B7: the canonical accept cleared the pending flag, but later revisions are
            # still waiting; queue them again so the state says so.
            head = self._pending[-1]
            self._state = reduce_persistence(
                self._state, Queued(head.revision, head.run_id, "still pending"),
                tiers=self.tiers,
            )

    def _shadow(self, revision: int, committed: tuple[int, ...], identity: RunIdentity,
                now: datetime, error: str) -> PersistResult:
        newest = self._pending[-1]
        try:
            newly_dropped = self.shadow.write(self._pending, now=now, error=error)
        except OSError as exc:
            self._state = reduce_persistence(
                self._state, Queued(newest.revision, newest.run_id, reason=error),
                tiers=self.tiers)
            return self._result("unsaved", revision, committed, identity, error=error,
                                shadow_error=str(exc))
        self._state = reduce_persistence(
            self._state,
            Queued(newest.revision, newest.run_id, reason=error,
                   recoverable_tier=None if self.shadow.incomplete else SHADOW_TIER),
            tiers=self.tiers,
        )
        return self._result("shadowed", revision, committed, identity, error=error,
                            shadow_dropped=newly_dropped)

    # --- replicas (B14-B16) -----------------------------------------------------------------

    def _replicas(self) -> tuple[ReplicaState, ...]:
        replicas = [ReplicaState(CHECKPOINT_REPLICA, "backup", self._checkpoint_revision)]
        if self._search is not None:
            replicas.append(ReplicaState(SEARCH_REPLICA, "search", self._search_revision))
        return tuple(replicas)

    def _primary_revision(self) -> int | None:
        try:
            return self.store.revision
        except StoreError:
            return None

    def _sync_replicas(self, now: datetime, *, flush: bool = False,
                       ) -> tuple[CheckpointWrite | None, SyncResult]:
        plan: SyncPlan = plan_replica_sync(
            self._primary_revision(), self._replicas(), cadence=self.cadence, now=now,
            synced_at=self._synced_at, flush=flush)
        outcomes: list[SyncOutcome] = []
        checkpoint: CheckpointWrite | None = None
        for step in plan.steps:  # B16: each step on its own; one failing stops no other.
            if step.action == "write-checkpoint":
                checkpoint = write_checkpoint(self.store, self.checkpoint_file, now=now,
                                              tiers=self.tiers, tail=self._checkpoint_tail)
                if checkpoint.ok:
                    self._checkpoint_revision = checkpoint.revision
                    self._checkpoint_tail = checkpoint.tail
                    self._synced_at[step.replica] = now
                outcomes.append(SyncOutcome(step.replica, checkpoint.ok,
                                            checkpoint.failure or ""))
            elif step.action == "rebuild-search" and self._search is not None:
                try:
                    snapshot = self.store.snapshot()
                    self._search(snapshot)
                except Exception as exc:  # Any failure of the orchestrator's rebuild counts.
                    outcomes.append(SyncOutcome(step.replica, False, f"{type(exc).__name__}: "
                                                                    f"{exc}"))
                else:
                    self._search_revision = snapshot.revision
                    self._synced_at[step.replica] = now
                    outcomes.append(SyncOutcome(step.replica, True))
        return checkpoint, combine_sync_results(plan, outcomes)

    # --- results ---------------------------------------------------------------------------

    def _result(self, outcome: Outcome, revision: int, committed: tuple[int, ...],
                identity: RunIdentity, *, error: str = "", shadow_error: str = "",
                checkpoint: CheckpointWrite | None = None,
                sync: SyncResult | None = None,
                shadow_dropped: tuple[str, ...] = ()) -> PersistResult:
        gate = self.gate(identity)
        return PersistResult(outcome, revision, committed, self.pending, self._state, gate,
                             error, shadow_error, checkpoint, sync, shadow_dropped)
