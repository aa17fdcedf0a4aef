"""SPEC A6, A38: durations and waits are elapsed time, whatever zone the caller's `now` carries.

The core computes instants in UTC; a zone is used only to read clock-time notices and to write
`<time>`. The examples are the night Lisbon falls back (2026-10-25: at 02:00 WEST the clocks go
back to 01:00 WET, so 01:00-01:59 happens twice). The numbers below (1 s after a first failure,
1 min before an unreachable provider is tried again, 1 h when claude gives no reset) are SPEC
A6/A27/A28's, written here on their own.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta, tzinfo
from functools import cache
from zoneinfo import ZoneInfo

from hypothesis import given
from hypothesis import strategies as st

from autodev_core import detect_limit
from autodev_core.detection.classification import LimitNotice
from autodev_core.engine import Engine
from autodev_core.participant import Participant
from autodev_core.scheduler import (
    CallEnded,
    Effect,
    Event,
    Log,
    MessageArrived,
    RunStarted,
    SchedulerConfig,
    SchedulerState,
    Sleep,
    Woke,
    initial_state,
    step,
)
from autodev_core.serialization import to_json
from autodev_core.simulation import simulate
from autodev_core.simulation.scenario import CallAnswer, Scenario, parse_scenario

LISBON = ZoneInfo("Europe/Lisbon")
#: 00:01 WEST on the night Lisbon falls back (23:01 UTC the day before).
FALL_BACK_0001 = datetime(2026, 10, 25, 0, 1, tzinfo=LISBON)


def elapsed(later: datetime, earlier: datetime) -> timedelta:
    """Real time between two instants (subtracting two datetimes of one zone object would give
    the wall-clock difference instead)."""
    return later.astimezone(UTC) - earlier.astimezone(UTC)


def local(at: datetime, zone: tzinfo) -> str:
    """How `at` reads on a wall clock in `zone`, with which of a repeated hour it is."""
    moment = at.astimezone(zone)
    return f"{moment:%Y-%m-%d %H:%M:%S} {moment.tzname()}"


# ------------------------------------------------------------------------------------------------
# Examples: the night Lisbon falls back


def test_A6_try_again_in_2_hours_at_0001_on_fall_back_night_is_the_second_0101() -> None:
    notice = detect_limit(
        "claude", stdout="Usage limit reached. Try again in 2 hours.", now=FALL_BACK_0001,
        local_tz=LISBON,
    )
    assert notice is not None and notice.reset_at is not None
    assert elapsed(notice.reset_at, FALL_BACK_0001) == timedelta(hours=2)
    assert local(notice.reset_at, LISBON) == "2026-10-25 01:01:00 WET"  # the second 01:01


def test_A6_agy_resets_in_duration_across_fall_back_is_elapsed_time() -> None:
    notice = detect_limit(
        "agy", stderr="Individual quota reached. Resets in 2h31m33s.", now=FALL_BACK_0001,
        local_tz=LISBON,
    )
    assert notice is not None and notice.reset_at is not None
    assert elapsed(notice.reset_at, FALL_BACK_0001) == timedelta(hours=2, minutes=31, seconds=33)


def test_A6_a_clock_time_notice_is_still_read_on_the_local_wall_clock() -> None:
    notice = detect_limit(
        "codex", stdout="You've hit your usage limit. Try again at 3:54 AM.", now=FALL_BACK_0001,
        local_tz=LISBON,
    )
    assert notice is not None and notice.reset_at is not None
    assert local(notice.reset_at, LISBON) == "2026-10-25 03:54:00 WET"


def test_A6_a_three_hour_call_from_0000_ends_at_0200_on_fall_back_night() -> None:
    scenario = parse_scenario(
        "start: 2026-10-25T00:00:00\ntimezone: Europe/Lisbon\nuntil: 2026-10-25T04:00:00\n"
        "team: [{id: ana, provider: claude}]\ncalls:\n  default: {post: ok, duration: 10800}\n"
    )
    assert list(simulate(scenario).render()) == [
        "2026-10-25T02:00:00 ana posted via claude",  # 00:00 WEST + 3 h = 02:00 WET
        "status: running",
    ]


def test_A6_A38_a_wait_from_a_local_now_across_fall_back_is_elapsed_time() -> None:
    config = SchedulerConfig(
        team=(Participant(id="ana", provider="claude"),), timezone="Europe/Lisbon"
    )
    first_0130 = datetime(2026, 10, 25, 1, 30, tzinfo=LISBON)  # fold=0: WEST, 00:30 UTC
    state, _ = step(initial_state(config), RunStarted(now=first_0130 - timedelta(minutes=1)))
    notice = LimitNotice(provider="claude", reset_at=None, text="Usage limit reached.")
    state, effects = step(
        state,
        CallEnded(now=first_0130, participant="ana", engine=Engine("claude"), kind="limit",
                  limit=notice),
    )
    sleep = next(e for e in effects if isinstance(e, Sleep))
    assert elapsed(sleep.until, first_0130) == timedelta(hours=1)  # A6: claude waits one hour
    assert local(sleep.until, LISBON) == "2026-10-25 01:30:00 WET"  # the second 01:30
    assert next(e.message for e in effects if isinstance(e, Log)) == "claude limited until 01:30"


def test_A6_a_simulated_limit_across_fall_back_wakes_two_real_hours_later() -> None:
    scenario = parse_scenario(
        "start: 2026-10-25T00:00:00\ntimezone: Europe/Lisbon\nuntil: 2026-10-25T03:00:00\n"
        "team: [{id: ana, provider: claude}]\n"
        "calls:\n  claude:\n    - {stdout: 'Usage limit reached. Try again in 2 hours.', exit: 1,"
        " duration: 60}\n"
    )
    result = simulate(scenario)
    posted = [line for line in result.lines if line.message == "ana posted via claude"]
    # The limit is seen at 00:01 WEST; the turn runs again two real hours later, at the second
    # 01:01, and posts a minute after that.
    assert posted and elapsed(posted[0].at, scenario.start) == timedelta(hours=2, minutes=2)


# ------------------------------------------------------------------------------------------------
# Properties: any zone of tzdata, any instant


def instants() -> st.SearchStrategy[datetime]:
    return st.datetimes(
        min_value=datetime(2000, 1, 1), max_value=datetime(2037, 12, 31)
    ).map(lambda naive: naive.replace(microsecond=0, tzinfo=UTC))


@cache
def clock_changes(zone: ZoneInfo, year: int) -> tuple[datetime, ...]:
    """The instants (UTC, to the second) at which `zone`'s offset changes during `year`."""
    found = []
    day = datetime(year, 1, 1, tzinfo=UTC)
    while day.year == year:
        low, high = day, day + timedelta(days=1)
        if low.astimezone(zone).utcoffset() != high.astimezone(zone).utcoffset():
            while high - low > timedelta(seconds=1):
                middle = low + (high - low) / 2
                if middle.astimezone(zone).utcoffset() == low.astimezone(zone).utcoffset():
                    low = middle
                else:
                    high = middle
            found.append(high.replace(microsecond=0))
        day += timedelta(days=1)
    return tuple(found)


