"""Issue 14 (core): a limit another run saw joins the registry by the rule a local notice follows.

The model here states the rule on its own: in time order, a limit seen while none is active
starts one; while one is active, a reset read from a notice beats one the A6 default stood in for
(claude: one hour), and otherwise the later reset wins. Whatever order local notices and other
runs' observations arrive in, the registry must end where that time-ordered fold ends.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import attrs
from helpers.clock import T0
from hypothesis import given
from hypothesis import strategies as st

from autodev_core.detection.classification import LimitNotice
from autodev_core.engine import Engine
from autodev_core.participant import Participant
from autodev_core.scheduler import (
    Call,
    CallEnded,
    LimitObserved,
    Log,
    SchedulerConfig,
    SchedulerState,
    Sleep,
    StartCall,
    Woke,
    initial_state,
    step,
)
from autodev_core.serialization import from_json, from_yaml, to_json, to_yaml

CLAUDE = Engine("claude")
#: A6, stated here: a claude notice without a readable reset keeps it out for one hour.
CLAUDE_DEFAULT = timedelta(hours=1)


def at(hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 12, 1, hour, minute, tzinfo=UTC)


def team(*members: Participant) -> SchedulerState:
    return initial_state(SchedulerConfig(team=members))


def lines(effects: tuple[object, ...]) -> list[str]:
    return [e.message for e in effects if isinstance(e, Log)]


# ------------------------------------------------------------------------------------------------
# The property: order of arrival does not matter (issue 14)


@attrs.frozen
class Sighting:
    """One limit seen: by this run (`local`: delivered as a call's notice at `seen`) or by
    another run (delivered `delay` later as a LimitObserved)."""

    local: bool
    seen: datetime
    until: datetime
    read: bool
    delay: timedelta
    source: str

    @property
    def delivered(self) -> datetime:
        return self.seen if self.local else self.seen + self.delay


@st.composite
def sightings(draw: st.DrawFn) -> Sighting:
    local = draw(st.booleans())
    seen = T0 + timedelta(minutes=draw(st.integers(0, 240)))
    read = draw(st.booleans())
    until = seen + (timedelta(minutes=draw(st.integers(1, 180))) if read else CLAUDE_DEFAULT)
    delay = timedelta(0) if local else timedelta(minutes=draw(st.integers(0, 120)))
    return Sighting(local, seen, until, read, delay, draw(st.sampled_from(("laptop", "ci"))))


def model(all_seen: list[Sighting], at_end: datetime) -> tuple[datetime, bool] | None:
    """The rule, folded in time order: the (reset, read) active at `at_end`, if any."""
    record: tuple[datetime, bool] | None = None
    for s in sorted(all_seen, key=lambda s: s.seen):
        if record is None or s.seen >= record[0]:
            record = (s.until, s.read)  # nothing active when it was seen: a new limit
        elif s.read and not record[1]:
            record = (s.until, True)  # a read reset replaces a defaulted one, even earlier
        elif s.read == record[1] and s.until > record[0]:
            record = (s.until, s.read)  # otherwise the reset only moves later
    if record is None or record[0] <= at_end:
        return None
    return record


def deliver(state: SchedulerState, s: Sighting) -> SchedulerState:
    """Feed one sighting to a paused run (it learns, decides nothing)."""
    now = s.delivered
    if s.local:
        call = Call(participant="ana", engine=CLAUDE, started_at=now, turn_owner="ana")
        state = attrs.evolve(state, call=call)
        notice = LimitNotice(provider="claude", reset_at=s.until if s.read else None, text="x")
        event: CallEnded | LimitObserved = CallEnded(
            now=now, participant="ana", engine=CLAUDE, kind="limit", limit=notice
        )
    else:
        event = LimitObserved(
            now=now, engine=CLAUDE, until=s.until, read=s.read, seen=s.seen, source=s.source
        )
    new, _effects = step(state, event)
    # A recorded reset never moves earlier, except a defaulted one replaced by a read one.
    old = [r for r in state.limits if r.until > now]
    for record in old:
        for after in new.limits:
            if after.engine == record.engine and after.until < record.until:
                assert after.read and not record.read, (record, after)
    return new


@given(
    all_seen=st.lists(sightings(), min_size=1, max_size=8),
    shuffle=st.randoms(use_true_random=False),
)
def test_any_interleaving_ends_where_the_time_ordered_rule_ends(
    all_seen: list[Sighting], shuffle: object
) -> None:
    paused = attrs.evolve(team(Participant(id="ana", provider="claude")), status="paused")
    # Deliveries happen in time order of arrival; equal arrival instants in any order.
    order = list(all_seen)
    shuffle.shuffle(order)  # type: ignore[attr-defined]
    order.sort(key=lambda s: s.delivered)
    state = paused
    for s in order:
        state = deliver(state, s)
    at_end = max(s.delivered for s in all_seen)
    active = [(r.until, r.read) for r in state.limits if r.until > at_end]
    expected = model(all_seen, at_end)
    assert active == ([] if expected is None else [expected])
    # Who saw it is one of the sightings that say exactly this.
    for record in state.limits:
        if record.until > at_end:
            assert any(
                (s.until, s.read) == (record.until, record.read)
                and record.source == ("" if s.local else s.source)
                for s in all_seen
            )


@given(all_seen=st.lists(sightings(), min_size=2, max_size=6), data=st.data())
def test_observations_at_one_instant_commute(all_seen: list[Sighting], data: st.DataObject) -> None:
    """Delivered together (as the turn-start read of the registry does), any order is the same
    registry, record for record."""
    now = max(s.seen for s in all_seen)
    peers = [attrs.evolve(s, local=False, delay=now - s.seen) for s in all_seen]
    paused = attrs.evolve(team(Participant(id="ana", provider="claude")), status="paused")
    first = paused
    for s in peers:
        first = deliver(first, s)
    second = paused
    for s in data.draw(st.permutations(peers)):
        second = deliver(second, s)
    assert first.limits == second.limits


# ------------------------------------------------------------------------------------------------
# The rules, one example each


def peer(now: datetime, until: datetime, *, read: bool = True, engine: Engine = CLAUDE,
         seen: datetime | None = None, source: str = "laptop") -> LimitObserved:
    return LimitObserved(now=now, engine=engine, until=until, read=read, seen=seen, source=source)


def test_A8_a_peer_limit_is_routed_around_at_turn_start() -> None:
    state, _ = step(team(Participant(id="ana", provider="claude", failover=(Engine("codex"),)),
                         Participant(id="bob", provider="codex")), _start())
    # ana's claude call is in flight; a peer reports claude limited: the call is not touched.
    state, effects = step(state, peer(at(9, 1), at(12)))
    assert lines(effects) == ["claude limited until 12:00 (reported by laptop)"]
    assert state.call is not None and state.call.engine == CLAUDE and state.status == "running"
    # ana posts; bob's turn on codex; then ana's next turn starts on codex silently (A24).
    state, effects = step(state, CallEnded(now=at(9, 2), participant="ana", engine=CLAUDE,
                                           kind="post", posted=True))
    state, effects = step(state, CallEnded(now=at(9, 3), participant="bob",
                                           engine=Engine("codex"), kind="post", posted=True))
    starts = [e for e in effects if isinstance(e, StartCall)]
    assert [(s.participant, str(s.engine)) for s in starts] == [("ana", "codex")]


def _start() -> object:
    from autodev_core.scheduler import RunStarted

    return RunStarted(now=T0)


def _waiting_on_default() -> SchedulerState:
    """ana alone on claude met a notice with no readable reset at 09:01: waits until 10:01."""
    state, _ = step(team(Participant(id="ana", provider="claude")), _start())  # type: ignore[arg-type]
    notice = LimitNotice(provider="claude", reset_at=None, text="limit")
    state, _ = step(state, CallEnded(now=at(9, 1), participant="ana", engine=CLAUDE,
                                     kind="limit", limit=notice))
    assert state.status == "rate_limited" and state.wait_until == at(10, 1)
    return state


def test_a_read_reset_from_a_peer_wakes_a_defaulted_wait_early() -> None:
    state = _waiting_on_default()
    state, effects = step(state, peer(at(9, 10), at(9, 30), seen=at(9, 5)))
    assert lines(effects) == [
        "claude limited until 09:30 (reported by laptop)",
        "every participant limited — waiting for claude, back first at 09:30",
    ]
    sleeps = [e for e in effects if isinstance(e, Sleep)]
    assert [s.until for s in sleeps] == [at(9, 30)] and state.wait_until == at(9, 30)
    # A23: at the reset the limit is lifted and ana runs on claude — no probe call before it.
    state, effects = step(state, Woke(now=at(9, 30)))
    starts = [e for e in effects if isinstance(e, StartCall)]
    assert [str(s.engine) for s in starts] == ["claude"] and state.limits == ()


def test_a_read_reset_already_past_ends_a_defaulted_wait_at_once() -> None:
    state = _waiting_on_default()
    state, effects = step(state, peer(at(9, 40), at(9, 30), seen=at(9, 5)))
    assert [str(e.engine) for e in effects if isinstance(e, StartCall)] == ["claude"]
    assert state.status == "running"


def test_a_defaulted_peer_reset_never_moves_a_read_one() -> None:
    state = _waiting_on_default()
    state, _ = step(state, peer(at(9, 10), at(9, 30), seen=at(9, 5)))
    state, effects = step(state, peer(at(9, 11), at(10, 11), read=False, seen=at(9, 11)))
    assert lines(effects) == [] and state.wait_until == at(9, 30)
    assert [e.until for e in effects if isinstance(e, Sleep)] == [at(9, 30)]


def test_a_later_peer_reset_moves_the_wait_later_and_an_earlier_one_does_not() -> None:
    state, _ = step(team(Participant(id="ana", provider="claude")), _start())  # type: ignore[arg-type]
    notice = LimitNotice(provider="claude", reset_at=at(11), text="limit")
    state, _ = step(state, CallEnded(now=at(9, 1), participant="ana", engine=CLAUDE,
                                     kind="limit", limit=notice))
    state, effects = step(state, peer(at(9, 5), at(10)))
    assert lines(effects) == [] and state.wait_until == at(11)
    state, effects = step(state, peer(at(9, 6), at(12)))
    assert lines(effects)[0] == "claude limited until 12:00 (reported by laptop)"
    assert state.wait_until == at(12)


def test_an_observation_that_changes_nothing_writes_nothing() -> None:
    state = _waiting_on_default()
    state, _ = step(state, peer(at(9, 10), at(9, 30), seen=at(9, 5)))
    again, effects = step(state, peer(at(9, 11), at(9, 30), seen=at(9, 5)))
    assert lines(effects) == [] and again.limits == state.limits


def test_a_reset_from_an_older_limit_delivered_late_changes_nothing() -> None:
    """A read reset seen at 09:05 for 09:20 arrives after a new limit seen at 09:30."""
    state = _waiting_on_default()
    state, _ = step(state, Woke(now=at(10, 1)))  # lifted at the default; ana runs again
    notice = LimitNotice(provider="claude", reset_at=None, text="limit")
    state, _ = step(state, CallEnded(now=at(10, 2), participant="ana", engine=CLAUDE,
                                     kind="limit", limit=notice))
    state, effects = step(state, peer(at(10, 3), at(10, 1, ), seen=at(9, 5)))
    assert lines(effects) == [] and state.wait_until == at(11, 2)


def test_a_peer_limit_that_has_passed_is_kept_silently_until_lifted() -> None:
    state = attrs.evolve(team(Participant(id="ana", provider="claude")), status="paused")
    state, effects = step(state, peer(at(10), at(9, 30)))
    assert effects == () and all(r.until <= at(10) for r in state.limits)
    # ... where it still outranks a defaulted sighting of the same limit arriving after it.
    state, effects = step(state, peer(at(10), at(10, 20), read=False, seen=at(9, 20)))
    assert effects == () and all(r.until <= at(10) for r in state.limits)


def test_A30_a_failure_wait_is_brought_forward_to_a_peer_limits_return() -> None:
    base = team(Participant(id="ana", provider="claude"), Participant(id="bob", provider="codex"))
    state = attrs.evolve(base, status="backing_off", wait_until=at(10), failures=6)
    state, effects = step(state, peer(at(9, 5), at(9, 30), engine=Engine("codex")))
    assert state.status == "backing_off" and state.wait_until == at(9, 30)
    assert [(e.until, e.wakes_on_message) for e in effects if isinstance(e, Sleep)] == [
        (at(9, 30), True)
    ]
    # A reset after the failure wait's end leaves it where it was.
    state, effects = step(state, peer(at(9, 6), at(11), engine=Engine("claude")))
    assert state.wait_until == at(9, 30)


def test_paused_runs_learn_and_decide_nothing() -> None:
    state = attrs.evolve(team(Participant(id="ana", provider="claude")), status="paused")
    state, effects = step(state, peer(at(9), at(10), read=False, seen=at(9)))
    assert state.status == "paused"
    assert [(str(r.engine), r.until, r.read, r.source) for r in state.limits] == [
        ("claude", at(10), False, "laptop")
    ]
    assert not [e for e in effects if isinstance(e, (StartCall, Sleep))]


def test_0_3_the_event_and_the_peer_record_round_trip() -> None:
    from autodev_core.scheduler import Event

    event = peer(at(9), at(10), read=False, seen=at(8, 59), source="ci-runner")
    assert from_json(to_json(event, as_type=Event), Event) == event
    assert from_yaml(to_yaml(event, as_type=Event), Event) == event
    state = attrs.evolve(team(Participant(id="ana", provider="claude")), status="paused")
    state, _ = step(state, event)
    assert from_json(to_json(state), SchedulerState) == state


def test_an_observation_without_a_source_or_with_a_naive_time_cannot_be_built() -> None:
    import pytest

    with pytest.raises(ValueError):
        LimitObserved(now=at(9), engine=CLAUDE, until=at(10), source=" ")
    with pytest.raises(ValueError):
        LimitObserved(now=at(9), engine=CLAUDE, until=at(10).replace(tzinfo=None))


# ------------------------------------------------------------------------------------------------
# `autodev simulate`: a scenario can say that another run reports a limit at time t


SHARED = """\
start: 2026-12-01T09:00:00
timezone: Europe/Lisbon
installed: [claude, codex]
until: 2026-12-01T10:30:00
team:
  - {id: ana, provider: claude, failover: [codex]}
  - {id: rui, provider: claude}
calls:
  claude:
    - {stdout: "Claude AI usage limit reached", exit: 1, duration: 30}
  default: {post: ok, duration: 600}
peers:
  - {at: 2026-12-01T09:05:00, engine: claude, reset: 2026-12-01T09:40:00, source: laptop}
  - {at: 2026-12-01T09:06:00, engine: codex}
"""


def test_simulate_learns_limits_other_runs_report() -> None:
    from autodev_core.simulation import simulate
    from autodev_core.simulation.scenario import parse_scenario

    out = simulate(parse_scenario(SHARED)).render()
    # claude defaulted to 10:00 (A6, one hour); the read 09:40 reported by laptop replaces it;
    # codex reported with no reset is out for codex's 30 minutes (A6) from 09:06.
    assert out[:9] == (
        "2026-12-01T09:00:30 claude limited until 10:00",
        "2026-12-01T09:00:30 ana: claude limited → codex",
        "2026-12-01T09:05:00 claude limited until 09:40 (reported by laptop)",
        "2026-12-01T09:06:00 codex limited until 09:36 (reported by another run)",
        "2026-12-01T09:10:30 ana posted via codex",
        "2026-12-01T09:10:30 every participant limited — waiting for codex, back first at 09:36",
        "2026-12-01T09:36:00 rui is rate limited — @ana takes the turn",
        "2026-12-01T09:46:00 ana posted via codex",
        "2026-12-01T09:46:00 ana: limit lifted — back on its primary provider",
    )


def test_a_report_at_the_instant_of_a_wake_is_learned_first() -> None:
    from autodev_core.simulation import simulate
    from autodev_core.simulation.scenario import parse_scenario

    text = """\
start: 2026-12-01T09:00:00
timezone: UTC
until: 2026-12-01T12:00:00
team: [{id: ana, provider: claude}]
calls:
  claude: [{stdout: "Claude AI usage limit reached|1796117400", exit: 1}]
peers: [{at: 2026-12-01T09:30:00, engine: claude}]
"""
    out = simulate(parse_scenario(text)).render()
    # The read reset is 09:30; the report at 09:30 (no reset: claude's hour, A6) is learned
    # before the wake at 09:30 decides anything, so the wait goes on to 10:30.
    assert out[:4] == (
        "2026-12-01T09:01:00 claude limited until 09:30",
        "2026-12-01T09:01:00 every participant limited — waiting for claude, back first at 09:30",
        "2026-12-01T09:30:00 claude limited until 10:30 (reported by another run)",
        "2026-12-01T09:30:00 every participant limited — waiting for claude, back first at 10:30",
    )
    assert out[4] == "2026-12-01T10:31:00 ana posted via claude"


def test_a_bad_report_is_one_clear_error_naming_line_and_field() -> None:
    import pytest

    from autodev_core.errors import ConfigError
    from autodev_core.simulation.scenario import parse_scenario

    bad = SHARED.replace("engine: codex}", "engine: gpt}")
    with pytest.raises(ConfigError, match=r"<string>:14: peers\[1\]\.engine: unknown provider"):
        parse_scenario(bad)
    early = SHARED.replace("reset: 2026-12-01T09:40:00", "reset: 2026-12-01T09:00:00")
    with pytest.raises(ConfigError, match=r":13: peers\[0\]\.reset: a reported reset comes after"):
        parse_scenario(early)
    typo = SHARED.replace("source: laptop", "sauce: laptop")
    with pytest.raises(ConfigError, match=r":13: peers\[0\]"):
        parse_scenario(typo)


def test_an_observation_at_the_end_of_a_wait_decides_as_the_wake_would() -> None:
    """A38: delivered at (or after) the deadline, with nothing changed, the turn starts."""
    state = _waiting_on_default()  # until 10:01
    state, _ = step(state, peer(at(9, 10), at(9, 30), seen=at(9, 5)))  # now until 09:30
    state, effects = step(state, peer(at(9, 30), at(9, 30), seen=at(9, 5)))  # nothing new
    assert [str(e.engine) for e in effects if isinstance(e, StartCall)] == ["claude"]
    base = team(Participant(id="ana", provider="claude"))
    failing = attrs.evolve(base, status="backing_off", wait_until=at(10), failures=3)
    failing, effects = step(failing, peer(at(10), at(11), engine=Engine("codex")))
    assert failing.status == "running"
    assert [str(e.engine) for e in effects if isinstance(e, StartCall)] == ["claude"]
