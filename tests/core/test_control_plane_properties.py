"""Hypothesis properties of the run-state control plane (SPEC B1-B20, 0.3, 0.4)."""

from __future__ import annotations

from typing import Any

import attrs
from hypothesis import given
from hypothesis import strategies as st

from autodev_core.control.identity import RecoveryHint, RunIdentity, ids_equivalent
from autodev_core.control.mutation import LOAD_STATES, MutationContext, mutation_block_reason
from autodev_core.control.persistence import (
    DEFAULT_TIERS,
    Accepted,
    CommitMarker,
    PersistenceEvent,
    PersistenceState,
    Queued,
    RecoveryCopy,
    StalePendingPlan,
    TierRoles,
    TurnGate,
    plan_stale_pending_clear,
    reduce_persistence,
    settle_stale_pending,
    tier_role,
    turn_gate,
)
from autodev_core.control.replicas import (
    CheckpointPlan,
    PrimaryExport,
    ReplicaAudit,
    ReplicaState,
    SyncOutcome,
    SyncPlan,
    SyncResult,
    audit_replicas,
    combine_sync_results,
    plan_checkpoint,
    plan_checkpoint_restore,
    plan_replica_sync,
)
from autodev_core.control.turn_input import InputRecord, TurnInputPlan, TurnStart, plan_turn_input
from autodev_core.serialization import from_json, from_yaml, to_json, to_yaml

# --- strategies: the shipped harness's (SPEC 0.4) ---------------------------------------------
from autodev_core.testing.persistence_machine import (
    REVISIONS,
    RUN_IDS,
    TIER_NAMES,
    PersistenceMachine,
    identities,
    markers,
    queued_events,
    recoveries,
)
from autodev_core.testing.persistence_machine import persistence_events as events
from autodev_core.testing.persistence_machine import persistence_states as states

NON_CANONICAL = TIER_NAMES.filter(lambda t: tier_role(t) != "canonical")


def run(events_: list[Queued | Accepted], state: PersistenceState | None = None,
        tiers: TierRoles = DEFAULT_TIERS) -> PersistenceState:
    state = state or PersistenceState()
    for event in events_:
        state = reduce_persistence(state, event, tiers=tiers)
    return state


# --- persistence properties -------------------------------------------------------------------


@given(states, st.lists(events, max_size=12), identities, markers, st.integers(-1, 12))
def test_B7_B8_last_accepted_revision_never_decreases_on_any_path(
    state: PersistenceState, seq: list[Queued | Accepted], identity: RunIdentity,
    marker: CommitMarker | None, batch: int,
) -> None:
    for event in seq:
        before = state.last_accepted_revision
        state = reduce_persistence(state, event)
        assert state.last_accepted_revision >= before
        before = state.last_accepted_revision
        state = settle_stale_pending(state, identity, marker=marker, batch_revision=batch).state
        assert state.last_accepted_revision >= before
        before = state.last_accepted_revision
        state = turn_gate(state, identity, marker=marker, batch_revision=batch).state
        assert state.last_accepted_revision >= before


@given(states, NON_CANONICAL, REVISIONS, st.booleans(), st.booleans())
def test_B7_non_canonical_tier_never_clears_pending(
    state: PersistenceState, tier: str, revision: int, accepted: bool, clear: bool
) -> None:
    after = reduce_persistence(state, Accepted(tier, revision, accepted, clear))
    assert after == state
    assert after.pending_persist == state.pending_persist


@given(st.lists(events, max_size=12), queued_events)
def test_B6_queued_revision_never_decreases_while_queued(
    seq: list[Queued | Accepted], last: Queued
) -> None:
    state = run(seq)
    after = reduce_persistence(state, last)
    assert after.pending_persist
    if state.pending_persist:
        assert after.queued_revision >= state.queued_revision


