"""`simulate` gives what a straightforward replay gives, for any scenario (issue 13 row 2; SPEC D).

The driver reuses what it can across events (each distinct answer read once, a limit's reset
resolved at each call's end, events and lines built without re-checks, the lines produced when
first looked at). The model here does none of that: it restates SPEC D's replay on its own —
the k-th call on an engine gets the k-th answer of that engine's list, then `default`, then
`{post: ok}`; the call ends `duration` after it starts with what `call_ended` makes of
`classify_output` at that instant; every log effect is a `SimulatedLine` built by its checked
constructor; at one instant another run's report comes first, then the call's end, the wake, a
user message — and the two results must be equal in every field (lines, final state, counts).
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from autodev_core.detection import classify_output
from autodev_core.engine import Engine
from autodev_core.errors import ConfigError
from autodev_core.participant import Participant
from autodev_core.scheduler.effects import Log, Sleep, StartCall
from autodev_core.scheduler.events import (
    CallEnded,
    Event,
    LimitObserved,
    MessageArrived,
    RunStarted,
    Woke,
    call_ended,
)
from autodev_core.scheduler.state import SchedulerConfig, initial_state
from autodev_core.scheduler.step import step
from autodev_core.simulation import SimulatedLine, SimulationResult, simulate
from autodev_core.simulation.scenario import CallAnswer, PeerReport, Scenario
from autodev_core.testing import scheduler_configs

# ------------------------------------------------------------------------------------------------
# The model: SPEC D's replay, written plainly


def replay(scenario: Scenario, *, max_events: int = 100_000) -> SimulationResult:
    """SPEC D's replay of `scenario`, everything built and checked afresh at every event."""
    try:
        return _replay(scenario, max_events)
    except OverflowError:
        raise ConfigError("the calendar ends") from None


def _replay(scenario: Scenario, max_events: int) -> SimulationResult:
    config = SchedulerConfig(
        team=scenario.team, installed=scenario.installed, timezone=scenario.timezone,
        max_iterations=scenario.max_iterations, policy=scenario.policy,
    )
    zone = scenario.zone
    lists = {Engine.parse(key): answers for key, answers in scenario.calls}
    fallback = scenario.default if scenario.default is not None else CallAnswer(post="ok")
    used: dict[Engine, int] = {}

    def ended(effect: StartCall) -> CallEnded:
        index = used.get(effect.engine, 0)
        used[effect.engine] = index + 1
        answers = lists.get(effect.engine, ())
        answer = answers[index] if index < len(answers) else fallback
        exit_code = None if answer.timeout else answer.exit  # a killed call has no exit code
        at = effect.at.astimezone(UTC) + answer.duration
        meaning = classify_output(effect.engine.provider, stdout=answer.stdout,
                                  stderr=answer.stderr, exit_code=exit_code, now=at,
                                  local_tz=zone)
        return call_ended(at, effect.participant, effect.engine, meaning,
                          posted=bool(answer.post), exit_code=exit_code,
                          timed_out=answer.timeout)

    start = scenario.start.astimezone(UTC)
    until = scenario.until.astimezone(UTC) if scenario.until else start + timedelta(days=7)
    messages = sorted(m.astimezone(UTC) for m in scenario.messages if m.astimezone(UTC) >= start)
    peers = sorted(((r.at.astimezone(UTC), r) for r in scenario.peers
                    if r.at.astimezone(UTC) >= start), key=lambda pair: pair[0])
    state = initial_state(config)
    lines: list[SimulatedLine] = []
    call: CallEnded | None = None
    wake: datetime | None = None
    events = 0
    now = start
    same_instant = 0
    event: Event = RunStarted(now=start)
    while True:
        state, effects = step(state, event)
        events += 1
        for effect in effects:
            if isinstance(effect, Log):
                lines.append(SimulatedLine(at=effect.at, message=effect.message))
            elif isinstance(effect, StartCall):
                call = ended(effect)
            elif isinstance(effect, Sleep):
                wake = effect.until
        if state.status in ("paused", "stopped"):
            break
        # What happens next; at one instant: a report, the call's end, the wake, a message.
        nexts: list[tuple[datetime, int]] = []
        if peers:
            nexts.append((peers[0][0], 0))
        if call is not None:
            nexts.append((call.now, 1))
        if wake is not None and state.wait_until is not None:
            nexts.append((wake, 2))
        if messages:
            nexts.append((messages[0], 3))
        if not nexts:
            break
        at, which = min(nexts)
        if at > until:
            break
        if events >= max_events:
            raise ConfigError("too many events")
        if which == 0:
            report = peers.pop(0)[1]
            event = LimitObserved(
                now=at, engine=report.engine,
                until=report.reset if report.reset is not None
                else at + scenario.policy.default_limit_wait(report.engine.provider),
                read=report.reset is not None, seen=at, source=report.source,
            )
        elif which == 1:
            assert call is not None
            event, call = call, None
        elif which == 2:
            event, wake = Woke(now=at), None
        else:
            event = MessageArrived(now=messages.pop(0))
        if at == now:
            same_instant += 1
            if same_instant > 10_000:
                raise ConfigError("time never moves")
        else:
            now, same_instant = at, 0
    over = state.status in ("paused", "stopped")
    return SimulationResult(
        lines=tuple(lines), state=state, events=events, calls=sum(used.values()),
        ended_at=now if over else until, horizon_reached=not over and scenario.until is None,
    )


