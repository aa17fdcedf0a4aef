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
from autodev_core.scheduler.state import limited_at
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
        check_carried_answer(after)


def lanes_at(state: SchedulerState, at: datetime) -> tuple[
        int, tuple[int | None, ...], tuple[int, ...], tuple[tuple[int, int] | None, ...]]:
    """The rule restated from the registry itself (A8: limited while `at` is before the reset;
    A23, A15, A33): the engines limited at `at` as the config's engine bits, each participant's
    first free lane entry, its limited entries (a bit per position), and for each owner the
    first participant after it in team order with a free entry."""
    config = state.config
    out = {(r.engine.provider, r.engine.model) for r in state.limits if at < r.until}
    mask = sum(1 << n for key, n in config.engine_numbers.items() if key in out)
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
    return mask, tuple(first), tuple(passed), tuple(colleague)


def check_carried_answer(state: SchedulerState) -> None:
    """Issue 13: the registry's reading carries its last answer — the engines limited over a
    span of time, and what that means for each lane — from step to step, changed in place of
    worked out again when one record changes or limits are lifted. It must hold over its whole
    span: at its first instant, at its last, and now."""
    valid = state.limit_index.valid
    if valid is None:
        return
    since, until, limited = valid
    assert since < until
    instants = [since, until - timedelta(microseconds=1)]
    now = state.last_event_at
    if now is not None and since <= now < until:
        instants.append(now)
    for at in instants:
        assert (limited.mask, limited.free_entry, limited.limited, limited.colleague) == lanes_at(
            state, at), at


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


def test_what_a_set_of_limited_engines_means_is_worked_out_once_and_forgotten_in_time() -> None:
    """Issue 13: the lanes under each set of limited engines are worked out the first time a
    step meets it and kept on the config — the same answer as the rule restated from a registry
    holding exactly those engines, every time, and never more than 1,024 sets remembered."""
    team = (
        Participant(id="ana", provider="claude", model="opus",
                    failover=(Engine("codex"), Engine("claude", "sonnet"))),
        Participant(id="rui", provider="codex", failover=(Engine("agy"), Engine("claude"))),
        Participant(id="eva", provider="agy", failover=(Engine("codex", "o3"),)),
    )
    config = SchedulerConfig(team=team)
    now = datetime(2026, 12, 1, 9, tzinfo=UTC)
    engines = sorted(config.engine_numbers.items(), key=lambda item: item[1])

    def holding(mask: int) -> SchedulerState:
        """A registry holding exactly the engines of `mask`, each limited for an hour."""
        limits = tuple(
            EngineLimit(Engine(provider, model), now + timedelta(hours=1))
            for (provider, model), number in engines if mask >> number & 1)
        return attrs.evolve(initial_state(config), limits=limits, last_event_at=now)

    def answer(mask: int) -> tuple[Any, ...]:
        limited = limited_at(config, mask)
        return limited.mask, limited.free_entry, limited.limited, limited.colleague

    for mask in range(1 << len(engines)):
        assert answer(mask) == lanes_at(holding(mask), now)
        assert answer(mask) == lanes_at(holding(mask), now)  # remembered: the same answer
        # Issue 27: the named answers `step` reads, each what `limited` (held above) says.
        limited = limited_at(config, mask)
        for runner, lane in enumerate(config.lanes):
            out = limited.limited[runner]
            assert limited.free_entries[runner] == tuple(
                p for p in range(len(lane)) if not out >> p & 1)
            assert limited.has_limited[runner] == (out != 0)
            assert limited.limited_before[runner] == tuple(
                sum(1 << q for q in range(p) if out >> q & 1) for p in range(len(lane)))
    for mask in range(3_000):  # more sets than it remembers
        limited_at(config, mask)
        assert len(config.limited_cache) <= 1_024
    assert answer(5) == lanes_at(holding(5), now)  # forgotten, then worked out again
