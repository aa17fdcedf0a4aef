"""Issue 15 item 2: the scheduler states the limit test once, and every decision that asks "is
this engine limited now?" agrees with it at the boundary (A8; A38: a reset at `t` has passed
when `now >= t`). An engine limited until R is driven through each decision that asks — a turn
start on its own chain, the search for a colleague, the wait for the first entry back, the
reason a turn is handed over, the A23 line on coming back — one microsecond before R, at R, and
one microsecond after. (A copy of the test once inlined for speed used `<` where the other used
`<=`, and only one copy was tested.)"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import attrs
import pytest
from helpers.scheduler_runs import member

from autodev_core.detection.classification import LimitNotice
from autodev_core.engine import Engine
from autodev_core.participant import Participant
from autodev_core.scheduler import (
    CallEnded,
    Effect,
    Event,
    LimitObserved,
    Log,
    PauseRequested,
    RunStarted,
    SchedulerConfig,
    SchedulerState,
    Sleep,
    initial_state,
    step,
)
from autodev_core.scheduler.state import EngineLimit, Outage

RESET = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
TICK = timedelta(microseconds=1)
#: (offset from the reset, whether the engine is still limited then): A38.
AROUND = [(-TICK, True), (timedelta(0), False), (TICK, False)]


def started(*team: Participant, limits: tuple[EngineLimit, ...] = (),
            outages: tuple[Outage, ...] = ()) -> SchedulerState:
    state = initial_state(SchedulerConfig(team=team))
    return attrs.evolve(state, limits=limits, outages=outages)


def feed(state: SchedulerState, event: Event) -> tuple[SchedulerState, list[str], list[Effect]]:
    state, effects = step(state, event)
    return state, [e.message for e in effects if isinstance(e, Log)], list(effects)


def runner(state: SchedulerState) -> tuple[str, str] | None:
    return None if state.call is None else (state.call.participant, str(state.call.engine))


@pytest.mark.parametrize(("offset", "limited"), AROUND)
def test_a_turn_start_on_its_own_chain(offset: timedelta, limited: bool) -> None:
    state = started(member("ana", "claude", "codex"),
                    limits=(EngineLimit(engine=Engine("claude"), until=RESET),))
    state, lines, _ = feed(state, RunStarted(now=RESET + offset))
    assert lines == []  # A24: the earliest free entry is taken silently
    assert runner(state) == (("ana", "codex") if limited else ("ana", "claude"))


@pytest.mark.parametrize(("offset", "limited"), AROUND)
def test_the_search_for_a_colleague(offset: timedelta, limited: bool) -> None:
    state = started(member("ana", "claude"), member("bob", "agy"),
                    limits=(EngineLimit(engine=Engine("agy"), until=RESET),))
    state, _, _ = feed(state, RunStarted(now=RESET - timedelta(hours=1)))
    assert runner(state) == ("ana", "claude")
    now = RESET + offset
    state, lines, effects = feed(state, CallEnded(
        now=now, participant="ana", engine=Engine("claude"), kind="limit",
        limit=LimitNotice("claude", now + timedelta(hours=3), "limit")))
    if limited:  # nobody is free: wait for agy, back first at 12:00 (A18)
        assert runner(state) is None
        assert lines[-1] == "every participant limited — waiting for agy, back first at 12:00"
        assert [e.until for e in effects if isinstance(e, Sleep)] == [RESET]
    else:
        assert lines[-1] == "ana is rate limited — @bob takes the turn"
        assert runner(state) == ("bob", "agy")


@pytest.mark.parametrize(("offset", "limited"), AROUND)
def test_the_wait_for_the_first_entry_back(offset: timedelta, limited: bool) -> None:
    state = started(member("ana", "claude"),
                    limits=(EngineLimit(engine=Engine("claude"), until=RESET),))
    state, lines, effects = feed(state, RunStarted(now=RESET + offset))
    if limited:
        assert lines == ["every participant limited — waiting for claude, back first at 12:00"]
        assert [e.until for e in effects if isinstance(e, Sleep)] == [RESET]
    else:
        assert lines == []
        assert runner(state) == ("ana", "claude")


@pytest.mark.parametrize(("offset", "limited"), AROUND)
def test_the_reason_a_turn_is_handed_over(offset: timedelta, limited: bool) -> None:
    """claude is both limited until R and unreachable until later: before R the turn is handed
    over because ana is limited (A15); from R on, because claude cannot be reached (A36)."""
    state = started(
        member("ana", "claude"), member("bob", "agy"),
        limits=(EngineLimit(engine=Engine("claude"), until=RESET),),
        outages=(Outage(provider="claude", retry_at=RESET + timedelta(hours=1)),),
    )
    state, lines, _ = feed(state, RunStarted(now=RESET + offset))
    assert runner(state) == ("bob", "agy")
    assert lines == (["ana is rate limited — @bob takes the turn"] if limited
                     else ["ana cannot reach claude — @bob takes the turn"])


@pytest.mark.parametrize(("offset", "limited"), AROUND)
def test_coming_back_to_an_entry_passed_because_of_a_limit(
    offset: timedelta, limited: bool
) -> None:
    """ana passed claude while it was limited; the next turn start at R + offset takes claude
    back (with the A23 line) exactly when the limit is over."""
    state = started(member("ana", "claude", "codex"),
                    limits=(EngineLimit(engine=Engine("claude"), until=RESET),))
    state, _, _ = feed(state, RunStarted(now=RESET - timedelta(minutes=5)))
    assert runner(state) == ("ana", "codex")
    state, lines, _ = feed(state, CallEnded(
        now=RESET + offset, participant="ana", engine=Engine("codex"), kind="post", posted=True))
    if limited:
        assert lines == ["ana posted via codex"]
        assert runner(state) == ("ana", "codex")
    else:
        assert lines == ["ana posted via codex",
                         "ana: limit lifted — back on its primary provider"]
        assert runner(state) == ("ana", "claude")


@pytest.mark.parametrize("ago", [timedelta(hours=1), TICK, timedelta(0)])
def test_a_read_reset_that_has_passed_ends_a_defaulted_limit_without_a_line(
    ago: timedelta,
) -> None:
    """Issue 14 with A38: another run read a reset that has already passed (or passes now)
    while this run holds claude's defaulted hour. The read reset replaces the default (the
    limit is over), and nothing announces claude "limited until" a time already gone. (It
    said `claude limited until 14:54 (reported by laptop)` at 16:03.)"""
    now = RESET
    state = started(member("ana", "claude"), member("bob", "agy"))
    state, _, _ = feed(state, RunStarted(now=now - timedelta(hours=3)))
    state, _, _ = feed(state, PauseRequested(now=now - timedelta(hours=2)))
    state, lines, _ = feed(state, LimitObserved(
        now=now, engine=Engine("claude"), until=now + timedelta(hours=1), read=False,
        seen=now - timedelta(hours=3), source="ci-runner"))
    assert lines == ["claude limited until 13:00 (reported by ci-runner)"]
    state, lines, effects = feed(state, LimitObserved(
        now=now, engine=Engine("claude"), until=now - ago, read=True,
        seen=now - timedelta(hours=2), source="laptop"))
    assert lines == []
    assert [r.until for r in state.limits] == [now - ago]  # recorded, over (A38)
    assert all(e.until is None or e.until >= now for e in effects if isinstance(e, Log))
