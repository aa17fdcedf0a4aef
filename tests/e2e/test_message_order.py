"""Several user messages said during one call, or as it ends, are posted in the order said (SPEC
C6; docs/cli.md: `autodev say` is "posted to the thread as user at once"). The daemon takes every
queued message at its next look at the queue and posts them as one step (`loop/messages.py`); the
thread must show them as the operator said them — not reversed, not sorted by their text or any
other key.

The loop runs in-process on a fake clock with scripted calls; the messages are queued by a second
connection to the store, as the `autodev say` process does (as
tests/e2e/test_messages_said_as_a_call_ends.py
drives it)."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from helpers.scripted import TWO_TAKING_TURNS, ScriptedCLIs, scripted_runner, store_and_say

from autodev_core.simulation.scenario import parse_scenario
from autodev_shell.clock import FakeClock

SCENARIO = TWO_TAKING_TURNS

#: Said in this order: neither sorted by text, nor reversed, is the order said.
DURING = ("mango during", "apple during", "zebra during")
AT_END = ("kiwi at end", "banana at end", "yam at end")


def test_C6_messages_said_during_one_call_are_posted_in_the_order_said(tmp_path: Path) -> None:
    scenario = parse_scenario(SCENARIO)
    clock = FakeClock(scenario.start)

    with store_and_say(tmp_path / "run.db", scenario.start) as (store, other):
        def midway(call: int) -> None:
            if call == 1:  # all three before the call's next look at the queue, a second apart
                for text in DURING:
                    other.enqueue_control("say", text, now=clock.now())
                    clock.advance(1)
                runner._during_call()

        def ended(call: int, at: datetime) -> None:
            if call == 1:  # after the call's last look at the queue
                for text in AT_END:
                    other.enqueue_control("say", text, now=at)
            if call == 2:
                other.enqueue_control("stop", now=at)

        clis = ScriptedCLIs(scenario, clock, midway=midway, ended=ended)
        runner = scripted_runner(scenario, store, clock, clis, run_id="t", slice_seconds=3600)
        runner.run(stop_at=scenario.start + timedelta(hours=1))
        thread = [(p.participant, p.text) for p in store.thread()]
    said = [text for who, text in thread if who == "user"]
    assert said == [*DURING, *AT_END], thread
    # Those said during the call are in the thread before its post; those said as it ended,
    # after it and before the next call's.
    assert thread[:8] == [*(("user", t) for t in DURING), ("ana", "ok"),
                          *(("user", t) for t in AT_END), ("rui", "ok")], thread
    prompt = clis.prompts[1][2]
    assert [prompt.index(t) for t in (*DURING, *AT_END)] == sorted(
        prompt.index(t) for t in (*DURING, *AT_END))


def _said_in_batches(tmp_path: Path, batches: list[list[str]], *, apart: int) -> list[str]:
    """The user posts of a run in which, during the first call, each batch is said at one
    instant before one look at the queue, `apart` seconds after the last; the run stops as
    that call ends."""
    scenario = parse_scenario(SCENARIO)
    clock = FakeClock(scenario.start)

    with store_and_say(tmp_path / "run.db", scenario.start) as (store, other):
        def midway(call: int) -> None:
            if call == 1:
                for batch in batches:
                    for text in batch:
                        other.enqueue_control("say", text, now=clock.now())
                    runner._during_call()
                    clock.advance(apart)

        def ended(call: int, at: datetime) -> None:
            if call == 1:
                other.enqueue_control("stop", now=at)

        clis = ScriptedCLIs(scenario, clock, midway=midway, ended=ended)
        runner = scripted_runner(scenario, store, clock, clis, run_id="t", slice_seconds=3600)
        runner.run(stop_at=scenario.start + timedelta(hours=1))
        return [p.text for p in store.thread() if p.participant == "user"]


def test_C6_messages_said_in_two_looks_of_one_call_keep_the_order_said(tmp_path: Path) -> None:
    """Two said before one look at the queue, two more before the next: four posts in the
    order said, across the two steps that post them."""
    texts = ["pear 1", "fig 2", "date 3", "cherry 4"]
    assert _said_in_batches(tmp_path, [texts[:2], texts[2:]], apart=1) == texts


def test_C6_a_dozen_messages_said_at_once_are_posted_in_the_order_said(tmp_path: Path) -> None:
    """Twelve at once (as fast as an operator's script says them: one instant), so that their
    queue ids (and post keys `say:<id>`) pass 9 → 10: an order by any text (the message, its
    key) is not the order said."""
    texts = [f"{n} said" for n in range(1, 13)]
    assert _said_in_batches(tmp_path, [texts], apart=0) == texts