@st.composite
def instants_near_a_clock_change(
    draw: st.DrawFn, zone: ZoneInfo, within: timedelta
) -> datetime:
    """Mostly an instant at most `within` before one of `zone`'s clock changes (where a wall-clock
    sum and an elapsed-time sum differ), else any instant (zones without changes included)."""
    instant = draw(instants())
    changes = clock_changes(zone, draw(st.integers(2000, 2037)))
    if not changes or draw(st.integers(0, 4)) == 0:
        return instant
    change = draw(st.sampled_from(changes))
    before = draw(st.integers(0, int(within.total_seconds())))
    return change - timedelta(seconds=before)


@given(zone=st.timezones(), seconds=st.integers(1, 48 * 3600), data=st.data())
def test_A6_a_written_duration_ends_exactly_that_much_elapsed_time_later(
    zone: ZoneInfo, seconds: int, data: st.DataObject
) -> None:
    instant = data.draw(instants_near_a_clock_change(zone, timedelta(seconds=seconds)))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    text = f"Individual quota reached. Resets in {hours}h{minutes}m{secs}s."
    results = []
    for now in (instant, instant.astimezone(zone)):
        notice = detect_limit("agy", stderr=text, now=now, local_tz=zone)
        assert notice is not None and notice.reset_at is not None
        assert elapsed(notice.reset_at, now) == timedelta(seconds=seconds)
        results.append(notice)
    assert results[0] == results[1] and to_json(results[0]) == to_json(results[1])


def _team_config(zone: str) -> SchedulerConfig:
    return SchedulerConfig(
        team=(
            Participant(id="ana", provider="claude", failover=(Engine("codex"),)),
            Participant(id="bob", provider="agy"),
        ),
        timezone=zone,
    )


@given(zone=st.timezones(), data=st.data())
def test_A6_A27_A28_waits_from_a_local_now_end_exactly_their_length_later(
    zone: ZoneInfo, data: st.DataObject
) -> None:
    instant = data.draw(instants_near_a_clock_change(zone, timedelta(hours=1)))
    now = instant.astimezone(zone)
    one = SchedulerConfig(team=(Participant(id="ana", provider="claude"),), timezone=zone.key)
    for kind, wait in (
        ("exit", timedelta(seconds=1)),  # A28: 1 s after the first failure
        ("network", timedelta(minutes=1)),  # A27: tried again after 1 min
        ("limit", timedelta(hours=1)),  # A6: claude with no readable reset waits one hour
    ):
        a_minute_before = (instant - timedelta(minutes=1)).astimezone(zone)
        started, _ = step(initial_state(one), RunStarted(now=a_minute_before))
        limit = LimitNotice(provider="claude", reset_at=None, text="x") if kind == "limit" else None
        _, effects = step(
            started,
            CallEnded(
                now=now, participant="ana", engine=Engine("claude"),
                kind=kind,  # type: ignore[arg-type]
                limit=limit, exit_code=1 if kind == "exit" else None,
            ),
        )
        sleep = next(e for e in effects if isinstance(e, Sleep))
        assert elapsed(sleep.until, now) == wait, kind


