"""Issue 25 item 3: how a usage reading seen anywhere — by this run's own call, or by another run
on the same account (`UsageObserved`, shared through Redis: docs/sharing.md) — joins the
readings. The rule (`registry.merge_usage`), per engine and window: the newest reading (by when
it was seen) wins; on a tie the higher utilization, the later window end, a read reset, this
run's own, then the smaller source name. The Redis script is held to the same function in
tests/e2e/test_sharing_redis.py."""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta
from functools import reduce

from helpers.clock import T0
from hypothesis import given
from hypothesis import strategies as st

from autodev_core import (
    Engine,
    Participant,
    Policy,
    RunStarted,
    SchedulerConfig,
    UsageObserved,
    UsageReading,
    initial_state,
    step,
)
from autodev_core.scheduler import EngineUsage
from autodev_core.scheduler.registry import merge_usage

M = timedelta(minutes=1)
CLAUDE = Engine("claude")


#: The instant the readings are joined at: some windows have reset by then (until 58-63 min).
NOW = T0 + 60 * M


@st.composite
def records(draw: st.DrawFn, window: str = "five_hour") -> EngineUsage:
    return EngineUsage(
        engine=CLAUDE,
        utilization=draw(st.sampled_from((0.2, 0.9, 0.97, 1.0))),
        window=window,
        until=T0 + draw(st.integers(58, 63)) * M,
        read=draw(st.booleans()),
        seen=T0 + draw(st.integers(0, 3)) * M,
        source=draw(st.sampled_from(("", "a", "b"))),
        threshold=draw(st.sampled_from((None, 0.9))),
    )


def newest(all_seen: list[EngineUsage], now: datetime) -> EngineUsage:
    """The rule, stated on its own: a reading whose window has not reset by `now` over one that
    has (A38; the Redis script drops a reset one); among those, the latest sighting; then the
    higher utilization, the later window end, a read reset, this run's own (no source), the
    smaller source name."""
    live = [r for r in all_seen if r.until > now]
    pool = live or all_seen
    best = max(r.seen for r in pool if r.seen is not None)
    tied = [r for r in pool if r.seen == best]
    tied = [r for r in tied if r.utilization == max(t.utilization for t in tied)]
    tied = [r for r in tied if r.until == max(t.until for t in tied)]
    tied = [r for r in tied if r.read == max(t.read for t in tied)]
    own = [r for r in tied if r.source == ""]
    tied = own or [r for r in tied if r.source == min(t.source for t in tied)]
    return max(tied, key=lambda r: -1 if r.threshold is None else r.threshold)


@given(a=records(), b=records(), c=records())
def test_the_merge_is_a_join(a: EngineUsage, b: EngineUsage, c: EngineUsage) -> None:
    def merge(x: EngineUsage | None, y: EngineUsage) -> EngineUsage:
        return merge_usage(x, y, NOW)

    assert merge(a, a) == a
    assert merge(merge(None, a), b) == merge(merge(None, b), a)
    assert merge(merge(a, b), c) == merge(a, merge(b, c))


@given(all_seen=st.lists(records(), min_size=1, max_size=5))
def test_any_order_of_arrival_keeps_the_newest_reading(all_seen: list[EngineUsage]) -> None:
    expected = newest(all_seen, NOW)
    for order in itertools.islice(itertools.permutations(all_seen), 24):
        got = reduce(lambda held, seen: merge_usage(held, seen, NOW), order, None)
        assert got == expected


def test_a_reading_whose_window_reset_gives_way_to_one_that_has_not() -> None:
    """A fresh clone's draw (issue 24; tests/shell/test_sharing_mirror.py): R1, seen later, whose
    window has reset, against R2, seen earlier, whose window has not: R2 counts, as Redis keeps
    it, whichever arrived first; and a reset one never replaces a live one."""
    dead = EngineUsage(engine=CLAUDE, utilization=0.5, window="seven_day", until=NOW,
                       read=False, seen=T0 + 3 * M, source="a")
    live = EngineUsage(engine=CLAUDE, utilization=0.5, window="seven_day", until=NOW + M,
                       read=False, seen=T0, source="a")
    assert merge_usage(dead, live, NOW) == live
    assert merge_usage(live, dead, NOW) == live
    before = NOW - 2 * M  # both live then: the newest sighting wins, as before
    assert merge_usage(live, dead, before) == dead


@st.composite
def observations(draw: st.DrawFn) -> UsageObserved:
    return UsageObserved(
        now=T0 + 10 * M,
        engine=CLAUDE,
        reading=UsageReading(
            provider="claude",
            utilization=draw(st.sampled_from((0.2, 0.9, 0.97))),
            window=draw(st.sampled_from(("five_hour", "seven_day"))),
            resets_at=draw(st.sampled_from((None, T0 + 5 * 60 * M))),
        ),
        seen=T0 + draw(st.integers(0, 9)) * M,
        source=draw(st.sampled_from(("laptop", "ci"))),
    )


@given(seen=st.lists(observations(), min_size=1, max_size=5, unique_by=lambda o: (
    o.reading.window, o.seen, o.reading.utilization)), data=st.data())
def test_shared_readings_in_any_order_end_in_the_same_readings(
    seen: list[UsageObserved], data: st.DataObject
) -> None:
    """Through the scheduler, knob on: readings other runs report, delivered in any order, leave
    the same records, one per engine and window, each the newest of its window."""
    team = (Participant(id="ana", provider="claude", failover=(Engine("codex"),)),)
    start, _ = step(initial_state(SchedulerConfig(team=team, policy=Policy(headroom=0.95))),
                    RunStarted(now=T0))
    order = data.draw(st.permutations(seen))
    ends = []
    for events in (seen, order):
        state = start
        for event in events:
            state, _ = step(state, event)
        ends.append(state.readings)
    assert ends[0] == ends[1]
    windows = {o.reading.window for o in seen}
    assert [r.window for r in ends[0]] == sorted(windows)
    for record in ends[0]:
        mine = [o for o in seen if o.reading.window == record.window]
        latest = max(o.seen for o in mine if o.seen is not None)
        assert record.seen == latest
        assert record.utilization == max(o.reading.utilization for o in mine if o.seen == latest)
