"""The shipped `OrchestratorMachine` catches what a user's loop gets wrong (issues 28 and 39).

`Loop` is a correct reference loop written as an orchestrator author would, from the docs: every
event to `step`, every effect carried out through the world (the CLI called with the input it
sends, B19's saved input reused on a retry, each post appended to the thread once, sleeps slept
and woken with the clock's time), the state saved after each step, a restart that loads the store
through `restore_state` with the team folder's config. Each class after it is a copy with ONE bug
planted by hand — the 16 of issue 39 and two of issue 28 — and the machine must fail it, with the
message naming its rule, under the derandomized `ci` draw and under random seeds (the 10-seed
sweep runs with `SWEEP_SEEDS=all`; CI runs the `ci` draw and two seeds). The loop without a bug
passes.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import Any

import attrs
import pytest
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
from autodev_core.testing import OrchestratorMachine, World
from autodev_shell.adapters import post_of

SEEDS = [3, 17, 101, 2026, 40_961, 77_777, 123_457, 999_983, 31_337, 65_537]
#: CI runs the derandomized draw and two seeds; `SWEEP_SEEDS=all` runs all ten.
CI_SEEDS = SEEDS if os.environ.get("SWEEP_SEEDS") == "all" else SEEDS[:2]


class Loop:
    """A correct loop."""

    def __init__(self, config: Any, world: World) -> None:
        self.world = world
        self.state = initial_state(config)
        self.store: dict[str, Any] = {}  # the database: it outlives a crash

    # -- the CLI call -------------------------------------------------------------------------

    def compute_input(self, effect: StartCall) -> str:
        """What a real prompt builder makes: the date and the end of the thread."""
        shown = " | ".join(text[:40] for _, text in self.world.thread[-2:])
        return f"{self.world.now:%Y-%m-%d %H:%M:%S} — {effect.turn_owner}'s turn. {shown}"

    def input_for(self, effect: StartCall) -> str:
        """B19: a retry or a hop reapplies the input saved with its first attempt."""
        parent = str(len(self.world.thread))
        plan = plan_call_input(effect.turn_kind, self.store.get("input"),
                               parent_input_id=parent, parent_text=parent)
        if plan.context is not None:
            return plan.context
        text = self.compute_input(effect)
        self.store["input"] = bind_input_context(parent, parent, text)
        return text

    def run(self, effect: StartCall) -> Any:
        return self.world.call(effect, self.input_for(effect))

    def classify(self, effect: StartCall, out: Any, now: datetime) -> Any:
        return classify_output(effect.engine.provider, stdout=out.stdout, stderr=out.stderr,
                               exit_code=out.exit_code, now=now, local_tz=self.state.config.zone)

    def post_of(self, effect: StartCall, out: Any, seen: Any) -> str | None:
        """Only a clean exit posts, and never a notice."""
        return post_of(effect.engine.provider, out.stdout, out.exit_code, out.timed_out)

    def report(self, effect: StartCall, out: Any, now: datetime, seen: Any,
               post: str | None) -> CallEnded:
        return call_ended(now, effect.participant, effect.engine, seen, posted=post is not None,
                          exit_code=out.exit_code, timed_out=out.timed_out)

    def carry_call(self, effect: StartCall) -> Event:
        out = self.run(effect)
        now = self.world.now
        seen = self.classify(effect, out, now)
        post = self.post_of(effect, out, seen)
        if post is not None:
            self.world.post(effect.participant, post)
            self.store["last post"] = (effect.participant, post)
        return self.report(effect, out, now, seen, post)

    # -- waits --------------------------------------------------------------------------------

    def carry_sleep(self, effect: Sleep) -> Event | None:
        return Woke(now=self.world.sleep_until(effect.until))

    # -- the step -----------------------------------------------------------------------------

    def accept(self, event: Event) -> bool:
        return True

    def handle(self, event: Event) -> list[Event]:
        if not self.accept(event):
            return []
        self.save_before()
        self.state, effects = step(self.state, event)
        follow: list[Event] = []
        for effect in effects:
            if isinstance(effect, Log):
                self.world.log(effect.message)
            elif isinstance(effect, StartCall):
                follow.append(self.carry_call(effect))
            elif isinstance(effect, Sleep):
                woke = self.carry_sleep(effect)
                if woke is not None:
                    follow.append(woke)
        self.save()
        return follow

    def save_before(self) -> None:
        pass

    def save(self) -> None:
        self.store["state"] = to_json(self.state)

    def saved(self) -> SchedulerState | None:
        text = self.store.get("state")
        return None if text is None else from_json(text, SchedulerState)

    # -- a restart ----------------------------------------------------------------------------

    def load(self, config: Any) -> None:
        self.state = restore_state(config, self.saved())

    @classmethod
    def restart(cls, crashed: Any, config: Any, world: World) -> Any:
        loop = cls(config, world)
        loop.store = crashed.store
        loop.load(config)
        return loop


# --- issue 28's five, then the rest of issue 39's ten caught before ------------------------------


class DropsPosts(Loop):
    def report(self, effect: StartCall, out: Any, now: datetime, seen: Any,
               post: str | None) -> CallEnded:
        return super().report(effect, out, now, seen, None)


class TimeoutIsAFailure(Loop):
    def report(self, effect: StartCall, out: Any, now: datetime, seen: Any,
               post: str | None) -> CallEnded:
        return call_ended(now, effect.participant, effect.engine, seen, posted=post is not None,
                          exit_code=out.exit_code if out.exit_code is not None else 1)


class StampsTheStart(Loop):
    def report(self, effect: StartCall, out: Any, now: datetime, seen: Any,
               post: str | None) -> CallEnded:
        return super().report(effect, out, effect.at, seen, post)  # the call's start


class RestartsFromScratch(Loop):
    def load(self, config: Any) -> None:
        self.state = initial_state(config)  # forgets the owed turn and the calls made


class RestartsAsSaved(Loop):
    def load(self, config: Any) -> None:
        saved = self.saved()
        self.state = saved if saved is not None else initial_state(config)


class CallsTwice(Loop):
    def run(self, effect: StartCall) -> Any:
        out = super().run(effect)
        if out.exit_code != 0:  # "one more try never hurts": a second call the core never asked
            out = self.world.call(effect, self.input_for(effect))
        return out


class NaiveTimes(Loop):
    def carry_sleep(self, effect: Sleep) -> Event | None:
        woke = self.world.sleep_until(effect.until)
        return Woke(now=woke.replace(tzinfo=None))  # "it is UTC anyway"


class LosesAMessage(Loop):
    def accept(self, event: Event) -> bool:
        # a message while a call runs is "seen by the next call anyway"
        return not (isinstance(event, MessageArrived) and self.state.status == "running")


class SavesBeforeTheStep(Loop):
    def save_before(self) -> None:
        self.save()

    def save(self) -> None:
        pass

    def load(self, config: Any) -> None:
        super().load(config)
        self.store["state"] = to_json(self.state)


class SwapsStreams(Loop):
    def classify(self, effect: StartCall, out: Any, now: datetime) -> Any:
        return super().classify(effect, attrs.evolve(out, stdout=out.stderr, stderr=out.stdout),
                                now)


class PrimaryAfterAHop(Loop):
    def run(self, effect: StartCall) -> Any:
        primary = self.state.config.team[self.state.config.index[effect.participant]].primary
        return self.world.call(attrs.evolve(effect, engine=primary), self.input_for(effect))


class ClassifiesInUTC(Loop):
    def classify(self, effect: StartCall, out: Any, now: datetime) -> Any:
        return classify_output(effect.engine.provider, stdout=out.stdout, stderr=out.stderr,
                               exit_code=out.exit_code, now=now, local_tz=UTC)


# --- the six issue 39 found missed ---------------------------------------------------------------


class IgnoresTheSleep(Loop):
    def carry_sleep(self, effect: Sleep) -> Event | None:
        return Woke(now=self.world.now)  # "the CLI will tell us if it is still limited"


class NeverEndsALimitWait(Loop):
    def carry_sleep(self, effect: Sleep) -> Event | None:
        woke = self.world.sleep_until(effect.until)
        if effect.status == "rate_limited":
            return None  # "the limit lifts itself at its reset"
        return Woke(now=woke)


class WakesAtTheDeadline(Loop):
    def carry_sleep(self, effect: Sleep) -> Event | None:
        self.world.sleep_until(effect.until)
        return Woke(now=effect.until)


class RetriesWithFreshInput(Loop):
    def input_for(self, effect: StartCall) -> str:
        return self.compute_input(effect)


class PostsTwiceAfterACrash(Loop):
    @classmethod
    def restart(cls, crashed: Any, config: Any, world: World) -> Any:
        loop = super().restart(crashed, config, world)
        last = loop.store.get("last post")
        if last is not None:  # "in case the crash came before it was appended"
            world.post(*last)
        return loop


class TeamFromTheSavedState(Loop):
    def load(self, config: Any) -> None:
        saved = self.saved()
        self.state = restore_state(saved.config if saved is not None else config, saved)


def machine(loop: type[Loop]) -> type[RuleBasedStateMachine]:
    return planted(OrchestratorMachine, loop, make=loop, restart=loop.restart)


BUGS = [
    (DropsPosts, "your loop reported the call as"),
    (TimeoutIsAFailure, "your loop reported the call as"),
    (StampsTheStart, "your loop reported the call as"),
    (RestartsFromScratch, "after a restart your loop's state is not restore_state"),
    (RestartsAsSaved, "after a restart your loop's state is not restore_state"),
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
def test_the_machine_catches_a_planted_bug_in_the_ci_draw(loop: type[Loop], message: str) -> None:
    assert_caught(machine(loop), message, None)


@pytest.mark.parametrize("draw", CI_SEEDS)
@pytest.mark.parametrize(("loop", "message"), BUGS, ids=IDS)
def test_the_machine_catches_a_planted_bug_under_any_seed(
    loop: type[Loop], message: str, draw: int
) -> None:
    assert_caught(machine(loop), message, draw)


@pytest.mark.parametrize("draw", [None, *SEEDS[:3]])
def test_a_loop_without_a_bug_passes_crashes_and_all(draw: int | None) -> None:
    run_machine(machine(Loop), draw)


# --- issue 39 item 3: a zone that is UTC+0 on the old fixed start date --------------------------


def lisbon(config: Any) -> Any:
    return attrs.evolve(config, timezone="Europe/Lisbon")


@pytest.mark.parametrize("draw", [None, *CI_SEEDS])
def test_classifying_in_utc_is_caught_with_a_lisbon_team(draw: int | None) -> None:
    """Lisbon is UTC+0 on 2026-12-01, where every run used to start: the bug went unseen. Runs
    now start across the year and around Lisbon's DST edges, where it is UTC+1."""
    from autodev_core.testing import scheduler_configs

    caught = planted(OrchestratorMachine, ClassifiesInUTC, make=ClassifiesInUTC,
                     restart=ClassifiesInUTC.restart,
                     configs=scheduler_configs(max_team=3).map(lisbon))
    assert_caught(caught, "your loop reported the call as", draw)


