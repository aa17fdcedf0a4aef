"""The shipped `OrchestratorMachine` catches what a user's loop gets wrong (issue 28 item 3).

Each loop below is the docs' fixed loop with one bug planted by hand, as an orchestrator author
would write it: the machine must fail it, under the derandomized draw CI uses and under many
random seeds, with the message that names the bug; the loop without a bug must pass.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers.machines import planted, run_machine
from hypothesis.stateful import RuleBasedStateMachine

from autodev_core import (
    CallEnded,
    Log,
    SchedulerState,
    Sleep,
    StartCall,
    Woke,
    call_ended,
    classify_output,
    initial_state,
    restore_state,
    step,
)
from autodev_core.serialization import from_json, to_json
from autodev_core.testing import OrchestratorMachine, World

SEEDS = [3, 17, 101, 2026, 40_961, 77_777, 123_457, 999_983, 31_337, 65_537]


class Loop:
    """A correct loop: every event to `step`, every effect carried out, saved after each step."""

    def __init__(self, config: Any, world: World) -> None:
        self.world = world
        self.state = initial_state(config)
        self.store: dict[str, str] = {}

    def report(self, effect: StartCall, out: Any, now: Any, seen: Any) -> CallEnded:
        return call_ended(now, effect.participant, effect.engine, seen, posted=bool(out.post),
                          exit_code=out.exit_code, timed_out=out.timed_out)

    def handle(self, event: Any) -> list[Any]:
        self.state, effects = step(self.state, event)
        follow: list[Any] = []
        for effect in effects:
            if isinstance(effect, Log):
                self.world.log(effect.message)
            elif isinstance(effect, StartCall):
                out = self.world.run_cli(effect)
                now = self.world.now
                seen = classify_output(effect.engine.provider, stdout=out.stdout,
                                       stderr=out.stderr, exit_code=out.exit_code, now=now,
                                       local_tz=self.state.config.zone)
                follow.append(self.report(effect, out, now, seen))
            elif isinstance(effect, Sleep):
                follow.append(Woke(now=self.world.sleep_until(effect.until)))
        self.store["state"] = to_json(self.state)
        return follow

    def saved(self) -> SchedulerState | None:
        text = self.store.get("state")
        return None if text is None else from_json(text, SchedulerState)

    def load(self, config: Any) -> None:
        self.state = restore_state(config, self.saved())

    @classmethod
    def restart(cls, crashed: Any, config: Any, world: World) -> Any:
        loop = cls(config, world)
        loop.store = crashed.store
        loop.load(config)
        return loop


class DropsPosts(Loop):
    def report(self, effect: StartCall, out: Any, now: Any, seen: Any) -> CallEnded:
        return call_ended(now, effect.participant, effect.engine, seen, posted=False,
                          exit_code=out.exit_code, timed_out=out.timed_out)


class TimeoutIsAFailure(Loop):
    def report(self, effect: StartCall, out: Any, now: Any, seen: Any) -> CallEnded:
        return call_ended(now, effect.participant, effect.engine, seen, posted=bool(out.post),
                          exit_code=out.exit_code if out.exit_code is not None else 1)


class StampsTheStart(Loop):
    def report(self, effect: StartCall, out: Any, now: Any, seen: Any) -> CallEnded:
        return super().report(effect, out, effect.at, seen)  # the call's start, not its end


class RestartsFromScratch(Loop):
    def load(self, config: Any) -> None:
        self.state = initial_state(config)  # forgets the owed turn and the calls made


class RestartsAsSaved(Loop):
    def load(self, config: Any) -> None:
        saved = self.saved()
        self.state = saved if saved is not None else initial_state(config)


def machine(loop: type[Loop]) -> type[RuleBasedStateMachine]:
    return planted(OrchestratorMachine, loop, make=loop, restart=loop.restart)


BUGS = [
    (DropsPosts, "your loop reported the call as"),
    (TimeoutIsAFailure, "your loop reported the call as"),
    (StampsTheStart, "your loop reported the call as"),
    (RestartsFromScratch, "after a restart your loop's state is not restore_state"),
    (RestartsAsSaved, "after a restart your loop's state is not restore_state"),
]


@pytest.mark.parametrize(("loop", "message"), BUGS, ids=[b[0].__name__ for b in BUGS])
def test_the_machine_catches_a_planted_bug_in_the_ci_draw(loop: type[Loop], message: str) -> None:
    with pytest.raises(AssertionError, match=message):
        run_machine(machine(loop), None)


@pytest.mark.parametrize("draw", SEEDS)
@pytest.mark.parametrize(("loop", "message"), BUGS, ids=[b[0].__name__ for b in BUGS])
def test_the_machine_catches_a_planted_bug_under_any_seed(
    loop: type[Loop], message: str, draw: int
) -> None:
    with pytest.raises(AssertionError, match=message):
        run_machine(machine(loop), draw)


@pytest.mark.parametrize("draw", [None, *SEEDS[:3]])
def test_a_loop_without_a_bug_passes_crashes_and_all(draw: int | None) -> None:
    run_machine(machine(Loop), draw)
