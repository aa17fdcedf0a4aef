"""A6: a reset written as a duration is read once and resolved at each instant it is asked
about (`simulate` reads a scenario's answers once): at any instant it resolves as reading the
duration afresh does, also near both ends of the calendar and across zones."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

from hypothesis import example, given
from hypothesis import strategies as st

from autodev_core.detection._resets import after_seconds, from_duration

ZONES = [UTC, ZoneInfo("Europe/Lisbon"), ZoneInfo("America/New_York"),
         ZoneInfo("Australia/Lord_Howe"), timezone(timedelta(hours=-5)),
         timezone(timedelta(hours=5, minutes=30))]
instants = st.datetimes(
    min_value=datetime(2025, 1, 1), max_value=datetime(2031, 12, 31),
    timezones=st.sampled_from(ZONES),
)
# Near both ends of the calendar too, where adding a duration overflows.
edge_instants = st.one_of(
    instants,
    st.datetimes(min_value=datetime(9999, 12, 1), max_value=datetime(9999, 12, 31, 23, 59),
                 timezones=st.sampled_from(ZONES)),
    st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(1, 1, 31),
                 timezones=st.sampled_from(ZONES)),
)


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
