"""`simulate` reads each distinct answer once and resolves only its reset at each call (issue 13,
SPEC D: classified exactly as real output would be)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any
from zoneinfo import ZoneInfo

import attrs
import pytest

import autodev_core.simulation.driver as simulation
from autodev_core.detection import classify_output
from autodev_core.detection.classification import Classification
from autodev_core.engine import Engine
from autodev_core.participant import Participant
from autodev_core.scheduler.effects import StartCall
from autodev_core.scheduler.events import CallEnded, Event, call_ended
from autodev_core.scheduler.state import SchedulerState
from autodev_core.scheduler.step import step as real_step
from autodev_core.simulation.scenario import CallAnswer, Scenario

START = datetime(2026, 3, 28, 22, 0, tzinfo=UTC)  # a clock change in Lisbon the next night
TEAM = (
    Participant(id="ana", provider="claude", failover=(Engine("codex"),)),
    Participant(id="rui", provider="codex", failover=(Engine("agy"),)),
    Participant(id="eva", provider="agy", failover=(Engine("claude", "haiku"),)),
)
ANSWERS = {
    "claude": (CallAnswer(stdout="You've hit your limit · resets 2:30am (Europe/Lisbon)", exit=1,
                          duration=timedelta(minutes=7)),
               CallAnswer(post="done", duration=timedelta(minutes=3)),
               CallAnswer(stdout="Claude AI usage limit reached|1774749600", exit=1)),
    "claude:haiku": (CallAnswer(stdout="5-hour limit reached ∙ resets 5am", exit=1),),
    "codex": (CallAnswer(stderr="You've hit your usage limit. Try again in 2 hours 5 minutes.",
                         exit=1, duration=timedelta(minutes=11)),
              CallAnswer(stderr="getaddrinfo ENOTFOUND api.openai.com", exit=1),
              CallAnswer(stderr="■ You've hit your usage limit. or try again at 3:54 AM.",
                         exit=1)),
    "agy": (CallAnswer(stderr="Individual quota reached. Resets in 1h31m33s.", exit=1),
            CallAnswer(exit=2)),
}


def _scenario() -> Scenario:
    calls = tuple((key, answers * 40) for key, answers in ANSWERS.items())
    return Scenario(start=START, timezone="Europe/Lisbon", team=TEAM, calls=calls,
                    until=START + timedelta(days=4))


class _Afresh:
    """Stands in for a read-once answer: classifies the raw output again at every instant."""

    def __init__(self, provider: str, **output: Any) -> None:
        self.provider, self.output = provider, output

    def at(self, now: datetime, local_tz: tzinfo) -> Classification:
        return classify_output(self.provider, now=now, local_tz=local_tz, **self.output)


def test_D_reading_each_answer_once_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    once = simulation.simulate(_scenario())
    reads: list[str] = []

    def afresh(provider: str, **output: Any) -> _Afresh:
        reads.append(provider)
        return _Afresh(provider, **output)

    monkeypatch.setattr(simulation, "prepare_classification", afresh)
    again = simulation.simulate(_scenario())
    assert again.render() == once.render()
    assert again.calls == once.calls > 20
    # ... while the simulation read each distinct answer once (the stand-in was asked once
    # per distinct answer too: the driver keeps what it read).
    assert len(reads) <= sum(len(answers) for answers in ANSWERS.values()) + 1
    assert any(" limited until " in line for line in once.render())


# Every kind of end (A17 a post then a notice, A26 network, A28 exit/timeout/empty, A31, A32),
# several participants per engine, and notices whose reset is read at each call's end.
VARIED = {
    "claude": (CallAnswer(post="done", duration=timedelta(minutes=4)),
               CallAnswer(post="done", stdout="You've hit your limit · resets 2:30am",
                          duration=timedelta(minutes=2)),
               CallAnswer(stdout="Claude AI usage limit reached|1774749600", exit=1),
               CallAnswer(exit=0),
               CallAnswer(timeout=True, duration=timedelta(minutes=30)),
               CallAnswer(stderr="getaddrinfo ENOTFOUND api.anthropic.com", exit=1)),
    "codex": (CallAnswer(post="done"),
              CallAnswer(stderr="You've hit your usage limit. Try again in 2 hours 5 minutes.",
                         exit=1, duration=timedelta(minutes=11)),
              CallAnswer(exit=3),
              CallAnswer(post="done", exit=1)),
    "agy": (CallAnswer(stderr="Individual quota reached. Resets in 1h31m33s.", exit=1),
            CallAnswer(post="ok"),
            CallAnswer(exit=2, stderr="E   assert 3 == 4")),
}
DEFAULT = CallAnswer(post="fallback", duration=timedelta(minutes=5))


def test_D_each_call_ends_as_its_answer_classified_afresh_says() -> None:
    # The model, stated here: the k-th call on an engine gets the k-th answer of that engine's
    # list (then `default`); it ends `duration` after it starts, with what `call_ended` makes
    # of `classify_output` at that instant (SPEC D) — whatever the simulation reuses inside.
    team = (*TEAM, Participant(id="leo", provider="claude", failover=(Engine("agy"),)),
            Participant(id="mia", provider="codex"))
    scenario = Scenario(
        start=START, timezone="Europe/Lisbon", team=team,
        calls=tuple((key, answers * 25) for key, answers in VARIED.items()), default=DEFAULT,
        until=START + timedelta(days=5),
    )
    starts: list[StartCall] = []
    ends: list[CallEnded] = []

    def recording(state: SchedulerState, event: Event) -> Any:
        if isinstance(event, CallEnded):
            ends.append(event)
        state, effects = real_step(state, event)
        starts.extend(effect for effect in effects if isinstance(effect, StartCall))
        return state, effects

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(simulation, "step", recording)
        result = simulation.simulate(scenario)
    assert result.calls > 100 and len(ends) >= result.calls - 1
    lists = {Engine.parse(key): answers for key, answers in scenario.calls}
    used: dict[Engine, int] = {}
    kinds: set[str] = set()
    for start, ended in zip(starts, ends, strict=False):
        index = used.get(start.engine, 0)
        used[start.engine] = index + 1
        answers = lists.get(start.engine, ())
        answer = answers[index] if index < len(answers) else DEFAULT
        exit_code = None if answer.timeout else answer.exit
        at = start.at + answer.duration
        expected = call_ended(
            at, start.participant, start.engine,
            classify_output(start.engine.provider, stdout=answer.stdout, stderr=answer.stderr,
                            exit_code=exit_code, now=at, local_tz=ZoneInfo("Europe/Lisbon")),
            posted=answer.posted, exit_code=exit_code, timed_out=answer.timeout,
        )
        assert ended == expected
        assert attrs.evolve(ended) == ended  # a valid event: its checks pass when rebuilt
        kinds.add(ended.kind)
    assert kinds >= {"post", "limit", "network", "exit", "timeout", "empty"}
    assert any(e.kind == "limit" and e.posted for e in ends)  # A17
