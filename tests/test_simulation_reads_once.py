"""`simulate` reads each distinct answer once and resolves only its reset at each call (issue 13,
SPEC D: classified exactly as real output would be)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any

import pytest

import autodev_core.simulation as simulation
from autodev_core.classification import Classification
from autodev_core.detection import classify_output
from autodev_core.engine import Engine
from autodev_core.participant import Participant
from autodev_core.scenario import CallAnswer, Scenario

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