def test_a_failure_names_its_rule_and_the_fields_that_differ() -> None:
    """Issue 39 item 4: the rule, what was expected, what the loop did, a short field diff."""
    from autodev_core.testing import HarnessFailure

    with pytest.raises(HarnessFailure) as caught:
        run_machine(machine(WakesAtTheDeadline), None)
    lines = str(caught.value).split("\n")
    assert lines[0] == "your loop stamped its wake with another time than the clock's"
    assert lines[1].startswith("  rule: A20, A21: a wake is stamped with the clock's time")
    assert lines[2].startswith("  expected: Woke(now=") and lines[3].startswith("  your loop: ")
    assert lines[3].endswith(" — the deadline")
    assert all(len(line) < 200 for line in lines)
    assert caught.value.rule.startswith("A20, A21")


def test_a_failure_replays_from_the_line_it_prints() -> None:
    """Issue 39 item 4: under the shipped settings a failure prints `@reproduce_failure(...)`;
    put on the machine, it replays that failure at once."""
    import re

    from hypothesis import Phase, reproduce_failure, settings
    from hypothesis.stateful import run_state_machine_as_test

    from autodev_core.testing import harness_settings

    # the shipped profile on a random draw; shrinking off, to keep CI short
    random_draw = settings(harness_settings(derandomize=False, max_examples=30),
                           phases=[Phase.generate])
    with pytest.raises(AssertionError) as first:
        run_state_machine_as_test(machine(IgnoresTheSleep), settings=random_draw)
    printed = re.search(r"@reproduce_failure\('([^']+)', b'([^']+)'\)",
                        "\n".join(getattr(first.value, "__notes__", [])))
    assert printed is not None, "the failure prints the line that replays it"
    replay = reproduce_failure(printed[1], printed[2].encode())(machine(IgnoresTheSleep))
    with pytest.raises(AssertionError) as again:
        run_state_machine_as_test(replay, settings=random_draw)
    assert str(again.value) == str(first.value)
