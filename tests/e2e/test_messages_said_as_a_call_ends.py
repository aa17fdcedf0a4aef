"""A message said as a call ends (SPEC C6, A19, A30; docs/cli.md: "posted to the thread as user
at once"): `autodev say` queues it after the call's last look at the queue, before the loop has
carried out the call's end. It must still be posted before the next call starts — in that
call's prompt — and never after a message said later (found by an operator's soak: a daemon
stopped with SIGSTOP and continued posted "frozen 2" before "frozen 1", each a whole call late).

The loop runs in-process on a fake clock with scripted calls; the message is queued by a second
connection to the store, as the `autodev say` process does."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from helpers.scripted import (
    TWO_TAKING_TURNS,
    ScriptedCLIs,
    one_member_whose_first_call,
    scripted_runner,
    store_and_say,
)

from autodev_core.simulation.scenario import parse_scenario
from autodev_shell.clock import FakeClock
from autodev_shell.store.run_store import RunStore

NOW = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)

SCENARIO = TWO_TAKING_TURNS


def test_C6_a_message_said_as_a_call_ends_is_posted_before_the_next_call(
        tmp_path: Path) -> None:
    scenario = parse_scenario(SCENARIO)
    clock = FakeClock(scenario.start)
    said: list[str] = []

    with store_and_say(tmp_path / "run.db", scenario.start) as (store, other):
        def midway(call: int) -> None:
            if call == 2:  # one said while the call runs: posted at once, in the call,
                said.append("said during call 2")  # as the real call's look at the queue does
                other.enqueue_control("say", said[-1], now=clock.now())
                runner._during_call()

        def ended(call: int, at: datetime) -> None:
            if call in (1, 2):  # said after the call's last look at the queue
                said.append(f"said as call {call} ended")
                other.enqueue_control("say", said[-1], now=at)
            if call == 4:
                other.enqueue_control("stop", now=at)

        clis = ScriptedCLIs(scenario, clock, midway=midway, ended=ended)
        runner = scripted_runner(scenario, store, clock, clis, run_id="t", slice_seconds=3600)
        summary = runner.run(stop_at=scenario.start + timedelta(hours=1))
        thread = [(p.participant, p.text) for p in store.thread()]
    prompts = [prompt for *_, prompt in clis.prompts]
    assert summary.status == "stopped"
    # Each message right after the call it was said at the end of, before the next call's post.
    # said = [as call 1 ended, during call 2, as call 2 ended]: each in the thread in the
    # order said, right after the call it was said at the end of.
    assert thread[:7] == [("ana", "ok"), ("user", said[0]), ("user", said[1]), ("rui", "ok"),
                          ("user", said[2]), ("ana", "ok"), ("rui", "ok")], thread
    # ... so the next call was asked with it in the thread.
    assert said[0] in prompts[1] and said[2] in prompts[2]


LIMITED = one_member_whose_first_call(
    '{stdout: "Claude AI usage limit reached|1796205600", exit: 1, duration: 30}')


def test_A19_a_message_said_as_a_call_ends_in_a_limit_is_posted_as_the_wait_starts(
        tmp_path: Path) -> None:
    """The call ends in a limit for everyone (a wait of an hour, A18): the message said as it
    ended is in the thread when the wait starts, not an hour later (A19: it does not end it)."""
    scenario = parse_scenario(LIMITED)
    clock = FakeClock(scenario.start)
    seen_in_waits: list[tuple[float, bool]] = []
    with store_and_say(tmp_path / "run.db", scenario.start) as (store, other):
        def ended(call: int, at: datetime) -> None:
            if call == 1:
                other.enqueue_control("say", "said as the limit came", now=at)
            else:
                other.enqueue_control("stop", now=at)

        def look(_clock: FakeClock, seconds: float) -> None:
            posted = any(p.participant == "user" for p in other.thread())
            seen_in_waits.append((seconds, posted))

        clock.on_every_wait(look)
        clis = ScriptedCLIs(scenario, clock, ended=ended)
        runner = scripted_runner(scenario, store, clock, clis, run_id="t")
        runner.run(stop_at=scenario.start + timedelta(hours=3))
        thread = [(p.participant, p.text) for p in store.thread()]
    calls = [prompt for *_, prompt in clis.prompts]
    assert thread == [("user", "said as the limit came"), ("ana", "ok")], thread
    assert len(calls) == 2 and "said as the limit came" in calls[1]
    assert seen_in_waits and seen_in_waits[0][1], seen_in_waits[:3]


def test_C3_a_long_message_is_cleaned_before_the_store_s_write_lock(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`autodev say - < 50MB-of-odd-bytes` turns each undecodable byte into U+FFFD, which takes
    seconds: done holding the store's write lock, the daemon's commits failed meanwhile
    ("database is locked": revisions shadowed, turns deferred). The daemon must be able to
    write while the text is made storable."""
    from autodev_shell.store import command_queue as store_controls

    db = tmp_path / "run.db"
    RunStore.open(db, create=True, run_id="t", now=NOW).close()
    writable: list[bool] = []
    real = store_controls.clean_text

    def cleaning(text: str) -> str:
        daemon = sqlite3.connect(db, timeout=0, isolation_level=None)  # the daemon's commit
        try:
            daemon.execute("BEGIN IMMEDIATE")
            daemon.execute("ROLLBACK")
            writable.append(True)
        except sqlite3.OperationalError:
            writable.append(False)
        finally:
            daemon.close()
        return real(text)

    monkeypatch.setattr(store_controls, "clean_text", cleaning)
    with RunStore.open(db, check=False) as store:
        store.enqueue_control("say", "odd \udcff bytes", now=NOW)
        assert [c.arg for c in store.pending_controls()] == ["odd \ufffd bytes"]
    assert writable == [True]


FAILED = one_member_whose_first_call('{stderr: "panic: something broke", exit: 2, duration: 30}')


def test_A30_a_message_said_as_a_call_fails_ends_the_failure_wait_at_once(
        tmp_path: Path) -> None:
    """The call fails (a failure wait follows, A28); the message said as it ended ends that
    wait at once (A30), as one said during the wait does: the next call starts when the failed
    one ended, with the message in its prompt."""
    scenario = parse_scenario(FAILED)
    clock = FakeClock(scenario.start)
    with store_and_say(tmp_path / "run.db", scenario.start) as (store, other):
        def ended(call: int, at: datetime) -> None:
            other.enqueue_control("say" if call == 1 else "stop",
                                  "said as the call failed" if call == 1 else "", now=at)

        clis = ScriptedCLIs(scenario, clock, ended=ended)
        runner = scripted_runner(scenario, store, clock, clis, run_id="t")
        runner.run(stop_at=scenario.start + timedelta(hours=3))
        thread = [(p.participant, p.text) for p in store.thread()]
    calls = list(zip(clis.starts, [prompt for *_, prompt in clis.prompts], strict=True))
    ended_at = clis.ends
    assert thread == [("user", "said as the call failed"), ("ana", "ok")], thread
    assert len(calls) == 2
    assert calls[1][0] == ended_at[0], (calls[1][0], ended_at[0])  # no failure wait
    assert "said as the call failed" in calls[1][1]
