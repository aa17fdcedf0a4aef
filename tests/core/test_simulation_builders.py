"""Issue 13: `simulate` and a notice read once build what they derive without attrs' checks (SPEC D:
classified exactly as real output would be). What they build must be indistinguishable from the
checked value built from the same arguments: the same type, equal both ways, the same hash and
repr. And a reset read once must resolve, at any instant, as reading the duration afresh does.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from helpers.builders import same
from hypothesis import example, given
from hypothesis import strategies as st

import autodev_core.simulation.driver as simulation
from autodev_core.detection._resets import after_seconds, from_duration
from autodev_core.detection.classification import (
    Classification,
    LimitNotice,
    limit_classification,
    limit_notice_of,
)
from autodev_core.engine import Engine
from autodev_core.participant import Participant
from autodev_core.scheduler._build import new_woke
from autodev_core.scheduler.effects import Log
from autodev_core.scheduler.events import Event, Woke
from autodev_core.scheduler.state import SchedulerState
from autodev_core.scheduler.step import step as real_step
from autodev_core.simulation.driver import SimulatedLine
from autodev_core.simulation.scenario import CallAnswer, Scenario

ZONES = [UTC, ZoneInfo("Europe/Lisbon"), ZoneInfo("America/New_York"),
         ZoneInfo("Australia/Lord_Howe"), timezone(timedelta(hours=-5)),
         timezone(timedelta(hours=5, minutes=30))]
instants = st.datetimes(
    min_value=datetime(2025, 1, 1), max_value=datetime(2031, 12, 31),
    timezones=st.sampled_from(ZONES),
)
utc_instants = st.datetimes(
    min_value=datetime(2025, 1, 1), max_value=datetime(2031, 12, 31), timezones=st.just(UTC)
)
# Near both ends of the calendar too, where adding a duration overflows.
edge_instants = st.one_of(
    instants,
    st.datetimes(min_value=datetime(9999, 12, 1), max_value=datetime(9999, 12, 31, 23, 59),
                 timezones=st.sampled_from(ZONES)),
    st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(1, 1, 31),
                 timezones=st.sampled_from(ZONES)),
)


@given(provider=st.sampled_from(("claude", "codex", "agy")), reset=st.none() | instants,
       text=st.text(max_size=30))
def test_an_unchecked_limit_notice_is_the_checked_one(
    provider: str, reset: datetime | None, text: str
) -> None:
    checked = LimitNotice(provider=provider, reset_at=reset, text=text)
    unchecked = limit_notice_of(provider, reset, text)
    same(checked, unchecked)
    assert unchecked.reset_at is None or unchecked.reset_at.tzinfo is UTC  # A6: kept in UTC
    same(Classification(kind="limit", limit=checked, text=checked.text),
         limit_classification(unchecked))


class _NoOffset(tzinfo):
    """A tzinfo that knows no offset: a datetime carrying it is not aware."""

    def utcoffset(self, dt: datetime | None) -> timedelta | None:
        return None

    def dst(self, dt: datetime | None) -> timedelta | None:
        return None


def test_a_reset_that_is_not_aware_is_still_refused() -> None:
    naive_ish = datetime(2026, 1, 1, 9, 0, tzinfo=_NoOffset())
    with pytest.raises(ValueError, match="aware"):
        LimitNotice(provider="claude", reset_at=naive_ish, text="x")
    with pytest.raises(ValueError, match="aware"):
        limit_notice_of("claude", naive_ish, "x")


def test_D_each_line_is_the_checked_line_of_a_log_step_wrote(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Every Log effect `step` returns becomes, in order, the SimulatedLine built from its
    # instant and message by the checked constructor.
    logs: list[Log] = []

    def recording(state: SchedulerState, event: Event) -> Any:
        state, effects = real_step(state, event)
        logs.extend(effect for effect in effects if isinstance(effect, Log))
        return state, effects

    team = (Participant(id="ana", provider="claude", failover=(Engine("codex"),)),
            Participant(id="rui", provider="codex"))
    notice = CallAnswer(stdout="You've hit your limit · resets 2:30am (Europe/Lisbon)", exit=1,
                        duration=timedelta(minutes=7))
    done = CallAnswer(post="done", duration=timedelta(minutes=3))
    start = datetime(2026, 3, 28, 22, 0, tzinfo=UTC)
    scenario = Scenario(start=start, timezone="Europe/Lisbon", team=team,
                        calls=(("claude", (notice, done) * 10),), until=start + timedelta(days=2))
    monkeypatch.setattr(simulation, "step", recording)
    result = simulation.simulate(scenario)
    assert type(result.lines) is tuple and len(result.lines) == len(logs) > 10
    for log, line in zip(logs, result.lines, strict=True):
        same(SimulatedLine(at=log.at, message=log.message), line)


@given(at=utc_instants)
def test_an_unchecked_wake_is_the_checked_one(at: datetime) -> None:
    same(Woke(now=at), new_woke(at))  # the driver's wake


durations = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(min_value=-10, max_value=10),
    st.floats(min_value=0, max_value=1e-5),  # rounds to no time at all
    st.floats(min_value=400 * 86_400 - 2, max_value=400 * 86_400 + 2),  # MAX_RESET_AHEAD
    st.integers(min_value=-5, max_value=10**12).map(float),
    st.sampled_from([0.0, -0.0, 1e-7, 1.0, 60.0, 13_872.0, 400 * 86_400.0, 1e9 * 86_400, math.inf,
                     math.nan]),
)


@given(seconds=durations, nows=st.lists(edge_instants, min_size=1, max_size=4))
@example(seconds=400 * 86_400.0, nows=[datetime(2026, 3, 29, 0, 30, tzinfo=UTC)])  # exactly MAX
@example(seconds=400 * 86_400.000001, nows=[datetime(2026, 3, 29, 0, 30, tzinfo=UTC)])
@example(seconds=1e-7, nows=[datetime(2026, 3, 29, 0, 30, tzinfo=UTC)])  # no time at all
@example(seconds=3_600.0, nows=[datetime(9999, 12, 31, 23, 30, tzinfo=UTC)])  # past the end
@example(seconds=math.nan, nows=[datetime(2026, 3, 29, 0, 30, tzinfo=UTC)])
def test_D_A6_a_duration_read_once_resolves_as_read_afresh(
    seconds: float, nows: list[datetime]
) -> None:
    resolve = after_seconds(seconds)
    for now in nows:
        assert resolve(now, UTC) == from_duration(seconds, now)
