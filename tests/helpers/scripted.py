"""A team's CLIs answered from a scenario's scripts, for the daemon loop run on a fake clock
(SPEC 0.2: the shell drives the same `step` as the simulation)."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from autodev_core.control.identity import resolve_active_identity
from autodev_core.detection import classify_output
from autodev_core.participant import Participant
from autodev_core.scheduler import StartCall
from autodev_core.simulation import scheduler_config
from autodev_core.simulation.scenario import Scenario
from autodev_shell.calls import CallResult
from autodev_shell.clock import FakeClock
from autodev_shell.durability.writes import Durability
from autodev_shell.runner import CallPerformer, Runner, StreamLog
from autodev_shell.store.run_store import RunStore

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"

#: Two members taking turns for an hour, every call posting after a minute: the run the message
#: tests say things into (tests/e2e/test_message_order.py, test_messages_said_as_a_call_ends.py).
TWO_TAKING_TURNS = """
start: 2026-12-02T09:00:00
timezone: UTC
until: 2026-12-02T10:00:00
team:
  - {id: ana, provider: claude}
  - {id: rui, provider: codex}
calls:
  default: {post: "ok", duration: 60}
"""


def one_member_whose_first_call(answer: str) -> str:
    """A scenario of ana on claude for three hours whose first call answers `answer` (a YAML
    flow mapping) and every later one posts after a minute."""
    return f"""
start: 2026-12-02T09:00:00
timezone: UTC
until: 2026-12-02T12:00:00
team:
  - {{id: ana, provider: claude}}
calls:
  claude:
    - {answer}
  default: {{post: "ok", duration: 60}}
"""


class ScriptedCLIs:
    """Answers calls from a scenario's scripts, moving the fake clock by each call's duration.

    `midway(n)` runs halfway through the n-th call (1-based), `ended(n, at)` as it ends, before
    its result is returned: where a test does what an operator does meanwhile (`autodev say`
    from another connection). `starts` and `ends` keep each call's instants."""

    def __init__(self, scenario: Scenario, clock: FakeClock, *,
                 midway: Callable[[int], None] | None = None,
                 ended: Callable[[int, datetime], None] | None = None) -> None:
        self.scenario = scenario
        self.clock = clock
        self.used: dict[str, int] = {}
        self.prompts: list[tuple[str, str, str]] = []
        self.starts: list[datetime] = []
        self.ends: list[datetime] = []
        self.midway = midway
        self.ended = ended

    def __call__(self, effect: StartCall, member: Participant, prompt: str) -> CallResult:
        key = str(effect.engine)
        index = self.used.get(key, 0)
        self.used[key] = index + 1
        answer = self.scenario.answer(effect.engine, index)
        self.prompts.append((member.id, effect.turn_kind, prompt))
        started = self.clock.now()
        self.starts.append(started)
        seconds = answer.duration.total_seconds()
        if self.midway is None:
            self.clock.advance(seconds)
        else:
            self.clock.advance(seconds / 2)
            self.midway(len(self.starts))
            self.clock.advance(seconds - seconds / 2)
        ended = self.clock.now()
        self.ends.append(ended)
        if self.ended is not None:
            self.ended(len(self.ends), ended)
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


def scripted_runner(scenario: Scenario, store: RunStore, clock: FakeClock,
                    perform_call: CallPerformer | None = None, *, run_id: str = "test-run",
                    durability: Durability | None = None, log: StreamLog | None = None,
                    slice_seconds: float = 60) -> Runner:
    """The daemon's loop over `store` for `scenario`'s team, on the fake clock: its calls made by
    `perform_call` (default: a `ScriptedCLIs` of the scenario), its revisions kept by
    `durability` (default: one opened over `store` for `run_id`), its log to `log` (default: a
    string, `runner.log.stream`)."""
    identity = resolve_active_identity(run_id=run_id)
    return Runner(
        config=scheduler_config(scenario), store=store,
        durability=durability or Durability.open(store, identity), identity=identity,
        clock=clock, log=log or StreamLog(scenario.zone, stream=io.StringIO()),
        perform_call=perform_call or ScriptedCLIs(scenario, clock), slice_seconds=slice_seconds)


@contextmanager
def store_and_say(db: Path, start: datetime, *,
                  run_id: str = "t") -> Iterator[tuple[RunStore, RunStore]]:
    """The daemon's store, created at `start`, and `autodev say`'s own connection to it (C6: an
    operator's message queued from another process); both closed on the way out."""
    store = RunStore.open(db, create=True, run_id=run_id, now=start)
    try:
        other = RunStore.open(db, check=False)
        try:
            yield store, other
        finally:
            other.close()
    finally:
        store.close()
