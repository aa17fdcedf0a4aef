"""`next_entries`: the lane entry each participant's next turn would start on (A23, A24, A38),
the core's answer that `autodev panel` marks as the next candidate (issue 23: no policy in the
panel). The model below states the rule on its own; a second test checks it is what `step`
then does."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import attrs
from hypothesis import given
from hypothesis import strategies as st

from autodev_core import (
    CallEnded,
    Engine,
    LimitNotice,
    RunStarted,
    SchedulerConfig,
    StartCall,
    initial_state,
    next_entries,
    parse_participant,
    step,
)
from autodev_core.scheduler import EngineLimit, Outage, SchedulerState

NOW = datetime(2026, 12, 5, 9, 0, tzinfo=UTC)
ENGINES = ("claude", "codex", "agy", "claude:opus", "codex:gpt-5")
CHAINS = {"ana": ("claude", ["codex", "agy"]), "rui": ("codex", ["claude:opus"]),
          "eva": ("agy", [])}


def _config() -> SchedulerConfig:
    team = [
        parse_participant(f"---\nprovider: {provider}\nfailover: [{', '.join(chain)}]\n---\nGo.",
                          id=pid)
        for pid, (provider, chain) in CHAINS.items()
    ]
    return SchedulerConfig(team=team, timezone="UTC")


offsets = st.integers(min_value=-120, max_value=120).map(lambda m: timedelta(minutes=m))
limits = st.dictionaries(st.sampled_from(ENGINES), offsets, max_size=len(ENGINES))
outages = st.dictionaries(st.sampled_from(("claude", "codex", "agy")), offsets, max_size=3)


def _state(limited: dict[str, timedelta], out: dict[str, timedelta]) -> SchedulerState:
    state = initial_state(_config())
    return attrs.evolve(
        state,
        limits=tuple(EngineLimit(Engine.parse(name), NOW + delta)
                     for name, delta in sorted(limited.items())),
        outages=tuple(Outage(provider, NOW + delta) for provider, delta in sorted(out.items())),
    )


def _model(lane: tuple[Engine, ...], limited: dict[str, timedelta],
           out: dict[str, timedelta]) -> int | None:
    """A23/A24 as written: the first entry whose engine has no reset still ahead (A38: a
    reset at t has passed when now >= t) and whose provider has no retry still ahead."""
    for position, engine in enumerate(lane):
        held = limited.get(str(engine))
        down = out.get(engine.provider)
        if (held is None or held <= timedelta(0)) and (down is None or down <= timedelta(0)):
            return position
    return None


@given(limits, outages)
def test_A23_A24_the_next_entry_is_the_first_neither_limited_nor_unreachable(
    limited: dict[str, timedelta], out: dict[str, timedelta]
) -> None:
    state = _state(limited, out)
    expected = tuple(_model(lane, limited, out) for lane in state.config.lanes)
    assert next_entries(state, NOW) == expected
    assert state.limits == _state(limited, out).limits  # nothing changed


@given(limits)
def test_A23_the_turn_starts_on_the_entry_next_entries_names(limited: dict[str, timedelta]) -> None:
    """What the panel shows is what happens: the owed turn's call goes to that entry."""
    state = _state({k: v for k, v in limited.items()}, {})
    position = next_entries(state, NOW)[state.due]
    _after, effects = step(state, RunStarted(now=NOW))
    calls = [e for e in effects if isinstance(e, StartCall)]
    if position is None:
        assert all(c.participant != state.config.team[state.due].id for c in calls)
    else:
        assert calls, effects
        assert calls[0].participant == state.config.team[state.due].id
        assert calls[0].engine == state.config.lanes[state.due][position]


def test_A38_a_reset_at_now_has_passed() -> None:
    state = _state({"claude": timedelta(0), "codex": timedelta(minutes=1)}, {})
    assert next_entries(state, NOW) == (0, 1, 0)
    assert next_entries(state, NOW - timedelta(seconds=1)) == (2, 1, 0)


@given(limits, outages, st.integers(min_value=1, max_value=240).map(lambda m: timedelta(minutes=m)))
def test_A38_next_entries_judges_at_the_now_asked_not_at_the_last_event(
    limited: dict[str, timedelta], out: dict[str, timedelta], lag: timedelta
) -> None:
    """A status or a panel asks between events: the state's last event was `lag` ago, and a
    reset (or retry time) that fell between it and `now` has passed by `now` (A38), so the
    entry counts as free, as the next turn start will find it (A23)."""
    state = attrs.evolve(_state(limited, out), last_event_at=NOW - lag)
    expected = tuple(_model(lane, limited, out) for lane in state.config.lanes)
    assert next_entries(state, NOW) == expected


def test_A23_a_limit_lifted_after_the_last_event_counts_as_lifted() -> None:
    """Through real steps: ana's claude is limited until 10:00 at 09:01, the state's last
    event; asked at 10:30, ana's next turn is back on claude; asked at 09:30, still on codex."""
    state, effects = step(initial_state(_config()), RunStarted(now=NOW))
    (call,) = [e for e in effects if isinstance(e, StartCall)]
    assert (call.participant, str(call.engine)) == ("ana", "claude")
    notice = LimitNotice(provider="claude", reset_at=NOW + timedelta(hours=1), text="x")
    state, _ = step(state, CallEnded(now=NOW + timedelta(minutes=1), participant="ana",
                                     engine=Engine("claude"), kind="limit", limit=notice))
    assert state.last_event_at == NOW + timedelta(minutes=1)
    assert next_entries(state, NOW + timedelta(minutes=30))[0] == 1
    assert next_entries(state, NOW + timedelta(minutes=90))[0] == 0