# ------------------------------------------------------------------------------------------------
# Scenarios: real wordings of every kind (tests/fixtures/notices/), resets of every form

NOTICES = {
    "claude": (
        "You've hit your limit · resets 2:30pm (Europe/Lisbon)",
        "5-hour limit reached ∙ resets 5am",
        "Claude AI usage limit reached|1796112000",
        "You've hit your weekly limit · resets Dec 3, 9am (America/New_York)",
        "Claude usage limit reached. Your limit will reset at 1pm (Etc/GMT+5).",
        "Usage limit reached. Try again in 2 hours.",
        "You've hit your limit · resets tomorrow 3pm",
        "5-hour limit reached ∙ resets 5am\nYou've hit your limit · resets in 40 minutes",
        "Not logged in · Please run /login",
        "You've hit your limit",
    ),
    "codex": (
        "You've hit your usage limit. Upgrade to Pro or try again in 3 hours 2 minutes.",
        "■ You've hit your usage limit. or try again at 3:54 AM.",
        "You've hit your usage limit. Try again at Dec 2nd, 2026 6:49 AM.",
        "You've hit your usage limit. Try again later.",
        "Quota exceeded. Check your plan and billing details.",
        "getaddrinfo ENOTFOUND api.openai.com",
        "ERROR: Reconnecting... 1/5\nERROR: stream error: error sending request for url "
        "(https://api.openai.com/v1/responses): failed to lookup address information: "
        "Temporary failure in name resolution\n",
    ),
    "agy": (
        "RESOURCE_EXHAUSTED (code 429): Individual quota reached. Resets in 2h31m33s.",
        "You have exhausted your capacity on this model. Your quota will reset after 25h20m26s.",
        "Individual quota reached. Resets in 1h31m33s.",
        "RESOURCE_EXHAUSTED (code 429)",
        "MODEL_CAPACITY_EXHAUSTED: No capacity available",
        "getaddrinfo ENOTFOUND generativelanguage.googleapis.com",
    ),
}
ALL_TEXTS = sorted({text for texts in NOTICES.values() for text in texts})
STARTS = (
    datetime(2026, 12, 1, 9, 0, tzinfo=UTC),
    datetime(2026, 3, 28, 22, 0, tzinfo=UTC),  # a clock change in Lisbon that night
    datetime(2026, 10, 31, 23, 30, tzinfo=UTC),  # and the one back, in Lisbon and New York
)


@st.composite
def answers(draw: st.DrawFn, provider: str) -> CallAnswer:
    own = NOTICES[provider]
    text = draw(st.one_of(st.just(""), st.sampled_from(own), st.sampled_from(own),
                          st.sampled_from(ALL_TEXTS)))
    where = draw(st.sampled_from(("stdout", "stderr")))
    return CallAnswer(
        post=draw(st.sampled_from((None, None, "", "done"))),
        exit=draw(st.sampled_from((0, 1, 1, 2))),
        timeout=draw(st.booleans()) if draw(st.integers(0, 5)) == 0 else False,
        duration=timedelta(seconds=draw(st.sampled_from((0, 30, 60, 420, 900, 3_600, 20_000)))),
        **{where: text},
    )


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    config = draw(scheduler_configs(max_team=4, limited_iterations=False))
    start = draw(st.sampled_from(STARTS))
    engines = sorted({e for lane in config.lanes for e in lane}, key=str)
    calls = []
    for engine in engines:
        pool = draw(st.lists(answers(engine.provider), min_size=1, max_size=5))
        # A few distinct answers, repeated (as a storm repeats its notices).
        picks = draw(st.lists(st.integers(0, len(pool) - 1), max_size=40))
        calls.append((str(engine), tuple(pool[i] for i in picks)))
    hours = draw(st.integers(min_value=1, max_value=60))
    until = start + timedelta(hours=hours)
    instants = st.integers(min_value=-60, max_value=hours * 60 + 60).map(
        lambda m: start + timedelta(minutes=m))
    reports = draw(st.lists(st.tuples(
        instants, st.sampled_from(engines), st.none() | st.integers(1, 600),
    ), max_size=4))
    peers = [PeerReport(at=at, engine=engine,
                        reset=None if minutes is None else at + timedelta(minutes=minutes))
             for at, engine, minutes in reports]
    endless = draw(st.integers(0, 9)) == 0  # no `until`: cut at the horizon, or a budget ends it
    first = draw(st.sampled_from(engines))
    return Scenario(
        start=start, timezone=config.timezone, installed=config.installed, team=config.team,
        calls=tuple(calls),
        default=draw(st.none() | answers(first.provider)),
        messages=tuple(draw(st.lists(instants, max_size=4))),
        peers=tuple(peers),
        until=None if endless else until,
        max_iterations=draw(st.integers(1, 40)) if endless else draw(
            st.none() | st.integers(1, 200)),
    )