@given(st.lists(events, max_size=12), identities, st.integers(0, 3), st.booleans(), TIER_NAMES)
def test_B8_B9_canonical_acceptance_covering_the_queue_opens_the_gate(
    seq: list[Queued | Accepted], identity: RunIdentity, extra: int, clear: bool, spelling: str,
) -> None:
    state = run(seq)
    canonical = "sqlite" if tier_role(spelling) != "canonical" else spelling
    covering = max([e.revision for e in seq if isinstance(e, Queued)] + [0]) + extra
    after = reduce_persistence(state, Accepted(canonical, covering, clear_queued=clear))
    assert not after.pending_persist
    assert after.last_accepted_revision >= covering
    gate = turn_gate(after, identity)
    assert gate.may_start and gate.reason == "confirmed"


@given(st.lists(events, max_size=8), st.integers(1, 12), markers, recoveries,
       st.integers(-1, 12), TIER_NAMES)
def test_B9_a_write_queued_for_run_A_never_opens_the_gate_for_run_B(
    seq: list[Queued | Accepted], revision: int, marker: CommitMarker | None,
    recovery: RecoveryCopy | None, batch: int, batch_tier: str,
) -> None:
    state = reduce_persistence(run(seq), Queued(revision, "run-A"))
    run_b = RunIdentity(run_id="run-B", aliases=frozenset({"b1"}))
    gate = turn_gate(state, run_b, marker=marker, recovery=recovery, batch_revision=batch,
                     batch_tier=batch_tier)
    assert not gate.may_start
    assert gate.reason == "queued-run-mismatch"
    assert gate.state == state
    assert gate.state.pending_persist and gate.state.queued_run_id == "run-A"


@given(states, identities, markers, st.integers(-1, 12), TIER_NAMES)
def test_B8_planner_clears_exactly_when_the_invariant_holds(
    state: PersistenceState, identity: RunIdentity, marker: CommitMarker | None,
    batch: int, batch_tier: str,
) -> None:
    plan = plan_stale_pending_clear(state, identity, marker=marker, batch_revision=batch,
                                    batch_tier=batch_tier)
    # B8 as tightened, stated here on its own (default table: only "sqlite" is canonical).
    def canonical(tier: str) -> bool:
        return tier.strip().lower() == "sqlite"

    target = max(batch, state.queued_revision, 0)
    records = []
    if ids_equivalent(state.accepted_run_id, state.queued_run_id, identity):
        records.append((max(state.last_accepted_revision, 0), state.accepted_tier))
    if (marker and marker.accepted and canonical(marker.tier)
            and ids_equivalent(marker.run_id, state.queued_run_id, identity)):
        records.append((max(marker.revision, 0), marker.tier))
    covering = max((r for r, _t in records), default=0)
    # The covering record's tier; on a tie the marker (canonical by construction) wins.
    tiers_at = [t for r, t in records if r == covering]
    expected = (
        state.pending_persist
        and target > 0
        and bool(identity.run_id.strip()) and bool(state.queued_run_id.strip())
        and ids_equivalent(identity.run_id, state.queued_run_id, identity)
        and covering >= target
        and canonical(tiers_at[-1])
    )
    assert plan.clears == expected
    if not plan.clears:
        assert settle_stale_pending(state, identity, marker=marker, batch_revision=batch,
                                    batch_tier=batch_tier).state == state


# --- identity ---------------------------------------------------------------------------------


@given(RUN_IDS | st.text(max_size=4), RUN_IDS | st.text(max_size=4), identities)
def test_B3_equivalence_is_reflexive_and_symmetric(a: str, b: str, identity: RunIdentity) -> None:
    assert ids_equivalent(a, a, identity)
    assert ids_equivalent(a, b, identity) == ids_equivalent(b, a, identity)
    if (a.strip() == "") != (b.strip() == ""):
        assert not ids_equivalent(a, b, identity)


# --- replicas ----------------------------------------------------------------------------------

replica_states = st.builds(
    ReplicaState, name=st.sampled_from(["checkpoint", "search", "mirror"]),
    role=st.sampled_from(["backup", "search"]), revision=st.none() | st.integers(-1, 20),
)
unique_replicas = st.lists(replica_states, max_size=3, unique_by=lambda r: r.name)


