"""SPEC 0.4: the shipped state machine (`autodev_core.testing`) drives the scheduler through
random teams, chains, installed CLIs, outcomes, messages, clock jumps, stops, pauses and gates,
checking SPEC A's invariants after every step.

After every step each effect and the new state is also rebuilt through the checked
constructors — `attrs.evolve` runs the validators and `__attrs_post_init__` — which must accept
it and give back an equal value: what the core derives is as legal as what a caller builds."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import attrs
import pytest

from autodev_core.engine import Engine
from autodev_core.participant import Participant
from autodev_core.scheduler import (
    Effect,
    EngineLimit,
    Event,
    Log,
    SchedulerConfig,
    SchedulerState,
    initial_state,
)
from autodev_core.scheduler.limited import limited_at
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
        assert rebuilt(after) == after
        for effect in effects:
            assert rebuilt(effect) == effect


def lanes_at(state: SchedulerState, at: datetime) -> tuple[
        tuple[int | None, ...], tuple[int, ...], tuple[tuple[int, int] | None, ...]]:
    """The rule restated from the registry itself (A8: limited while `at` is before the reset;
    A23, A15, A33): each participant's first free lane entry, its limited entries (a bit per
    position), and for each owner the first participant after it in team order with a free
    entry."""
    config = state.config
    out = {(r.engine.provider, r.engine.model) for r in state.limits if at < r.until}
    first: list[int | None] = []
    passed: list[int] = []
    for lane in config.lanes:
        limited = [(e.provider, e.model) in out for e in lane]
        first.append(limited.index(False) if False in limited else None)
        passed.append(sum(1 << i for i, x in enumerate(limited) if x))
    n = len(first)
    colleague: list[tuple[int, int] | None] = []
    for owner in range(n):
        after = [(r, first[r]) for r in [(owner + k) % n for k in range(1, n + 1)]]
        colleague.append(next(((r, p) for r, p in after if p is not None), None))
    return tuple(first), tuple(passed), tuple(colleague)


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


def test_A8_A23_the_lanes_under_each_set_of_limited_engines_are_the_rule_restated() -> None:
    """The named answers `step` reads (`limited_at`) are, for every set of limited engines,
    what the rule restated from a registry holding exactly those engines says."""
    team = (
        Participant(id="ana", provider="claude", model="opus",
                    failover=(Engine("codex"), Engine("claude", "sonnet"))),
        Participant(id="rui", provider="codex", failover=(Engine("agy"), Engine("claude"))),
        Participant(id="eva", provider="agy", failover=(Engine("codex", "o3"),)),
    )
    config = SchedulerConfig(team=team)
    now = datetime(2026, 12, 1, 9, tzinfo=UTC)
    engines = sorted({engine for lane in config.lanes for engine in lane})

    for mask in range(1 << len(engines)):
        limits = tuple(EngineLimit(engine, now + timedelta(hours=1))
                       for number, engine in enumerate(engines) if mask >> number & 1)
        state = attrs.evolve(initial_state(config), limits=limits, last_event_at=now)
        limited = limited_at(config, limits, now)
        n = len(config.lanes)
        assert (tuple(limited.free_entry(r) for r in range(n)), limited.limited,
                tuple(limited.colleague(r) for r in range(n))) == lanes_at(state, now)
        for runner, lane in enumerate(config.lanes):
            out = limited.limited[runner]
            assert limited.free_entries[runner] == tuple(
                p for p in range(len(lane)) if not out >> p & 1)
            assert limited.has_limited(runner) == (out != 0)
            assert tuple(limited.limited_before(runner, p) for p in range(len(lane))) == tuple(
                sum(1 << q for q in range(p) if out >> q & 1) for p in range(len(lane)))
        for engine in engines:
            assert limited.back_at(engine) == (
                now + timedelta(hours=1) if engine in {r.engine for r in limits} else None)
        # A38: at the reset itself, nothing is limited any more.
        assert limited_at(config, limits, now + timedelta(hours=1)).limited == (0, 0, 0)