def _outcome(run: Any) -> Any:
    try:
        return run()
    except ConfigError:
        return ConfigError


LISBON_STORM = Scenario(
    start=STARTS[1], timezone="Europe/Lisbon",
    team=(Participant(id="ana", provider="claude", failover=(Engine("codex"),)),
          Participant(id="rui", provider="codex", failover=(Engine("agy"),)),
          Participant(id="eva", provider="agy", failover=(Engine("claude", "haiku"),))),
    calls=tuple((key, tuple(answer for text in texts for answer in (
                      CallAnswer(stdout=text, exit=1, duration=timedelta(minutes=7)),
                      CallAnswer(post="done", duration=timedelta(minutes=4)))) * 3)
                for key, texts in (("claude", NOTICES["claude"]), ("codex", NOTICES["codex"]),
                                   ("agy", NOTICES["agy"]),
                                   ("claude:haiku", NOTICES["claude"][:3]))),
    messages=(STARTS[1] + timedelta(hours=5),),
    peers=(PeerReport(at=STARTS[1] + timedelta(hours=1), engine=Engine("codex")),),
    until=STARTS[1] + timedelta(days=2),
)


@given(scenarios())
@example(LISBON_STORM)
def test_D_simulate_is_the_plain_replay_of_any_scenario(scenario: Scenario) -> None:
    fast = _outcome(lambda: simulate(scenario, max_events=3_000))
    plain = _outcome(lambda: replay(scenario, max_events=3_000))
    if plain is ConfigError:
        assert fast is ConfigError
        return
    assert fast == plain  # every field: lines, final state, events, calls, ended_at, horizon
    assert type(fast.lines) is tuple
    assert all(type(line) is SimulatedLine for line in fast.lines)
    assert repr(fast) == repr(plain)
    assert fast.render() == plain.render()


def test_D_the_plain_replay_sees_every_kind_of_end() -> None:
    # The model is only a proof if the scenarios reach what the driver reuses: limits read at
    # many instants (each reset form), posts, failures, waits, reports, messages.
    result = replay(LISBON_STORM)
    assert simulate(LISBON_STORM) == result
    text = "\n".join(result.render())
    for seen in (" limited until ", "posted via", "every participant", "could not be reached",
                 "failed on", "limit lifted"):
        assert seen in text, seen
    assert result.events > 40


@pytest.mark.parametrize("days", [3])
def test_D_the_storm_replays_as_the_plain_replay(days: int) -> None:
    # The benchmark's scenario, shortened: many answers read again at many instants.
    rng_team = LISBON_STORM.team
    start = STARTS[0]
    notices = {"claude": "You've hit your limit · resets {h}pm (Europe/Lisbon)",
               "codex": "You've hit your usage limit. Try again in {h} hours 2 minutes.",
               "agy": "Individual quota reached. Resets in {h}h31m33s."}
    calls = []
    for key in ("agy", "claude", "claude:haiku", "codex"):
        provider = key.split(":")[0]
        answers_ = []
        for n in range(300 * days):
            duration = timedelta(seconds=60 + (n * 37) % 840)
            if n % 4 == 0:
                text = notices[provider].format(h=1 + n % 5)
                answers_.append(CallAnswer(stdout=text, exit=1, duration=duration))
            elif n % 13 == 0:
                answers_.append(CallAnswer(stderr="getaddrinfo ENOTFOUND x", exit=1,
                                           duration=duration))
            else:
                answers_.append(CallAnswer(post="done", duration=duration))
        calls.append((key, tuple(answers_)))
    scenario = Scenario(start=start, timezone="Europe/Lisbon", team=rng_team, calls=tuple(calls),
                        until=start + timedelta(days=days))
    result = simulate(scenario)
    assert result == replay(scenario)
    assert sum(" limited until " in line.message for line in result.lines) > 20


def test_D_a_result_reads_as_one_built_with_its_lines() -> None:
    # `simulate` builds the lines when they are first read: whichever way a result is first
    # read, it is the result built with its lines (fields, eq both ways, repr, evolve, copy).
    plain = replay(LISBON_STORM)
    built = SimulationResult(lines=plain.lines, state=plain.state, events=plain.events,
                             calls=plain.calls, ended_at=plain.ended_at)
    assert built == plain and built.lines is plain.lines
    firsts: list[Any] = [
        lambda r: r.lines, lambda r: repr(r), lambda r: r == plain, lambda r: plain == r,
        lambda r: attrs.evolve(r), lambda r: copy.copy(r), lambda r: attrs.asdict(r),
        lambda r: r.render(), lambda r: attrs.astuple(r, recurse=False),
    ]
    for first in firsts:
        result = simulate(LISBON_STORM)
        first(result)
        assert result == plain and plain == result
        assert type(result.lines) is tuple and result.lines == plain.lines
        assert repr(result) == repr(plain)
        assert attrs.evolve(result) == plain
        assert attrs.fields(SimulationResult).lines.name == "lines"
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        simulate(LISBON_STORM).lines = ()  # type: ignore[misc]
