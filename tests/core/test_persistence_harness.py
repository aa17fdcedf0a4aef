"""The shipped harness catches planner and gate bugs, not only reducer bugs (SPEC 0.4, B5-B9).

Each test plants one bug by hand (monkeypatching the core module the harness drives) and runs
`autodev_core.testing.PersistenceMachine` under the active Hypothesis profile (`ci` in CI: 60
examples, derandomized). The machine's model states B5-B9 on its own, so it must fail every
time. A harness that copied the library's `tier_role` or the planner's decision would pass.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import pytest
from hypothesis import Phase, settings
from hypothesis.stateful import run_state_machine_as_test

import autodev_core.control.persistence as core
from autodev_core.control.persistence import (
    CommitMarker,
    PersistenceState,
    RecoveryCopy,
    StalePendingPlan,
)
from autodev_core.testing.persistence_machine import PersistenceMachine

real_role = core.tier_role
real_plan = core.plan_stale_pending_clear
real_gate = core.turn_gate


#: How many examples the machine gets to find a planted bug: at least four times the `dev`
#: profile's hundred. Under fresh random draws a hundred examples missed one of these bugs in
#: three runs of eight (issue 24: the README's test command went red on
#: test_B8_marker_counted_for_any_run_is_caught); four hundred found each in every one of 40 seeds.
CATCH_EXAMPLES = 400


def run_machine(examples: int | None = None) -> None:
    # The active profile's examples and steps (or `examples`); no shrinking (a planted bug only
    # has to be found) and no example database (a planted failure must not be replayed).
    budget = {} if examples is None else {"max_examples": max(examples, settings().max_examples)}
    run_state_machine_as_test(
        PersistenceMachine,
        settings=settings(database=None, phases=[Phase.explicit, Phase.reuse, Phase.generate],
                          **budget),
    )


def assert_caught() -> None:
    with pytest.raises((AssertionError, ExceptionGroup)):
        run_machine(CATCH_EXAMPLES)


def test_the_harness_passes_on_the_real_core() -> None:
    run_machine()


def test_B5_search_treated_as_canonical_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    def bad_role(tier: str | None, tiers: core.TierRoles = core.DEFAULT_TIERS) -> Any:
        return "canonical" if core.normalize_tier(tier) == "search" else real_role(tier, tiers)

    monkeypatch.setattr(core, "tier_role", bad_role)
    queued = core.reduce_persistence(PersistenceState(), core.Queued(1, "run-A"))
    assert not core.reduce_persistence(queued, core.Accepted("search", 1)).pending_persist
    assert_caught()


def plant_plan(monkeypatch: pytest.MonkeyPatch,
               change: Callable[[StalePendingPlan, dict[str, Any]], StalePendingPlan]) -> None:
    def planted(state: PersistenceState, identity: Any, **kwargs: Any) -> StalePendingPlan:
        return change(real_plan(state, identity, **kwargs), {"state": state, **kwargs})

    monkeypatch.setattr(core, "plan_stale_pending_clear", planted)


def clear(plan: StalePendingPlan) -> StalePendingPlan:
    return StalePendingPlan("clear-stale-pending", "clear-stale-pending", plan.target_revision,
                            plan.accepted_revision, plan.tier)


def test_B8_planner_tier_check_removed_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    plant_plan(monkeypatch, lambda plan, _facts: (
        clear(plan) if plan.reason == "accepted-tier-not-canonical" else plan))
    stored = PersistenceState(pending_persist=True, last_accepted_revision=3,
                              accepted_tier="checkpoint", accepted_run_id="run-A",
                              queued_revision=3, queued_run_id="run-A")
    assert core.turn_gate(stored, "run-A").reason == "stale-pending-cleared"
    assert_caught()


def test_B8_planner_revision_check_removed_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    # Without its revision check the planner goes straight on to the tier check.
    plant_plan(monkeypatch, lambda plan, _facts: (
        clear(plan)
        if plan.reason == "accepted-revision-behind" and real_role(plan.tier) == "canonical"
        else plan))
    state = core.reduce_persistence(PersistenceState(), core.Queued(3, "run-A"))
    state = core.reduce_persistence(state, core.Accepted("sqlite", 2))
    assert core.turn_gate(state, "run-A").reason == "stale-pending-cleared"
    assert_caught()


def test_B8_marker_counted_for_any_run_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    def any_run(state: PersistenceState, identity: Any, **kwargs: Any) -> StalePendingPlan:
        marker = kwargs.get("marker")
        if marker is not None:
            kwargs["marker"] = attrs.evolve(marker, run_id=state.queued_run_id or "x")
        return real_plan(state, identity, **kwargs)

    monkeypatch.setattr(core, "plan_stale_pending_clear", any_run)
    state = core.reduce_persistence(PersistenceState(), core.Queued(3, "run-A"))
    assert core.turn_gate(state, "run-A", marker=CommitMarker("run-B", 3, "sqlite")).may_start
    assert_caught()


@pytest.mark.parametrize("field", ["tier", "revision"])
def test_B9_recovery_copy_accepted_for_any_tier_or_revision_is_caught(
    monkeypatch: pytest.MonkeyPatch, field: str
) -> None:
    def loose(state: PersistenceState, identity: Any, **kwargs: Any) -> core.TurnGate:
        copy = kwargs.get("recovery")
        if copy is not None:
            kwargs["recovery"] = (attrs.evolve(copy, tier="shadow") if field == "tier"
                                  else attrs.evolve(copy, revision=10**6))
        return real_gate(state, identity, **kwargs)

    monkeypatch.setattr(core, "turn_gate", loose)
    state = core.reduce_persistence(PersistenceState(), core.Queued(3, "run-A"))
    bad = RecoveryCopy("run-A", 1, "shadow") if field == "revision" else RecoveryCopy(
        "run-A", 3, "search")
    assert core.turn_gate(state, "run-A", recovery=bad).reason == "recovery-copy"
    assert_caught()
