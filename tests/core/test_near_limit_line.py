"""The near-limit line of `Policy.headroom` (docs/scheduler.md "Acting before the limit",
docs/limits.md "Usage readings"): `<engine> at <n>% of its <window> window — handing over until
<time>` is what was learned (A39) when a reading *puts* an engine near its limit. It is written
once per crossing of the threshold, not at every reading that finds the engine still above it;
a reading that takes the engine below the threshold, or a window's reset (A38), ends the
crossing, and the next reading at or above the threshold writes it again."""

from __future__ import annotations

from datetime import datetime, timedelta

from helpers.clock import T0
from hypothesis import given
from hypothesis import strategies as st

from autodev_core import (
    Engine,
    Log,
    Participant,
    Policy,
    RunStarted,
    SchedulerConfig,
    UsageObserved,
    UsageReading,
    initial_state,
    step,
)
from autodev_core.scheduler import SchedulerState
from autodev_core.testing import near_limit

M = timedelta(minutes=1)
H = timedelta(hours=1)
CLAUDE = Engine("claude")
THRESHOLD = 0.95


def started() -> SchedulerState:
    team = (Participant(id="ana", provider="claude", failover=(Engine("codex"),)),)
    config = SchedulerConfig(team=team, policy=Policy(headroom=THRESHOLD), timezone="UTC")
    state, _ = step(initial_state(config), RunStarted(now=T0))
    return state


def observe(state: SchedulerState, at: datetime, used: float, window: str = "five_hour",
            resets: datetime | None = T0 + 5 * H) -> tuple[SchedulerState, list[str]]:
    """Another run reports a reading of claude seen at `at` (docs/sharing.md); the kinds of
    the lines the step writes."""
    reading = UsageReading(provider="claude", utilization=used, window=window, resets_at=resets)
    state, effects = step(state, UsageObserved(now=at, engine=CLAUDE, reading=reading,
                                               source="laptop"))
    return state, [e.kind for e in effects if isinstance(e, Log)]


def test_near_limit_line_once_per_crossing() -> None:
    """Two readings above the threshold in a row are one crossing: one line. Falling below and
    rising again is a second crossing: a second line."""
    state = started()
    state, kinds = observe(state, T0 + M, 0.96)
    assert kinds == ["near-limit"]
    state, kinds = observe(state, T0 + 2 * M, 0.98)  # still above: the same crossing
    assert kinds == []
    state, kinds = observe(state, T0 + 3 * M, 0.99)
    assert kinds == []
    state, kinds = observe(state, T0 + 4 * M, 0.5)  # below: the crossing ends, silently
    assert kinds == []
    state, kinds = observe(state, T0 + 5 * M, 0.97)  # a new crossing
    assert kinds == ["near-limit"]


def test_near_limit_line_not_again_for_a_second_window_of_an_engine_already_near() -> None:
    """An engine is near its limit while *some* window of it is: a second window crossing
    while the first still is does not write the line again."""
    state = started()
    state, kinds = observe(state, T0 + M, 0.97, "five_hour")
    assert kinds == ["near-limit"]
    state, kinds = observe(state, T0 + 2 * M, 0.96, "seven_day", T0 + 48 * H)
    assert kinds == []


def test_near_limit_line_again_after_the_window_reset() -> None:
    """A38: a window ending at `t` has reset when `now >= t`; a reading above the threshold of
    the next window is a new crossing."""
    state = started()
    state, kinds = observe(state, T0 + M, 0.97, resets=T0 + H)
    assert kinds == ["near-limit"]
    state, kinds = observe(state, T0 + H, 0.97, resets=T0 + 6 * H)
    assert kinds == ["near-limit"]


@st.composite
def readings(draw: st.DrawFn) -> list[tuple[int, float, str, int]]:
    """Readings of claude at strictly later minutes: (minute, utilization, window, reset
    minute), utilizations on both sides of the threshold, windows that reset between them."""
    count = draw(st.integers(min_value=1, max_value=12))
    gaps = draw(st.lists(st.integers(min_value=1, max_value=40), min_size=count,
                         max_size=count))
    out = []
    minute = 0
    for gap in gaps:
        minute += gap
        used = draw(st.sampled_from((0.2, 0.9, THRESHOLD, 0.97, 1.0)))
        window = draw(st.sampled_from(("five_hour", "seven_day")))
        out.append((minute, used, window, minute + draw(st.integers(min_value=1, max_value=90))))
    return out


@given(seen=readings())
def test_near_limit_line_is_written_exactly_when_the_engine_becomes_near(
    seen: list[tuple[int, float, str, int]],
) -> None:
    """Over any run of readings, a step writes the near-limit line exactly when claude was not
    near its limit before it and is after it (both judged at the step's `now`, A38); so the
    lines are as many as the crossings, never one per reading above the threshold."""
    state = started()
    crossings = 0
    lines = 0
    for minute, used, window, reset in seen:
        at = T0 + minute * M
        before = CLAUDE in near_limit(state, at)
        state, kinds = observe(state, at, used, window, T0 + reset * M)
        after = CLAUDE in near_limit(state, at)
        crossing = after and not before
        assert kinds == (["near-limit"] if crossing else []), (minute, used, window)
        crossings += crossing
        lines += len(kinds)
    assert lines == crossings
