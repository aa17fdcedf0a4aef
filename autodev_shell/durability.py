"""Persisting a revision, as the daemon loop calls it (SPEC B4-B9, B12-B16, C3).

`Durability.persist_revision` carries out what the core decides, in this order:

1. report `Queued(revision, run)` to `reduce_persistence` (B6);
2. commit every pending revision to the canonical store, one transaction each, oldest first,
   re-checking before each write that the run it was queued for is still active (B12);
3. on success report `Accepted(<store tier>, revision)` (B7), remove the shadow copy, and run
   the replica sync steps the core plans (checkpoint, optional search rebuild), each on its
   own so one failing does not stop the others (B15, B16);
4. on failure write the shadow copy of what is still pending and report
   `Queued(..., recoverable_tier="shadow")` (B6), or plain `Queued` when even the shadow
   failed; the pending revisions are retried on the next call (or `retry`);
5. ask the core's turn gate (B9) whether the next turn may start, passing the facts: the
   commit marker and the shadow copy, if any.

The module decides nothing: every "may", "clear" and "refuse" above is a core function.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Final, Literal

import attrs

from autodev_core.identity import RunIdentity, check_owner
from autodev_core.mutation import RecoveryAborted, recovery_still_active
from autodev_core.persistence import (
    DEFAULT_TIERS,
    Accepted,
    PersistenceState,
    Queued,
    RecoveryCopy,
    TierRoles,
    TurnGate,
    reduce_persistence,
    settle_stale_pending,
    turn_gate,
)
from autodev_core.replicas import (
    ReplicaState,
    SyncOutcome,
    SyncPlan,
    SyncResult,
    audit_replicas,
    combine_sync_results,
    plan_replica_sync,
)
from autodev_core.serialization import from_json, to_json

from .checkpoint import (
    CheckpointWrite,
    PendingRevision,
    ReplicaFileError,
    ShadowCopy,
    checkpoint_path,
    read_checkpoint,
    read_shadow,
    remove_shadow,
    shadow_path,
    sweep_temp_files,
    write_checkpoint,
    write_shadow,
)
from .store import NewPost, RunStore, Snapshot, StoreError

#: The recovery-only tier the shadow copy reports as (B5 default table).
SHADOW_TIER: Final = "shadow"
#: Replica names as the core's sync plan and audit see them (B13).
CHECKPOINT_REPLICA: Final = "checkpoint"
SEARCH_REPLICA: Final = "search"

Outcome = Literal["committed", "shadowed", "unsaved", "run-mismatch", "nothing-pending"]

#: Rebuilds the optional search replica from the canonical snapshot; raises on failure.
SearchRebuild = Callable[[Snapshot], None]


@attrs.frozen
class PersistResult:
    """What one call did, for the loop to log.

    `outcome`: "committed" (everything pending is now in the canonical store), "shadowed"
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


