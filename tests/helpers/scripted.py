"""A team's CLIs answered from a scenario's scripts, for the daemon loop run on a fake clock
(SPEC 0.2: the shell drives the same `step` as the simulation)."""

from __future__ import annotations

from pathlib import Path

from autodev_core.detection import classify_output
from autodev_core.participant import Participant
from autodev_core.scheduler import StartCall
from autodev_core.simulation.scenario import Scenario
from autodev_shell.calls import CallResult
from autodev_shell.clock import FakeClock

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"


class ScriptedCLIs:
    """Answers calls from a scenario's scripts, moving the fake clock by each call's duration."""

    def __init__(self, scenario: Scenario, clock: FakeClock) -> None:
        self.scenario = scenario
        self.clock = clock
        self.used: dict[str, int] = {}
        self.prompts: list[tuple[str, str, str]] = []

    def __call__(self, effect: StartCall, member: Participant, prompt: str) -> CallResult:
        key = str(effect.engine)
        index = self.used.get(key, 0)
        self.used[key] = index + 1
        answer = self.scenario.answer(effect.engine, index)
        self.prompts.append((member.id, effect.turn_kind, prompt))
        started = self.clock.now()
        self.clock.advance(answer.duration.total_seconds())
        ended = self.clock.now()
        classification = classify_output(
            effect.engine.provider,
            stdout=answer.stdout,
            stderr=answer.stderr,
            exit_code=answer.exit,
            now=ended,
            local_tz=self.scenario.zone,
        )
        return CallResult(
            provider=effect.engine.provider,
            argv=(effect.engine.provider,),
            started_at=started,
            ended_at=ended,
            exit_code=answer.exit,
            stdout=answer.stdout,
            stderr=answer.stderr,
            stdout_bytes=len(answer.stdout),
            stderr_bytes=len(answer.stderr),
            timed_out=answer.timeout,
            stopped_early=False,
            cancelled=False,
            classification=classification,
            post=answer.post or None,
            pid=None,
        )