@given(st.integers(1, 30), unique_replicas)
def test_B14_no_drift_when_the_primary_is_ahead(primary: int, replicas: list[ReplicaState]) -> None:
    behind = [attrs.evolve(r, revision=min(r.revision or 0, primary - 1)) for r in replicas]
    audit = audit_replicas(primary, behind)
    assert not audit.drift
    assert audit.status in ("pending-sync", "in-sync")
    assert set(audit.pending) == {r.name for r in behind}


@given(st.none() | st.integers(-1, 20), unique_replicas)
def test_B14_drift_iff_a_replica_is_ahead_or_the_primary_is_missing(
    primary: int | None, replicas: list[ReplicaState]
) -> None:
    audit = audit_replicas(primary, replicas)
    p = primary if primary and primary > 0 else None
    ahead = any(r.revision is not None and (p is None or r.revision > p) for r in replicas)
    assert audit.drift == ahead


@given(TIER_NAMES, st.none() | st.builds(PrimaryExport, st.integers(-2, 9), st.booleans()),
       st.integers(-1, 9))
def test_B15_canonical_primary_never_checkpoints_in_memory_state(
    tier: str, export: PrimaryExport | None, memory: int
) -> None:
    plan = plan_checkpoint(tier, export, in_memory_revision=memory)
    if tier_role(tier) == "canonical":
        assert plan.source != "in-memory"
        if plan.ok:
            assert export is not None and plan.revision == export.revision > 0
        else:
            assert plan.failure == "primary-checkpoint-source-empty"


@given(st.integers(1, 20), unique_replicas, st.data())
def test_B16_every_step_is_reported_and_failures_are_independent(
    primary: int, replicas: list[ReplicaState], data: st.DataObject
) -> None:
    plan = plan_replica_sync(primary, replicas, repair=True)
    oks = [data.draw(st.booleans()) for _ in plan.steps]
    result = combine_sync_results(
        plan, [SyncOutcome(s.replica, ok, "" if ok else "boom") for s, ok in zip(plan.steps, oks,
                                                                               strict=True)]
    )
    assert len(result.succeeded) + len(result.failed) == len(plan.steps)
    assert result.succeeded == tuple(s.replica for s, ok in zip(plan.steps, oks, strict=True)
                                     if ok)


@given(st.none() | st.integers(-1, 20), st.none() | st.integers(-1, 20))
def test_B14_restore_never_overwrites_a_newer_primary(
    primary: int | None, checkpoint: int | None
) -> None:
    decision = plan_checkpoint_restore(primary, checkpoint)
    if decision.allowed:
        assert checkpoint is not None and checkpoint > 0
        assert primary is None or primary < checkpoint


# --- mutation gate and retried turns ------------------------------------------------------------

mutation_contexts = st.builds(
    MutationContext, identities, st.sampled_from(LOAD_STATES), st.booleans(), st.booleans(),
    st.booleans(), st.booleans(),
)


@given(mutation_contexts, st.sampled_from(["append to the thread", "restore the run"]))
def test_B10_B11_writing_allowed_exactly_when_nothing_blocks(
    context: MutationContext, operation: str
) -> None:
    reason = mutation_block_reason(operation, context)
    settled = context.load_state in ("loaded", "empty-confirmed") or (
        context.store_ready and context.load_state in ("loading", "shadow-restored")
    )
    allowed = (
        not context.restore_lock and context.identity.is_active and settled
        and not context.writes_blocked and context.initialised
    )
    assert (reason is None) == allowed
    if reason is not None:
        assert reason.startswith(f"Cannot {operation}: ") and reason.endswith(".")


retried_turns = st.builds(
    TurnStart, turn_type=st.sampled_from(["normal", "retry", "failover", "continue", "swipe"]),
    parent_input_id=st.sampled_from(["m1", "m2"]), parent_text=st.sampled_from(["a", "b"]),
    committed_revision=st.integers(0, 5), working_revision=st.integers(0, 5),
)
matching_records = st.none() | st.builds(
    InputRecord, st.sampled_from(["m1", "m2"]), st.sampled_from(["a", "b"]), st.text(max_size=3)
)


