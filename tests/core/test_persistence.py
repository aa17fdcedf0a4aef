"""Persistence confirmation: the reducer and the stale-pending planner (SPEC B4-B8)."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from autodev_core.control.identity import resolve_active_identity
from autodev_core.control.persistence import (
    DEFAULT_TIERS,
    KEEP_REASONS,
    Accepted,
    CommitMarker,
    PersistenceEvent,
    PersistenceState,
    Queued,
    StalePendingPlan,
    TierRoles,
    apply_stale_pending_plan,
    describe_persistence,
    plan_stale_pending_clear,
    reduce_persistence,
    settle_stale_pending,
    tier_role,
)
from autodev_core.serialization import from_json, from_yaml, to_json, to_yaml

RUN = resolve_active_identity(run_id="run-7", aliases=["r7"])


def pending(revision: int = 2, run_id: str = "run-7", **fields: Any) -> PersistenceState:
    state = reduce_persistence(PersistenceState(), Queued(revision, run_id))
    return attrs.evolve(state, **fields)


# --- B4 ---


def test_B4_state_fields_and_defaults() -> None:
    state = PersistenceState()
    assert [f.name for f in attrs.fields(PersistenceState)] == [
        "pending_persist", "writes_blocked", "last_accepted_revision", "accepted_tier",
        "accepted_run_id", "last_recoverable_tier", "queued_revision", "queued_run_id",
        "queued_reason", "queued_immediate",
    ]
    assert state.pending_persist is False
    assert state.writes_blocked is False
    assert state.last_accepted_revision == 0
    assert state.queued_revision == 0
    assert state.accepted_tier == "none"
    assert state.last_recoverable_tier == "none"
    assert state.queued_run_id == ""
    assert state.queued_reason == ""
    assert state.queued_immediate is False


# --- B5 ---


def test_B5_default_tier_roles() -> None:
    assert DEFAULT_TIERS.canonical == frozenset({"sqlite"})
    assert DEFAULT_TIERS.recovery_only == frozenset({"shadow", "checkpoint"})
    assert DEFAULT_TIERS.replica_only == frozenset({"search"})
    assert tier_role("sqlite") == "canonical"
    assert tier_role("shadow") == "recovery-only"
    assert tier_role("checkpoint") == "recovery-only"
    assert tier_role("search") == "replica-only"


def test_B5_tier_names_are_trimmed_and_lower_cased() -> None:
    assert tier_role("  SQLite ") == "canonical"
    assert tier_role("Shadow") == "recovery-only"


@pytest.mark.parametrize("tier", ["none", "", "  ", None, "NONE", "postgres"])
def test_B5_none_empty_and_anything_else_are_unknown(tier: str | None) -> None:
    assert tier_role(tier) == "unknown"


def test_B5_role_table_is_configurable() -> None:
    tiers = TierRoles(canonical={" Postgres "}, recovery_only={"wal-copy"}, replica_only=set())
    assert tier_role("postgres", tiers) == "canonical"
    assert tier_role("sqlite", tiers) == "unknown"
    assert tier_role("wal-copy", tiers) == "recovery-only"


def test_B5_none_stays_unknown_whatever_the_table_says() -> None:
    tiers = TierRoles(canonical={"none", "", "pg"}, recovery_only={" NONE "}, replica_only=set())
    assert tiers.canonical == frozenset({"pg"})
    assert tier_role("none", tiers) == "unknown"
    assert tier_role("", tiers) == "unknown"


def test_B5_role_table_refuses_overlaps() -> None:
    with pytest.raises(ValueError, match="sqlite"):
        TierRoles(canonical={"sqlite"}, recovery_only={"SQLITE"}, replica_only=set())


# --- B6 ---


def test_B6_queued_sets_pending_and_the_queued_fields() -> None:
    state = reduce_persistence(
        PersistenceState(), Queued(3, "run-7", reason="turn-end", immediate=True)
    )
    assert state.pending_persist is True
    assert state.queued_revision == 3
    assert state.queued_run_id == "run-7"
    assert state.queued_reason == "turn-end"
    assert state.queued_immediate is True


def test_B6_queued_revision_never_decreases_while_queued() -> None:
    state = reduce_persistence(PersistenceState(), Queued(5, "run-7"))
    state = reduce_persistence(state, Queued(3, "run-7", reason="later"))
    assert state.queued_revision == 5
    assert state.queued_reason == "later"
    state = reduce_persistence(state, Queued(8, "run-7"))
    assert state.queued_revision == 8


def test_B6_queued_run_id_is_overwritten() -> None:
    state = reduce_persistence(PersistenceState(), Queued(5, "run-7"))
    state = reduce_persistence(state, Queued(6, "run-8"))
    assert state.queued_run_id == "run-8"


@pytest.mark.parametrize("tier", [None, "none", "sqlite", "search", "mystery"])
def test_B6_writes_blocked_unless_recoverable_tier_is_recovery_only(tier: str | None) -> None:
    before = PersistenceState(last_recoverable_tier="checkpoint")
    state = reduce_persistence(before, Queued(1, "run-7", recoverable_tier=tier))
    assert state.writes_blocked is True
    assert state.last_recoverable_tier == "checkpoint", "kept when no recovery copy was made"


@pytest.mark.parametrize("tier", ["shadow", " Checkpoint "])
def test_B6_recovery_only_tier_unblocks_writes_and_is_recorded(tier: str) -> None:
    state = reduce_persistence(PersistenceState(), Queued(1, "run-7", recoverable_tier=tier))
    assert state.writes_blocked is False
    assert state.last_recoverable_tier == tier.strip().lower()
    assert state.pending_persist is True


def test_B6_queued_after_blocked_then_recovery_copy_unblocks() -> None:
    state = reduce_persistence(PersistenceState(), Queued(1, "run-7"))
    assert state.writes_blocked
    state = reduce_persistence(state, Queued(1, "run-7", recoverable_tier="shadow"))
    assert not state.writes_blocked


# --- B7 ---


def test_B7_canonical_acceptance_confirms() -> None:
    state = pending(4, writes_blocked=True, last_recoverable_tier="shadow")
    after = reduce_persistence(state, Accepted("SQLite", 4))
    assert after == PersistenceState(
        pending_persist=False, writes_blocked=False, last_accepted_revision=4,
        accepted_tier="sqlite", accepted_run_id="run-7", last_recoverable_tier="none",
    )


def test_B7_last_accepted_revision_is_the_max() -> None:
    state = PersistenceState(last_accepted_revision=9, accepted_tier="sqlite")
    after = reduce_persistence(state, Accepted("sqlite", 4))
    assert after.last_accepted_revision == 9
    assert reduce_persistence(after, Accepted("sqlite", 12)).last_accepted_revision == 12


def test_B7_without_clear_queued_the_queued_fields_stay() -> None:
    state = pending(4, queued_reason="r", queued_immediate=True)
    after = reduce_persistence(state, Accepted("sqlite", 4, clear_queued=False))
    assert not after.pending_persist
    assert (after.queued_revision, after.queued_run_id) == (4, "run-7")
    assert (after.queued_reason, after.queued_immediate) == ("r", True)


@pytest.mark.parametrize("tier", ["shadow", "checkpoint", "search", "none", "", "postgres"])
def test_B7_non_canonical_acceptance_leaves_state_unchanged(tier: str) -> None:
    state = pending(4, last_accepted_revision=1, last_recoverable_tier="shadow")
    assert reduce_persistence(state, Accepted(tier, 10)) == state


def test_B7_refused_acceptance_leaves_state_unchanged() -> None:
    state = pending(4)
    assert reduce_persistence(state, Accepted("sqlite", 10, accepted=False)) == state


def test_B7_custom_tiers_decide_what_is_canonical() -> None:
    tiers = TierRoles(canonical={"postgres"}, recovery_only={"shadow"}, replica_only=set())
    state = pending(4)
    assert reduce_persistence(state, Accepted("sqlite", 4), tiers=tiers) == state
    assert not reduce_persistence(state, Accepted("postgres", 4), tiers=tiers).pending_persist


def test_B6_B7_reducer_refuses_other_events() -> None:
    with pytest.raises(TypeError):
        reduce_persistence(PersistenceState(), "Accepted")  # type: ignore[arg-type]


def test_B6_revisions_must_be_ints() -> None:
    with pytest.raises(TypeError):
        Queued(True, "run-7")
    with pytest.raises(TypeError):
        Accepted("sqlite", "3")  # type: ignore[arg-type]


# --- B8 ---


def test_B8_clears_when_canonical_acceptance_covers_the_queue() -> None:
    state = pending(2, last_accepted_revision=2, accepted_tier="sqlite",
                    accepted_run_id="run-7")
    plan = plan_stale_pending_clear(state, RUN)
    assert plan == StalePendingPlan("clear-stale-pending", "clear-stale-pending", 2, 2, "sqlite")
    after = apply_stale_pending_plan(state, plan)
    assert not after.pending_persist
    assert not after.writes_blocked
    assert after.queued_run_id == ""
    assert after.last_accepted_revision == 2


def test_B8_keep_reasons_in_order() -> None:
    assert KEEP_REASONS == (
        "not-pending", "missing-target-revision", "missing-run-id", "queued-run-mismatch",
        "accepted-revision-behind", "accepted-tier-not-canonical",
    )


def test_B8_not_pending() -> None:
    state = PersistenceState(queued_revision=0, last_accepted_revision=3)
    assert plan_stale_pending_clear(state, RUN).reason == "not-pending"


def test_B8_missing_target_revision() -> None:
    state = pending(0)
    plan = plan_stale_pending_clear(state, "")
    assert plan.reason == "missing-target-revision", "checked before the run id"
    assert plan_stale_pending_clear(state, RUN, batch_revision=3).reason != plan.reason


def test_B8_target_is_max_of_batch_and_queued_revision() -> None:
    state = pending(2, last_accepted_revision=2, accepted_tier="sqlite",
                    accepted_run_id="run-7")
    plan = plan_stale_pending_clear(state, RUN, batch_revision=3)
    assert (plan.reason, plan.target_revision, plan.accepted_revision) == (
        "accepted-revision-behind", 3, 2,
    )


@pytest.mark.parametrize(("active", "queued"), [("", "run-7"), ("run-7", "")])
def test_B8_missing_run_id(active: str, queued: str) -> None:
    state = pending(2, queued_run_id=queued, last_accepted_revision=2, accepted_tier="sqlite",
                    accepted_run_id="run-7")
    assert plan_stale_pending_clear(state, active).reason == "missing-run-id"


def test_B8_queued_run_mismatch() -> None:
    state = pending(2, run_id="run-8", last_accepted_revision=2, accepted_tier="sqlite",
                    accepted_run_id="run-7")
    assert plan_stale_pending_clear(state, RUN).reason == "queued-run-mismatch"


def test_B8_B3_alias_of_the_active_run_clears_unlike_the_source() -> None:
    # The source gated on aliases but then compared with ==, so an alias never cleared.
    state = pending(2, run_id=" r7 ", last_accepted_revision=2, accepted_tier="sqlite",
                    accepted_run_id="run-7")
    assert plan_stale_pending_clear(state, RUN).clears
    assert plan_stale_pending_clear(state, "run-7").reason == "queued-run-mismatch"


def test_B8_accepted_revision_behind() -> None:
    state = pending(3, last_accepted_revision=2, accepted_tier="sqlite",
                    accepted_run_id="run-7")
    plan = plan_stale_pending_clear(state, RUN)
    assert (plan.action, plan.reason, plan.accepted_revision) == (
        "keep", "accepted-revision-behind", 2,
    )


def test_B8_marker_revision_counts_when_its_run_matches_the_queued_run() -> None:
    state = pending(3, last_accepted_revision=2, accepted_tier="sqlite",
                    accepted_run_id="run-7")
    marker = CommitMarker("r7", 3, "sqlite")
    plan = plan_stale_pending_clear(state, RUN, marker=marker)
    assert plan.clears and plan.accepted_revision == 3
    stranger = CommitMarker("run-8", 3, "sqlite")
    assert plan_stale_pending_clear(state, RUN, marker=stranger).reason == (
        "accepted-revision-behind"
    )
    unaccepted = CommitMarker("run-7", 3, "sqlite", accepted=False)
    assert plan_stale_pending_clear(state, RUN, marker=unaccepted).reason == (
        "accepted-revision-behind"
    )


def test_B8_tier_is_the_tier_of_the_record_that_gave_the_covering_revision() -> None:
    # B8 as tightened: the state's tier when the state's accepted revision covers the write,
    # the marker's when the marker's does; a batch's tier never counts.
    state = pending(2, last_accepted_revision=2, accepted_run_id="run-7")
    assert plan_stale_pending_clear(state, RUN).reason == "accepted-tier-not-canonical"
    assert plan_stale_pending_clear(state, RUN, batch_tier="SQLite").reason == (
        "accepted-tier-not-canonical"
    )
    recovered = attrs.evolve(state, accepted_tier="checkpoint")
    plan = plan_stale_pending_clear(recovered, RUN, marker=CommitMarker("run-7", 1, "sqlite"))
    assert (plan.reason, plan.tier) == ("accepted-tier-not-canonical", "checkpoint")
    plan = plan_stale_pending_clear(recovered, RUN, marker=CommitMarker("r7", 2, "SQLite"))
    assert plan.clears and plan.tier == "sqlite"


def test_B8_keep_plan_applies_as_no_change() -> None:
    state = pending(3, last_accepted_revision=2, accepted_tier="sqlite",
                    accepted_run_id="run-7")
    outcome = settle_stale_pending(state, RUN)
    assert outcome.plan.reason == "accepted-revision-behind"
    assert outcome.state == state


def test_B8_identity_gated_composition_clears_for_the_active_run_only() -> None:
    state = pending(2, last_accepted_revision=2, accepted_tier="sqlite",
                    accepted_run_id="run-7")
    assert not settle_stale_pending(state, RUN).state.pending_persist
    other = resolve_active_identity(run_id="run-8")
    kept = settle_stale_pending(state, other)
    assert kept.plan.reason == "queued-run-mismatch"
    assert kept.state.pending_persist and kept.state.queued_run_id == "run-7"


def test_B8_the_store_confirmed_rev_2_and_the_flag_clears() -> None:
    """The source's bug: SQL confirmed rev 2, the pending flag stayed, turns stayed blocked."""
    state = reduce_persistence(PersistenceState(), Queued(2, "run-7"))
    state = reduce_persistence(state, Accepted("sqlite", 2, clear_queued=False))
    state = reduce_persistence(state, Queued(2, "run-7"))  # a late duplicate of the same write
    assert state.pending_persist
    assert not settle_stale_pending(state, RUN).state.pending_persist