class Durability:
    """The persistence side of one run's daemon: the store, its checkpoint and shadow files,
    the persistence state the core reduces, and the revisions not yet committed.

    Build it with `Durability.open` after taking the run lock (C4): it sweeps the temp files
    a killed predecessor left, which is safe only while no other writer is alive.
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
    ) -> None:
        self.store = store
        self.checkpoint_file = checkpoint_file
        self.shadow_file = shadow_file
        self.tiers = tiers
        self._state = state
        self._pending: list[PendingRevision] = list(pending)
        self._shadow_revision = 0
        self._checkpoint_revision = checkpoint_revision
        self._search = search
        self._search_revision = search_revision

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
    ) -> Durability:
        """Resume from what is on disk: the persistence state last committed (its stale pending
        flag settled by the core, B8), and the shadow copy's revisions the store does not hold
        yet (nothing lost across a restart). Shadow revisions queued for another run are left
        in the file, never applied here (B9)."""
        ckpt_file = checkpoint_file or checkpoint_path(store.path)
        shadow_file = shadow_file or shadow_path(store.path)
        for target in (ckpt_file, shadow_file):  # What a killed predecessor left half-written.
            sweep_temp_files(target)
        snapshot = store.snapshot()
        # The state was committed queued, before its own Accepted (B6): the marker committed
        # beside it lets the core's B8 planner clear that stale flag for this run.
        marker = snapshot.marker.as_core() if snapshot.marker is not None else None
        state = settle_stale_pending(
            _load_state(snapshot.persistence_state_json), identity, marker=marker, tiers=tiers,
        ).state
        try:
            ckpt = read_checkpoint(ckpt_file)
        except ReplicaFileError:
            ckpt = None  # An unreadable checkpoint is a replica behind: the next sync rewrites it.
        shadow = read_shadow(shadow_file)
        pending: tuple[PendingRevision, ...] = ()
        if shadow is not None:
            pending = tuple(
                p for p in shadow.pending
                if p.revision > snapshot.revision and recovery_still_active(p.run_id, identity)
            )
        durability = cls(
            store, state=state, pending=pending, checkpoint_file=ckpt_file,
            shadow_file=shadow_file, checkpoint_revision=ckpt.revision if ckpt else None,
            tiers=tiers, search=search,
        )
        if pending:
            durability._shadow_revision = max(p.revision for p in pending)
            durability._state = reduce_persistence(
                state,
                Queued(durability._shadow_revision, pending[-1].run_id,
                       reason="restored from the shadow copy", recoverable_tier=SHADOW_TIER),
                tiers=tiers,
            )
        return durability

    # --- what the loop reads ---------------------------------------------------------------

    @property
    def state(self) -> PersistenceState:
        return self._state

    @property
    def pending(self) -> tuple[int, ...]:
        """Revisions waiting for the canonical store, oldest first."""
        return tuple(p.revision for p in self._pending)

    def gate(self, identity: RunIdentity) -> TurnGate:
        """The core's turn gate (B9), given the marker and the shadow copy as facts. The state
        it returns (a stale pending flag cleared, B8) becomes the state carried on with."""
        marker = None
        try:
            stored = self.store.marker()
            marker = stored.as_core() if stored is not None else None
        except StoreError:
            marker = None  # An unreadable marker proves nothing; the gate decides without it.
        recovery = None
        if self._shadow_revision > 0 and self._pending:
            recovery = RecoveryCopy(self._pending[-1].run_id, self._shadow_revision, SHADOW_TIER)
        result = turn_gate(self._state, identity, recovery=recovery, marker=marker,
                           tiers=self.tiers)
        self._state = result.state
        return result

    def audit(self) -> tuple[str, tuple[str, ...]]:
        """The core's replica audit (B14): status and the replicas pending sync."""
        audit = audit_replicas(self._primary_revision(), self._replicas())
        return audit.status, audit.pending

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
            if not recovery_still_active(head.run_id, identity):  # B12, before each write.
                error = str(RecoveryAborted(head.run_id, identity.run_id))
                self._accept(committed, all_done=False)
                return self._result("run-mismatch", revision, tuple(committed), identity,
                                    error=error)
            try:
                self.store.commit(
                    head.revision, head.posts, head.scheduler_state_json,
                    persistence_state_json=to_json(self._state), now=now, run_id=head.run_id,
                    taken_controls=taken_controls if head.revision == revision else (),
                )
            except StoreError as exc:
                error = str(exc)
                break
            committed.append(head.revision)
            self._pending.pop(0)
        if not self._pending:
            self._accept(committed, all_done=True)
            self._shadow_revision = 0
            shadow_error = ""
            try:
                remove_shadow(self.shadow_file)
            except OSError as exc:  # A stale shadow is harmless: Durability.open skips it.
                shadow_error = str(exc)
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
            write_shadow(self.shadow_file, ShadowCopy(now, tuple(self._pending), error))
        except OSError as exc:
            self._shadow_revision = 0
            self._state = reduce_persistence(
                self._state, Queued(newest.revision, newest.run_id, reason=error),
                tiers=self.tiers)
            return self._result("unsaved", revision, committed, identity, error=error,
                                shadow_error=str(exc))
        self._shadow_revision = newest.revision
        self._state = reduce_persistence(
            self._state,
            Queued(newest.revision, newest.run_id, reason=error, recoverable_tier=SHADOW_TIER),
            tiers=self.tiers,
        )
        return self._result("shadowed", revision, committed, identity, error=error)

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

    def _sync_replicas(self, now: datetime) -> tuple[CheckpointWrite | None, SyncResult]:
        plan: SyncPlan = plan_replica_sync(self._primary_revision(), self._replicas())
        outcomes: list[SyncOutcome] = []
        checkpoint: CheckpointWrite | None = None
        for step in plan.steps:  # B16: each step on its own; one failing stops no other.
            if step.action == "write-checkpoint":
                checkpoint = write_checkpoint(self.store, self.checkpoint_file, now=now,
                                              tiers=self.tiers)
                if checkpoint.ok:
                    self._checkpoint_revision = checkpoint.revision
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
                    outcomes.append(SyncOutcome(step.replica, True))
        return checkpoint, combine_sync_results(plan, outcomes)

    # --- results ---------------------------------------------------------------------------

    def _result(self, outcome: Outcome, revision: int, committed: tuple[int, ...],
                identity: RunIdentity, *, error: str = "", shadow_error: str = "",
                checkpoint: CheckpointWrite | None = None,
                sync: SyncResult | None = None) -> PersistResult:
        gate = self.gate(identity)
        return PersistResult(outcome, revision, committed, self.pending, self._state, gate,
                             error, shadow_error, checkpoint, sync)


def _load_state(text: str) -> PersistenceState:
    """The persistence state committed with the last revision; a fresh store holds `{}`."""
    state: PersistenceState = from_json(text or "{}", PersistenceState)
    return state
