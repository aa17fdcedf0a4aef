"""The usage forecast (docs/limits.md "Forecast"; issue 37 item 3): from the series of an account
window's readings, where it stands, how fast it rises, when it reaches the target, when it
resets. A display, never a decision (A1): the decisions read the readings only."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import attrs
from hypothesis import given
from hypothesis import strategies as st

from autodev_core import (
    CallEnded,
    Engine,
    Participant,
    Policy,
    RunStarted,
    SchedulerConfig,
    StartCall,
    UsageObserved,
    UsageReading,
    initial_state,
    step,
)
from autodev_core.scheduler.forecast import SERIES_MAX, forecast, trim_series
from autodev_core.scheduler.state import UsagePoint

T0 = datetime(2026, 12, 7, 12, 5, tzinfo=UTC)
H = timedelta(hours=1)
M = timedelta(minutes=1)
RESETS = datetime(2026, 12, 7, 16, 0, tzinfo=UTC)


def _point(at: datetime, used: float, resets: datetime | None = RESETS,
           account: str = "claude", window: str = "five_hour") -> UsagePoint:
    return UsagePoint(account, window, at, used, resets)


def test_the_issues_example() -> None:
    """64 %, 73 %, 82 % an hour apart: rising 9 %/h, 95 % about 15:31, resets 16:00."""
    series = [_point(T0, 0.64), _point(T0 + H, 0.73), _point(T0 + 2 * H, 0.82)]
    (f,) = forecast(series, T0 + 2 * H + M)
    assert (f.account, f.window, f.utilization, f.at) == ("claude", "five_hour", 0.82,
                                                          T0 + 2 * H)
    assert f.rate_per_hour is not None and abs(f.rate_per_hour - 0.09) < 1e-9
    assert f.reaches_at is not None
    assert abs((f.reaches_at - (T0 + 2 * H + (0.13 / 0.09) * H)).total_seconds()) < 1
    assert f.resets_at == RESETS


def test_one_reading_gives_no_rate_and_no_reach() -> None:
    (f,) = forecast([_point(T0, 0.5)], T0)
    assert f.rate_per_hour is None and f.reaches_at is None


def test_readings_closer_than_five_minutes_give_no_rate() -> None:
    (f,) = forecast([_point(T0, 0.5), _point(T0 + 4 * M, 0.6)], T0 + 5 * M)
    assert f.rate_per_hour is None


def test_a_window_that_resets_first_reaches_nothing() -> None:
    """Rising 1 %/h from 50 % with the reset in two hours: 95 % is not reached before it."""
    (f,) = forecast([_point(T0, 0.49), _point(T0 + H, 0.50, T0 + 3 * H)], T0 + H,)
    # (the first reading names another reset: an older cycle, left out of the rate)
    assert f.rate_per_hour is None
    (f,) = forecast([_point(T0, 0.49, T0 + 3 * H), _point(T0 + H, 0.50, T0 + 3 * H)], T0 + H)
    assert f.rate_per_hour is not None and f.rate_per_hour > 0 and f.reaches_at is None


def test_a_window_already_at_the_target_reaches_it_at_its_reading() -> None:
    (f,) = forecast([_point(T0, 0.97)], T0 + M)
    assert f.reaches_at == T0


def test_A38_a_window_past_its_reset_is_not_forecast() -> None:
    assert forecast([_point(T0, 0.97, T0 + H)], T0 + H) == ()
    assert len(forecast([_point(T0, 0.97, T0 + H)], T0 + H - timedelta(seconds=1))) == 1


@given(start=st.floats(min_value=0.0, max_value=0.5),
       slope=st.floats(min_value=0.01, max_value=0.3),
       count=st.integers(min_value=2, max_value=10),
       gap=st.integers(min_value=5, max_value=60))
def test_a_straight_series_reads_its_slope_and_its_crossing(
    start: float, slope: float, count: int, gap: int,
) -> None:
    """Readings on a straight line: the rate is the line's slope and the reach is where the
    line crosses the target (unless the reset comes first)."""
    points = [_point(T0 + i * gap * M, start + slope * (i * gap / 60), T0 + 48 * H)
              for i in range(count)]
    last = points[-1]
    (f,) = forecast(list(reversed(points)), last.seen)  # the order given does not matter
    assert f.rate_per_hour is not None and abs(f.rate_per_hour - slope) < 1e-6
    if last.utilization < 0.95:
        expected = last.seen + (0.95 - last.utilization) / slope * H
        if expected >= T0 + 48 * H - timedelta(seconds=1):
            assert f.reaches_at is None or expected < T0 + 48 * H  # the reset comes first
        else:
            assert f.reaches_at is not None
            assert abs((f.reaches_at - expected).total_seconds()) < 1


@given(steps=st.lists(st.tuples(st.integers(min_value=0, max_value=30),
                                st.floats(min_value=0, max_value=1),
                                st.sampled_from(("five_hour", "seven_day")),
                                st.sampled_from((0, 1))), max_size=80))
def test_the_series_stays_bounded_to_a_window_cycle(
    steps: list[tuple[int, float, str, int]],
) -> None:
    """However many readings come, each account window keeps at most SERIES_MAX, all of the
    newest reading's cycle (its reset), in the order seen."""
    series: tuple[UsagePoint, ...] = ()
    at = T0
    for gap, used, window, cycle in steps:
        at += gap * M
        point = _point(at, used, RESETS + cycle * 5 * H, window=window)
        series = trim_series(series, point)
        mine = [p for p in series if p.window == window]
        assert mine[-1].seen == point.seen
        assert len(mine) <= SERIES_MAX
        assert {p.resets_at for p in mine} == {point.resets_at}
        assert [p.seen for p in mine] == sorted(p.seen for p in mine)