# --- 0.3 ---


def test_0_3_events_round_trip_as_a_tagged_union() -> None:
    for event in (Queued(3, "run-7", "why", True, "shadow"), Accepted("sqlite", 3, False, False)):
        text = to_json(event, as_type=PersistenceEvent)
        assert f'"type":"{type(event).__name__}"' in text
        assert from_json(text, PersistenceEvent) == event
        assert from_yaml(to_yaml(event, as_type=PersistenceEvent), PersistenceEvent) == event


def test_0_3_state_plan_and_tiers_round_trip() -> None:
    state = pending(3, last_accepted_revision=2, accepted_tier="sqlite",
                    accepted_run_id="run-7")
    assert from_json(to_json(state), PersistenceState) == state
    plan = plan_stale_pending_clear(state, RUN)
    assert from_yaml(to_yaml(plan), StalePendingPlan) == plan
    assert from_json(to_json(DEFAULT_TIERS), TierRoles) == DEFAULT_TIERS


def test_C6_describe_persistence() -> None:
    assert describe_persistence(PersistenceState()) == "nothing confirmed yet"
    state = reduce_persistence(PersistenceState(), Accepted("sqlite", 4))
    assert describe_persistence(state) == "revision 4 confirmed by sqlite"
    state = reduce_persistence(state, Queued(5, "run-7", "turn-end", recoverable_tier="shadow"))
    assert describe_persistence(state) == (
        "revision 5 for run 'run-7' (turn-end) waiting for confirmation; "
        "recovery copy in shadow; revision 4 confirmed by sqlite"
    )
    blocked = reduce_persistence(state, Queued(6, "run-7"))
    assert "writes blocked" in describe_persistence(blocked)


def test_B7_B8_applying_an_old_plan_never_lowers_last_accepted_revision() -> None:
    old_plan = StalePendingPlan("clear-stale-pending", "clear-stale-pending", 2, 2, "sqlite")
    state = pending(3, last_accepted_revision=5, accepted_tier="sqlite")
    assert apply_stale_pending_plan(state, old_plan).last_accepted_revision == 5


def test_B5_a_tier_table_needs_only_its_canonical_tiers() -> None:
    """Issue 12 item 7: the recovery-only and replica-only roles default to none."""
    from autodev_core import TierRoles, tier_role

    tiers = TierRoles(frozenset({"Postgres "}))
    assert tiers.recovery_only == frozenset() and tiers.replica_only == frozenset()
    assert tier_role("postgres", tiers) == "canonical"
    assert tier_role("shadow", tiers) == "unknown"
