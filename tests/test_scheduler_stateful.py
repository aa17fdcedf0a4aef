"""SPEC 0.4: the shipped state machine (`autodev_core.testing`) drives the scheduler through
random teams, chains, installed CLIs, outcomes, messages, clock jumps, stops, pauses and gates,
checking SPEC A's invariants after every step.

Issue 13: `step` builds its effects and new state without attrs' checks (it derives them from a
checked event and state), so after every step each of them is also rebuilt through the checked
constructors — `attrs.evolve` runs the validators and `__attrs_post_init__` — which must accept
it and give back an equal value: what the core derives is as legal as what a caller builds. The
state's derived fields (not compared by `==`: `limit_index`, and the scratch `step` makes it
with) must be the ones a checked build derives."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import attrs
import pytest

from autodev_core.engine import Engine
from autodev_core.scheduler import Effect, Event, Log, SchedulerState
from autodev_core.testing import SchedulerMachine, scheduler_configs


def rebuilt(value: Any) -> Any:
    """`value` built again through its checked constructor, its attrs parts first (the config
    is the caller's own, checked when it was built)."""
    if isinstance(value, tuple):
        return tuple(rebuilt(item) for item in value)
    if not attrs.has(type(value)) or isinstance(value, Engine):
        return value
    changes = {
        a.name: rebuilt(getattr(value, a.name))
        for a in attrs.fields(type(value)) if a.init and a.name != "config"
    }
    return attrs.evolve(value, **changes)


class SchedulerRuns(SchedulerMachine):
    def check_step(self, before: SchedulerState, event: Event, after: SchedulerState,
                   effects: tuple[Effect, ...]) -> None:
        super().check_step(before, event, after, effects)
        again = rebuilt(after)
        assert again == after
        # Every derived field (not compared by `==`) is what a checked build derives: the
        # registry read by engine number, carried from step to step (issue 13), is what a
        # checked build reads from the registry itself, and the scratch `step` fills the new
        # state with while it is made (its effects, the engines limited) is gone.
        for field in attrs.fields(SchedulerState):
            if not field.init:
                assert getattr(after, field.name) == getattr(again, field.name), field.name
        for effect in effects:
            assert rebuilt(effect) == effect


class SmallTeams(SchedulerRuns):
    """Teams of one or two collide on engines far more often (A8, A16, A35)."""

    configs = scheduler_configs(max_team=2, limited_iterations=False)


TestSchedulerInvariants = SchedulerRuns.TestCase
TestSmallTeamInvariants = SmallTeams.TestCase


def test_rebuilding_refuses_an_illegal_derived_value() -> None:
    """The check has teeth: an effect holding a naive instant is refused when rebuilt."""
    log = Log(datetime(2026, 12, 1, 9).astimezone(), "x")
    object.__setattr__(log, "at", datetime(2026, 12, 1, 9))  # what a checked build refuses
    with pytest.raises(ValueError, match="aware datetime"):
        rebuilt(log)
