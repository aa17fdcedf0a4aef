"""SPEC B4, B7, B8: confirmation that cannot lie."""

from __future__ import annotations

import pytest

import autodev_core
from autodev_core import (
    Accepted,
    BoundTiers,
    CommitMarker,
    PersistenceState,
    Queued,
    RecoveryCopy,
    TierRoles,
    UnknownTierError,
    reduce_persistence,
    turn_gate,
)
from autodev_core.control.identity import resolve_active_identity
from autodev_core.control.persistence import plan_stale_pending_clear, settle_stale_pending

A = resolve_active_identity(run_id="A")
B = resolve_active_identity(run_id="B")


def run(*events: Queued | Accepted, state: PersistenceState | None = None) -> PersistenceState:
    state = state or PersistenceState()
    for event in events:
        state = reduce_persistence(state, event)
    return state


# --- item 1: an acceptance covers only what was queued up to it (B7) ----------------------------


def test_B7_an_acceptance_of_an_older_revision_leaves_the_newer_write_pending() -> None:
    state = run(Queued(1, "A"), Queued(2, "A"), Accepted("sqlite", 1))
    assert state.last_accepted_revision == 1
    assert state.pending_persist and state.writes_blocked
    assert (state.queued_revision, state.queued_run_id) == (2, "A")
    gate = turn_gate(state, A)
    assert (gate.may_start, gate.reason) == (False, "pending-persist")
    assert run(Accepted("sqlite", 2), state=state).pending_persist is False


def test_B7_a_late_acknowledgement_takes_the_max_but_confirms_nothing_newer() -> None:
    state = run(Queued(4, "A"), Accepted("sqlite", 4), Queued(6, "A", recoverable_tier="shadow"))
    late = run(Accepted("sqlite", 3), state=state)
    assert late.last_accepted_revision == 4, "never decreases"
    assert late.pending_persist and late.queued_revision == 6
    assert late.last_recoverable_tier == "shadow", "the newer write's recovery copy still holds"
    assert turn_gate(late, A).reason == "pending-persist"


# --- item 2: accepted revisions carry their run (B4, B7, B8) -----------------------------------


def test_B7_accepted_run_id_is_the_queued_run_else_the_events() -> None:
    assert run(Queued(5, "A"), Accepted("sqlite", 5)).accepted_run_id == "A"
    assert run(Accepted("sqlite", 5, run_id=" C ")).accepted_run_id == "C"
    # An ack naming another run than the queued one stored that run's write (issue 28 item 2:
    # it no longer counts as the queued run's, which let it clear the queued write, B8).
    assert run(Queued(5, "A"), Accepted("sqlite", 5, run_id="C")).accepted_run_id == "C"
    assert run(Queued(5, "A"), Accepted("sqlite", 5, run_id=" A ")).accepted_run_id == "A"
    assert run(Queued(5, "A"), Accepted("search", 5, run_id="C")).accepted_run_id == ""


@pytest.mark.parametrize("replayed", [Accepted("sqlite", 5), Accepted("sqlite", 3),
                                      Accepted("sqlite", 5, run_id="C"), Accepted("sqlite", 0)])
def test_B7_a_replayed_ack_never_changes_whose_revision_was_accepted(replayed: Accepted) -> None:
    """Issue 28 item 1: a duplicate or late ack used to set `accepted_run_id` to "" (or to its
    own run), so revision 5, confirmed for run A, no longer counted for A's next write."""
    confirmed = run(Queued(5, "A"), Accepted("sqlite", 5))
    again = run(replayed, state=confirmed)
    assert (again.last_accepted_revision, again.accepted_tier, again.accepted_run_id) == (
        5, "sqlite", "A")
    gate = turn_gate(run(Queued(5, "A", recoverable_tier="shadow"), state=again), A)
    assert (gate.may_start, gate.reason) == (True, "stale-pending-cleared"), gate


def test_B7_an_ack_that_knows_no_run_keeps_the_run_it_had() -> None:
    """No acknowledgement makes the accepted run an empty one, even one that raises the
    revision while nothing is queued (the run of the revisions before it stays named)."""
    state = run(Queued(5, "A"), Accepted("sqlite", 5), Accepted("sqlite", 7))
    assert (state.last_accepted_revision, state.accepted_run_id) == (7, "A")
    assert run(Accepted("sqlite", 2)).accepted_run_id == "", "no run was ever known"


def test_B8_an_acceptance_naming_run_A_never_clears_run_Bs_queued_write() -> None:
    """Issue 28 item 2: `Accepted` takes the run its revision belongs to (an optional
    `run_id`, beyond SPEC D's signature); one naming A while B's write is queued confirms
    nothing of B's, whatever its revision, and the gate keeps B's turn waiting."""
    state = run(Queued(5, "B"), Accepted("sqlite", 9, run_id="A"))
    assert state.pending_persist and state.writes_blocked
    assert (state.queued_revision, state.queued_run_id) == (5, "B")
    assert (state.last_accepted_revision, state.accepted_run_id) == (9, "A")
    gate = turn_gate(state, B)
    assert (gate.may_start, gate.reason, gate.code) == (
        False, "pending-persist", "accepted-revision-behind")
    confirmed = run(Accepted("sqlite", 9, run_id="B"), state=state)
    assert not confirmed.pending_persist, "B's own ack (or one naming no run) confirms it"
    assert not run(Accepted("sqlite", 9), state=state).pending_persist