class _Twins:
    """The same run fed twice: once with `now` in UTC, once with the same instants in `zone`."""

    def __init__(self, zone: ZoneInfo) -> None:
        self.zone = zone
        config = _team_config(zone.key)
        self.states: list[SchedulerState] = [initial_state(config), initial_state(config)]
        self.effects: list[tuple[Effect, ...]] = [(), ()]

    def feed(self, make: Callable[[datetime, tzinfo], Event], instant: datetime) -> None:
        """`make(now, zone)` builds the event; its instants are given in `zone`."""
        for index, zone in enumerate((UTC, self.zone)):
            self.states[index], self.effects[index] = step(
                self.states[index], make(instant.astimezone(zone), zone)
            )
        utc, zoned = self.states
        assert to_json(utc) == to_json(zoned)  # the same state, down to the offsets written
        assert to_json(self.effects[0], as_type=tuple[Effect, ...]) == to_json(
            self.effects[1], as_type=tuple[Effect, ...]
        )
        assert [e.message for e in self.effects[0] if isinstance(e, Log)] == [
            e.message for e in self.effects[1] if isinstance(e, Log)
        ]


OUTCOMES = st.sampled_from(("post", "limit", "limit-reset", "network", "exit", "timeout", "empty"))


@given(
    zone=st.timezones(),
    data=st.data(),
    script=st.lists(
        st.tuples(OUTCOMES, st.integers(0, 6 * 3600), st.booleans()), min_size=1, max_size=12
    ),
)
def test_A6_results_do_not_depend_on_the_zone_the_callers_now_carries(
    zone: ZoneInfo, data: st.DataObject, script: list[tuple[str, int, bool]]
) -> None:
    instant = data.draw(instants_near_a_clock_change(zone, timedelta(hours=6)))
    twins = _Twins(zone)
    now = instant
    twins.feed(lambda at, _zone: RunStarted(now=at), now)
    for outcome, seconds, message in script:
        state = twins.states[0]
        if state.status in ("paused", "stopped"):
            break
        if state.call is None:
            assert state.wait_until is not None
            if message and state.status == "backing_off":
                twins.feed(lambda at, _zone: MessageArrived(now=at), now)
            else:
                now = max(now, state.wait_until)
                twins.feed(lambda at, _zone: Woke(now=at), now)
            continue
        now += timedelta(seconds=seconds)
        twins.feed(_ending(state, outcome, now, seconds), now)


def _ending(
    state: SchedulerState, outcome: str, now: datetime, seconds: int
) -> Callable[[datetime, tzinfo], Event]:
    """How the call in flight ends: the same instants, written in the zone given."""
    call = state.call
    assert call is not None
    kind = "limit" if outcome.startswith("limit") else outcome
    reset = now + timedelta(seconds=seconds + 60) if outcome == "limit-reset" else None

    def make(at: datetime, zone: tzinfo) -> Event:
        limit = None
        if kind == "limit":
            limit = LimitNotice(
                provider=call.engine.provider,
                reset_at=None if reset is None else reset.astimezone(zone),
                text="x",
            )
        return CallEnded(
            now=at, participant=call.participant, engine=call.engine,
            kind=kind,  # type: ignore[arg-type]
            posted=kind == "post", limit=limit, exit_code=1 if kind == "exit" else None,
        )

    return make


@given(zone=st.timezones(), seconds=st.integers(1, 30 * 3600), data=st.data())
def test_A6_a_simulated_call_ends_exactly_its_duration_later_in_any_zone(
    zone: ZoneInfo, seconds: int, data: st.DataObject
) -> None:
    instant = data.draw(instants_near_a_clock_change(zone, timedelta(seconds=seconds)))
    start = instant.astimezone(zone)
    scenario = Scenario(
        start=start,
        timezone=zone.key,
        team=(Participant(id="ana", provider="claude"),),
        default=CallAnswer(post="ok", duration=timedelta(seconds=seconds)),
        until=instant + timedelta(seconds=seconds + seconds // 2 + 1),
    )
    result = simulate(scenario)
    assert result.lines and result.lines[0].message == "ana posted via claude"
    assert elapsed(result.lines[0].at, start) == timedelta(seconds=seconds)
    end = (instant + timedelta(seconds=seconds)).astimezone(zone)
    assert result.render()[0] == f"{end:%Y-%m-%dT%H:%M:%S} ana posted via claude"