# -- kept by the scheduler, never read by a decision (A1) -----------------------------------------


def _team(headroom: float | None) -> SchedulerConfig:
    team = (Participant(id="ana", provider="claude", failover=(Engine("codex"),)),
            Participant(id="rui", provider="codex", failover=(Engine("claude", "opus"),)))
    return SchedulerConfig(team=team, timezone="UTC", policy=Policy(headroom=headroom))


def test_the_scheduler_keeps_each_account_windows_series() -> None:
    state, _ = step(initial_state(_team(0.95)), RunStarted(now=T0))
    for i, used in enumerate((0.64, 0.73, 0.82)):
        call = state.call
        assert call is not None
        readings = (UsageReading(provider=call.engine.provider, utilization=used,
                                 window="five_hour", resets_at=RESETS),)
        state, _ = step(state, CallEnded(now=T0 + i * H + M, participant=call.participant,
                                         engine=call.engine, kind="post", posted=True,
                                         readings=readings))
    state, _ = step(state, UsageObserved(
        now=T0 + 2 * H + 2 * M, engine=Engine("claude", "opus"), source="laptop",
        reading=UsageReading(provider="claude", utilization=0.85, window="five_hour",
                             resets_at=RESETS)))
    claude = [p for p in state.usage_series if p.account == "claude"]
    assert [p.window for p in claude] == ["five_hour"] * len(claude)
    assert claude[-1].utilization == 0.85  # opus's reading is the account's (issue 37)


@given(series=st.lists(st.tuples(st.sampled_from(("claude", "codex")),
                                 st.floats(min_value=0, max_value=1),
                                 st.integers(min_value=0, max_value=200)), max_size=10),
       headroom=st.sampled_from((None, 0.95)))
def test_A1_the_series_decides_nothing(series: list[tuple[str, float, int]],
                                       headroom: float | None) -> None:
    """A turn start with any series makes the same effects as with none, knob on or off."""
    state = initial_state(_team(headroom))
    points = tuple(sorted((_point(T0 - m * M, used, account=acc) for acc, used, m in series),
                          key=lambda p: (p.account, p.window, p.seen)))
    _a, with_series = step(attrs.evolve(state, usage_series=points), RunStarted(now=T0))
    _b, without = step(state, RunStarted(now=T0))
    assert with_series == without
    assert any(isinstance(e, StartCall) for e in without)


def test_a_long_cycle_keeps_the_newest_series_max_readings() -> None:
    series: tuple[UsagePoint, ...] = ()
    for i in range(SERIES_MAX + 6):
        series = trim_series(series, _point(T0 + i * M, i / 100))
    assert len(series) == SERIES_MAX
    assert series[0].seen == T0 + 6 * M and series[-1].seen == T0 + (SERIES_MAX + 5) * M