@given(retried_turns, matching_records)
def test_B19_B20_reapply_only_the_matching_record_and_always_roll_back(
    turn: TurnStart, record: InputRecord | None
) -> None:
    plan = plan_turn_input(turn, record)
    matches = (
        record is not None and record.parent_input_id == turn.parent_input_id
        and record.bound_text == turn.parent_text
    )
    assert (plan.action == "reapply") == (plan.kind == "no-new-input" and matches)
    if plan.action == "reapply":
        assert record is not None and plan.context == record.context
    assert plan.rollback.required == (turn.working_revision > turn.committed_revision)
    assert plan.rollback.to_revision == turn.committed_revision


# --- 0.3: every value round-trips -------------------------------------------------------------

turn_starts = st.builds(
    TurnStart, turn_type=st.sampled_from(["normal", "retry", "swipe"]),
    parent_input_id=st.sampled_from(["m1", "m2"]), parent_text=st.text(max_size=6),
    committed_revision=st.integers(0, 5), working_revision=st.integers(0, 5),
)
input_records = st.builds(InputRecord, st.sampled_from(["m1", "m2"]), st.text(max_size=6),
                          st.text(max_size=6))
values: st.SearchStrategy[tuple[Any, Any]] = st.one_of(
    states.map(lambda v: (v, PersistenceState)),
    events.map(lambda v: (v, PersistenceEvent)),
    identities.map(lambda v: (v, RunIdentity)),
    st.builds(RecoveryHint, st.sampled_from(["owner", "queued", "marker"]), RUN_IDS).map(
        lambda v: (v, RecoveryHint)),
    st.builds(plan_stale_pending_clear, states, identities).map(lambda v: (v, StalePendingPlan)),
    st.builds(turn_gate, states, identities, recovery=recoveries, marker=markers).map(
        lambda v: (v, TurnGate)),
    mutation_contexts.map(lambda v: (v, MutationContext)),
    st.builds(audit_replicas, st.none() | st.integers(-1, 9), unique_replicas).map(
        lambda v: (v, ReplicaAudit)),
    st.builds(plan_replica_sync, st.none() | st.integers(-1, 9), unique_replicas,
              repair=st.booleans()).map(lambda v: (v, SyncPlan)),
    st.builds(lambda p: combine_sync_results(p, ()), st.builds(
        plan_replica_sync, st.integers(1, 9), unique_replicas)).map(lambda v: (v, SyncResult)),
    st.builds(plan_checkpoint, TIER_NAMES, st.none() | st.builds(PrimaryExport, st.integers(-1, 9),
              st.booleans())).map(lambda v: (v, CheckpointPlan)),
    st.builds(plan_turn_input, turn_starts, st.none() | input_records).map(
        lambda v: (v, TurnInputPlan)),
    st.just((DEFAULT_TIERS, TierRoles)),
)


@given(values)
def test_0_3_every_control_plane_value_round_trips(pair: tuple[Any, Any]) -> None:
    value, cls = pair
    text = to_json(value, as_type=cls) if cls is PersistenceEvent else to_json(value)
    assert from_json(text, cls) == value
    yaml_text = to_yaml(value, as_type=cls) if cls is PersistenceEvent else to_yaml(value)
    assert from_yaml(yaml_text, cls) == value


# --- 0.4: the shipped persistence machine, against the default tiers and another table ---------


TestPersistenceMachine = PersistenceMachine.TestCase


class OtherTiers(PersistenceMachine):
    """The same machine on an orchestrator's own table (B5: the role table is configurable)."""

    tiers = TierRoles(
        canonical=frozenset({"postgres"}), recovery_only=frozenset({"wal", "shadow"}),
        replica_only=frozenset({"search"}),
    )


TestOtherTiers = OtherTiers.TestCase
