"""`AsyncOrchestratorMachine` catches what an asyncio loop gets wrong (SPEC 0.4; issues 28, 39).

An asyncio loop on the virtual clock of `autodev_shell.asyncio_harness`: a heartbeat task
beside `handle`, a store whose writes take time, CLI calls that take their duration while other
tasks run, the input sent with each call (B19's saved input reused on a retry), each post
appended to the thread once. Each loop after the correct `Loop` plants ONE bug: the asyncio
author's own (a state saved by a task nobody awaits, the step's log lines written concurrently,
a call stamped with the time another task last read) and the 16 of issue 39, as in
tests/core/test_orchestrator_harness_catches.py. The machine must fail each under the
derandomized `ci` draw and under random seeds (all ten with `SWEEP_SEEDS=all`; CI runs the `ci`
draw and two); the loop without a bug passes.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from datetime import UTC, datetime
from typing import Any

import attrs
import pytest
from helpers.clock import T0
from helpers.machines import assert_caught, planted, run_machine
from hypothesis.stateful import RuleBasedStateMachine

from autodev_core import (
    CallEnded,
    Event,
    Log,
    MessageArrived,
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
from autodev_core.control.turn_input import bind_input_context, plan_call_input
from autodev_core.serialization import from_json, to_json
from autodev_shell.adapters import post_of
from autodev_shell.asyncio_harness import (
    AsyncOrchestratorMachine,
    AsyncWorld,
    VirtualClock,
    VirtualTimeDeadlock,
    virtual_event_loop,
)

SEEDS = [3, 17, 101, 2026, 40_961, 77_777, 123_457, 999_983, 31_337, 65_537]
#: CI runs the derandomized draw and two seeds; `SWEEP_SEEDS=all` runs all ten.
CI_SEEDS = SEEDS if os.environ.get("SWEEP_SEEDS") == "all" else SEEDS[:2]
HEARTBEAT = 600.0  # seconds between heartbeats (the shell's is 30 s; fewer wake-ups here)


class Loop:
    """A correct asyncio loop: a heartbeat task, awaited writes, effects one after another."""

    def __init__(self, config: Any, world: AsyncWorld) -> None:
        self.world = world
        self.state = initial_state(config)
        self.store: dict[str, Any] = {}
        self.heart: asyncio.Task[None] | None = None
        self.last_read = world.now  # the time the heartbeat task last read

    async def heartbeat(self) -> None:
        while True:
            await asyncio.sleep(HEARTBEAT)
            self.last_read = self.world.now
            self.store["heartbeat"] = self.last_read.isoformat()

    async def write(self, key: str, value: Any) -> None:
        await asyncio.sleep(0.05)  # the database takes its time
        self.store[key] = value

    async def write_log(self, message: str) -> None:
        await asyncio.sleep(len(message) / 10_000)  # a longer line takes longer to write
        self.world.log(message)

    # -- the CLI call -------------------------------------------------------------------------

    def compute_input(self, effect: StartCall) -> str:
        shown = " | ".join(text[:40] for _, text in self.world.thread[-2:])
        return f"{self.world.now:%Y-%m-%d %H:%M:%S} — {effect.turn_owner}'s turn. {shown}"

    async def input_for(self, effect: StartCall) -> str:
        """B19: a retry or a hop reapplies the input saved with its first attempt."""
        parent = str(len(self.world.thread))
        plan = plan_call_input(effect.turn_kind, self.store.get("input"),
                               parent_input_id=parent, parent_text=parent)
        if plan.context is not None:
            return plan.context
        text = self.compute_input(effect)
        await self.write("input", bind_input_context(parent, parent, text))
        return text

    async def run(self, effect: StartCall) -> Any:
        return await self.world.call(effect, await self.input_for(effect))

    def classify(self, effect: StartCall, out: Any, now: datetime) -> Any:
        return classify_output(effect.engine.provider, stdout=out.stdout, stderr=out.stderr,
                               exit_code=out.exit_code, now=now, local_tz=self.state.config.zone)

    def report(self, effect: StartCall, out: Any, now: datetime) -> CallEnded:
        seen = self.classify(effect, out, now)
        post = post_of(effect.engine.provider, out.stdout, out.exit_code, out.timed_out)
        if post is not None:
            self.world.post(effect.participant, post)
            self.store["last post"] = (effect.participant, post)
        return call_ended(now, effect.participant, effect.engine, seen, posted=post is not None,
                          exit_code=out.exit_code, timed_out=out.timed_out)

    async def sleep(self, effect: Sleep) -> Event | None:
        return Woke(now=await self.world.sleep_until(effect.until))

    async def carry(self, effect: Any) -> Event | None:
        if isinstance(effect, Log):
            await self.write_log(effect.message)
        elif isinstance(effect, StartCall):
            out = await self.run(effect)
            return self.report(effect, out, self.world.now)
        elif isinstance(effect, Sleep):
            return await self.sleep(effect)
        return None

    async def carry_all(self, effects: tuple[Any, ...]) -> list[Event | None]:
        return [await self.carry(effect) for effect in effects]

    async def save(self) -> None:
        await self.write("state", to_json(self.state))

    def accept(self, event: Event) -> bool:
        return True

    async def handle(self, event: Event) -> list[Event]:
        if self.heart is None:
            self.heart = asyncio.get_running_loop().create_task(self.heartbeat())
        if not self.accept(event):
            return []
        self.state, effects = step(self.state, event)
        follow = [e for e in await self.carry_all(effects) if e is not None]
        await self.save()
        return follow

    def saved(self) -> SchedulerState | None:
        text = self.store.get("state")
        return None if text is None else from_json(text, SchedulerState)

    def load(self, config: Any) -> None:
        self.state = restore_state(config, self.saved())

    @classmethod
    async def restart(cls, crashed: Any, config: Any, world: AsyncWorld) -> Any:
        loop = cls(config, world)
        loop.store = crashed.store  # the database outlives the process
        loop.load(config)
        return loop


# --- the asyncio author's own bugs (issue 28) ----------------------------------------------------


class SavesInBackground(Loop):
    async def save(self) -> None:
        # "no need to wait for the database": the write is a task nobody awaits
        asyncio.get_running_loop().create_task(self.write("state", to_json(self.state)))


class LogsConcurrently(Loop):
    async def carry_all(self, effects: tuple[Any, ...]) -> list[Event | None]:
        return list(await asyncio.gather(*(self.carry(effect) for effect in effects)))


class StampsWithTheHeartbeatsTime(Loop):
    async def carry(self, effect: Any) -> Event | None:
        if isinstance(effect, StartCall):
            out = await self.run(effect)
            return self.report(effect, out, max(self.last_read, effect.at))  # another task's
        return await super().carry(effect)


class RestartsAsSaved(Loop):
    def load(self, config: Any) -> None:
        saved = self.saved()
        self.state = saved if saved is not None else initial_state(config)


# --- issue 39's sixteen --------------------------------------------------------------------------


class DropsPosts(Loop):
    def report(self, effect: StartCall, out: Any, now: datetime) -> CallEnded:
        return super().report(effect, attrs.evolve(out, stdout="", post=None), now)


class TimeoutIsAFailure(Loop):
    def report(self, effect: StartCall, out: Any, now: datetime) -> CallEnded:
        if out.timed_out:
            out = attrs.evolve(out, timed_out=False, exit_code=1)
        return super().report(effect, out, now)


class RestartsFromScratch(Loop):
    def load(self, config: Any) -> None:
        self.state = initial_state(config)


class CallsTwice(Loop):
    async def run(self, effect: StartCall) -> Any:
        out = await super().run(effect)
        if out.exit_code != 0:
            out = await self.world.call(effect, await self.input_for(effect))
        return out


class NaiveTimes(Loop):
    async def sleep(self, effect: Sleep) -> Event | None:
        woke = await self.world.sleep_until(effect.until)
        return Woke(now=woke.replace(tzinfo=None))


class LosesAMessage(Loop):
    def accept(self, event: Event) -> bool:
        return not (isinstance(event, MessageArrived) and self.state.status == "running")


class SavesBeforeTheStep(Loop):
    async def handle(self, event: Event) -> list[Event]:
        await super().save()
        if self.heart is None:
            self.heart = asyncio.get_running_loop().create_task(self.heartbeat())
        self.state, effects = step(self.state, event)
        return [e for e in await self.carry_all(effects) if e is not None]


class SwapsStreams(Loop):
    def classify(self, effect: StartCall, out: Any, now: datetime) -> Any:
        return super().classify(effect, attrs.evolve(out, stdout=out.stderr, stderr=out.stdout),
                                now)


class PrimaryAfterAHop(Loop):
    async def run(self, effect: StartCall) -> Any:
        primary = self.state.config.team[self.state.config.index[effect.participant]].primary
        return await self.world.call(attrs.evolve(effect, engine=primary),
                                     await self.input_for(effect))


class ClassifiesInUTC(Loop):
    def classify(self, effect: StartCall, out: Any, now: datetime) -> Any:
        return classify_output(effect.engine.provider, stdout=out.stdout, stderr=out.stderr,
                               exit_code=out.exit_code, now=now, local_tz=UTC)


class IgnoresTheSleep(Loop):
    async def sleep(self, effect: Sleep) -> Event | None:
        return Woke(now=self.world.now)


class NeverEndsALimitWait(Loop):
    async def sleep(self, effect: Sleep) -> Event | None:
        woke = await self.world.sleep_until(effect.until)
        return None if effect.status == "rate_limited" else Woke(now=woke)


class WakesAtTheDeadline(Loop):
    async def sleep(self, effect: Sleep) -> Event | None:
        await self.world.sleep_until(effect.until)
        return Woke(now=effect.until)


class RetriesWithFreshInput(Loop):
    async def input_for(self, effect: StartCall) -> str:
        return self.compute_input(effect)


class PostsTwiceAfterACrash(Loop):
    @classmethod
    async def restart(cls, crashed: Any, config: Any, world: AsyncWorld) -> Any:
        loop = await super().restart(crashed, config, world)
        last = loop.store.get("last post")
        if last is not None:
            world.post(*last)
        return loop


class TeamFromTheSavedState(Loop):
    def load(self, config: Any) -> None:
        saved = self.saved()
        self.state = restore_state(saved.config if saved is not None else config, saved)


def machine(loop: type[Loop]) -> type[RuleBasedStateMachine]:
    return planted(AsyncOrchestratorMachine, loop, make_async=loop, restart_async=loop.restart)


BUGS = [
    (SavesInBackground, "your store does not hold the state"),
    (LogsConcurrently, "every Log line is written, in order"),
    (StampsWithTheHeartbeatsTime, "your loop reported the call as"),
    (RestartsAsSaved, "after a restart your loop's state is not restore_state"),
    (DropsPosts, "your loop reported the call as"),
    (TimeoutIsAFailure, "your loop reported the call as"),
    (RestartsFromScratch, "after a restart your loop's state is not restore_state"),
    (CallsTwice, "every StartCall runs one CLI call"),
    (NaiveTimes, "must be an aware datetime"),
    (LosesAMessage, "your loop's state is not the core's"),
    (SavesBeforeTheStep, "your store does not hold the state"),
    (SwapsStreams, "your loop reported the call as"),
    (PrimaryAfterAHop, "every StartCall runs one CLI call on its participant and engine"),
    (ClassifiesInUTC, "your loop reported the call as"),
    (IgnoresTheSleep, "rule: A19, C2: a wait lasts until its deadline"),
    (NeverEndsALimitWait, "did not report the end of a rate_limited wait"),
    (WakesAtTheDeadline, "rule: A20, A21: a wake is stamped with the clock's time"),
    (RetriesWithFreshInput, "rule: B18, B19"),
    (PostsTwiceAfterACrash, "rule: A17, C3: the thread holds each post once"),
    (TeamFromTheSavedState, "after a restart your loop's state is not restore_state"),
]
IDS = [b[0].__name__ for b in BUGS]


@pytest.mark.parametrize(("loop", "message"), BUGS, ids=IDS)
def test_the_async_machine_catches_a_planted_bug_in_the_ci_draw(
    loop: type[Loop], message: str
) -> None:
    assert_caught(machine(loop), message, None)


@pytest.mark.parametrize("draw", CI_SEEDS)
@pytest.mark.parametrize(("loop", "message"), BUGS, ids=IDS)
def test_the_async_machine_catches_a_planted_bug_under_any_seed(
    loop: type[Loop], message: str, draw: int
) -> None:
    assert_caught(machine(loop), message, draw)


@pytest.mark.parametrize("draw", [None, *SEEDS[:3]])
def test_an_async_loop_without_a_bug_passes_crashes_and_all(draw: int | None) -> None:
    run_machine(machine(Loop), draw)


# --- the virtual clock ---------------------------------------------------------------------



def test_a_virtual_loop_passes_waits_at_once_and_in_order() -> None:
    clock = VirtualClock(T0)
    loop = virtual_event_loop(clock)
    woke: list[tuple[str, float]] = []

    async def sleeper(name: str, seconds: float) -> None:
        await asyncio.sleep(seconds)
        woke.append((name, clock.elapsed))

    async def main() -> None:
        await asyncio.gather(sleeper("week", 7 * 86400), sleeper("hour", 3600),
                             sleeper("now", 0))

    try:
        loop.run_until_complete(main())
    finally:
        loop.close()
    assert woke == [("now", 0.0), ("hour", 3600.0), ("week", 7 * 86400.0)]
    assert clock.now == datetime(2026, 12, 8, 9, tzinfo=UTC)


def test_a_timer_due_after_194_days_of_virtual_time_runs() -> None:
    """Past 2**24 s a float's step is wider than asyncio's 1 ns resolution: with it, a timer due
    exactly now never ran and the loop spun for ever (found when a drawn wait ran a heartbeat
    task that far). Run in a child process, so a regression fails here instead of hanging."""
    code = (
        "import asyncio, datetime\n"
        "from autodev_shell.asyncio_harness import VirtualClock, virtual_event_loop\n"
        "clock = VirtualClock(datetime.datetime(2026, 12, 1, tzinfo=datetime.UTC))\n"
        "clock.advance(2.0 ** 30)\n"
        "loop = virtual_event_loop(clock)\n"
        "async def beat():\n"
        "    for _ in range(3):\n"
        "        await asyncio.sleep(600)\n"
        "async def main():\n"
        "    await asyncio.gather(beat(), asyncio.sleep(1))\n"
        "loop.run_until_complete(main())\n"
        "print(clock.elapsed - 2.0 ** 30)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert float(done.stdout) == pytest.approx(1800.0, abs=0.01)


def test_a_loop_awaiting_what_never_comes_is_a_clear_error_not_a_hang() -> None:
    loop = virtual_event_loop(VirtualClock(T0))

    async def forever() -> None:
        await loop.create_future()  # nobody sets it

    try:
        with pytest.raises(VirtualTimeDeadlock, match="awaits something that never comes"):
            loop.run_until_complete(forever())
    finally:
        for task in asyncio.all_tasks(loop):
            task.cancel()
        loop.close()