def test_B8_an_acceptance_of_another_run_never_clears_a_pending_write() -> None:
    state = run(Queued(5, "A"), Accepted("sqlite", 5), Queued(3, "B"))
    gate = turn_gate(state, B)
    assert (gate.may_start, gate.reason) == (False, "pending-persist")
    assert gate.code == "accepted-revision-behind"
    assert "revision 5 was confirmed for run 'A', which does not count" in gate.detail
    assert settle_stale_pending(state, B).state == state


# --- item 3: a marker counts only from a canonical tier (B8) -----------------------------------


def test_B8_a_marker_from_a_non_canonical_tier_never_counts() -> None:
    state = run(Queued(1, "A"), Accepted("sqlite", 1), Queued(5, "A"))
    for tier in ("search", "shadow", "checkpoint", "none", "sqlte"):
        gate = turn_gate(state, A, marker=CommitMarker("A", 5, tier))
        assert (gate.may_start, gate.reason) == (False, "pending-persist"), tier
        assert gate.state == state
    assert turn_gate(state, A, marker=CommitMarker("A", 5, " SQLite ")).reason == (
        "stale-pending-cleared"
    )


def test_B8_the_tier_checked_is_the_tier_of_the_record_that_covers() -> None:
    # A stored state whose acceptance came from a tier that is not canonical under this table.
    stored = PersistenceState(pending_persist=True, last_accepted_revision=7,
                              accepted_tier="checkpoint", accepted_run_id="A",
                              queued_revision=5, queued_run_id="A")
    plan = plan_stale_pending_clear(stored, A, marker=CommitMarker("A", 5, "sqlite"))
    assert (plan.reason, plan.accepted_revision, plan.tier) == (
        "accepted-tier-not-canonical", 7, "checkpoint")
    plan = plan_stale_pending_clear(stored, A, marker=CommitMarker("A", 7, "sqlite"))
    assert (plan.clears, plan.tier) == (True, "sqlite")
    cleared = settle_stale_pending(stored, A, marker=CommitMarker("A", 7, "sqlite")).state
    assert (cleared.accepted_tier, cleared.accepted_run_id) == ("sqlite", "A")


# --- item 4: a bound tier table (B4) ----------------------------------------------------------


TIERS = TierRoles(canonical={"postgres"}, recovery_only={"wal"}, replica_only={"search"})


def test_B4_the_bound_table_reduces_plans_and_gates_like_the_bare_functions() -> None:
    bound = TIERS.bind()
    assert isinstance(bound, BoundTiers) and bound == BoundTiers(TIERS)
    state = bound.reduce(PersistenceState(), Queued(3, "A", recoverable_tier="WAL"))
    assert state == reduce_persistence(PersistenceState(), Queued(3, "A", recoverable_tier="wal"),
                                       tiers=TIERS)
    assert bound.gate(state, A, recovery=RecoveryCopy("A", 3, "wal")).reason == "recovery-copy"
    marker = CommitMarker("A", 3, "postgres")
    assert bound.plan(state, A, marker=marker).clears
    assert bound.settle(state, A, marker=marker).state.accepted_tier == "postgres"
    assert not bound.reduce(state, Accepted("postgres", 3)).pending_persist
    assert bound.role(" Postgres ") == "canonical"


@pytest.mark.parametrize("call", ["accepted", "queued", "marker", "recovery", "role"])
def test_B4_the_bound_table_refuses_an_unknown_tier_naming_the_known_ones(call: str) -> None:
    bound = TIERS.bind()
    state = reduce_persistence(PersistenceState(), Queued(3, "A"))
    with pytest.raises(UnknownTierError) as caught:
        if call == "accepted":
            bound.reduce(state, Accepted("sqlite", 3))
        elif call == "queued":
            bound.reduce(state, Queued(4, "A", recoverable_tier="shadow"))
        elif call == "marker":
            bound.gate(state, A, marker=CommitMarker("A", 3, "postgress"))
        elif call == "recovery":
            bound.gate(state, A, recovery=RecoveryCopy("A", 3, "wall"))
        else:
            bound.role("none")
    assert "the known tiers are postgres, search, wal" in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_B5_B7_the_bare_reducer_still_ignores_an_unknown_tier() -> None:
    state = reduce_persistence(PersistenceState(), Queued(3, "A"))
    assert reduce_persistence(state, Accepted("sqlte", 3)) is state


def test_B4_B9_a_deferred_gate_says_why_in_words_a_user_can_act_on() -> None:
    # A mistyped tier with the bare reducer: the acknowledgement was a no-op (B7).
    state = run(Queued(5, "A"), Accepted("sqlte", 5))
    gate = turn_gate(state, A)
    assert gate.code == "accepted-revision-behind"
    assert gate.detail == (
        "revision 5 of run 'A' is waiting for a canonical tier (sqlite) to confirm it; the "
        "newest revision confirmed for this run is 0; retry the write, and check that its "
        "acknowledgement names a canonical tier"
    )
    refused = turn_gate(state, A, recovery=RecoveryCopy("A", 5, "search"))
    assert "the copy in 'search' does not count" in refused.detail
    assert "recovery-only tier (checkpoint, shadow)" in refused.detail
    older = turn_gate(state, A, recovery=RecoveryCopy("A", 4, "shadow"))
    assert "holds revision 4, older than the pending revision 5" in older.detail
    other = turn_gate(state, B)
    assert other.detail.startswith("the pending revision 5 belongs to run 'A', not the active")


# --- item 5: what turn_gate takes is public ----------------------------------------------------


def test_D_turn_gate_arguments_are_exported() -> None:
    for name in ("RecoveryCopy", "CommitMarker", "RunIdentity", "TierRoles", "BoundTiers",
                 "UnknownTierError", "PersistenceState"):
        assert name in autodev_core.__all__, name
