"""C6: an acknowledged `autodev say` reaches the thread exactly once whatever happens
after, and at once — also during a call and during a long limit wait, which it does not end
(A19). Real daemon, real SQLite, stand-in CLIs; plus a crash placed exactly between reading a
message and posting it."""

from __future__ import annotations

import io
from datetime import UTC, timedelta
from pathlib import Path

import pytest
from helpers.clock import T0 as NOW
from helpers.daemons import SLOW_FIRST_CLAUDE, Daemon, wait_for

from autodev_core.control.identity import resolve_active_identity
from autodev_core.detection import classify_output
from autodev_core.participant import Participant
from autodev_core.scheduler import SchedulerConfig, StartCall
from autodev_shell.calls import CallResult
from autodev_shell.clock import FakeClock
from autodev_shell.durability.writes import Durability
from autodev_shell.runner import Runner, StreamLog
from autodev_shell.store.run_store import RunStore


def _said(d: Daemon, text: str) -> int:
    return sum(1 for _, who, body in d.thread() if who == "user" and body == text)


def test_A19_a_message_during_a_limit_wait_is_in_the_thread_at_once(tmp_path: Path) -> None:
    d = Daemon(tmp_path, {"ana": "claude"}, {"claude": [{"kind": "limit"}]})
    d.start()
    try:
        wait_for(lambda: d.status() == "rate_limited", "the limit wait (hours)")
        d.control("say", "are you there?")
        wait_for(lambda: _said(d, "are you there?") == 1, "the message in the thread")
        assert d.status() == "rate_limited"  # A19: the message does not end the wait
        assert len(d.calls()) == 1
    finally:
        d.stop()
    assert _said(d, "are you there?") == 1


def test_a_message_during_a_call_is_in_the_thread_before_the_call_ends(tmp_path: Path) -> None:
    d = Daemon(tmp_path, {"ana": "claude"}, SLOW_FIRST_CLAUDE)
    d.start()
    try:
        wait_for(lambda: len(d.calls()) == 1, "the slow call")
        d.control("say", "hello mid-call")
        wait_for(lambda: _said(d, "hello mid-call") == 1, "the message in the thread")
        assert len(d.calls()) == 1  # the call is still the first one, still running
    finally:
        d.stop()


class _Crash(BaseException):
    """Stands for kill -9: nothing after it runs."""


def _runner(store: RunStore, clock: FakeClock, perform: object) -> Runner:
    config = SchedulerConfig(team=(Participant(id="ana", provider="claude"),))
    identity = resolve_active_identity(run_id="r")
    return Runner(
        config=config, store=store, durability=Durability.open(store, identity),
        identity=identity, clock=clock, log=StreamLog(config.zone, stream=io.StringIO()),
        perform_call=perform,  # type: ignore[arg-type]
        slice_seconds=60,
    )


def _posted(clock: FakeClock, effect: StartCall) -> CallResult:
    clock.advance(30)
    now = clock.now()
    return CallResult(
        provider=effect.engine.provider, argv=("claude",), started_at=now, ended_at=now,
        exit_code=0, stdout="", stderr="", stdout_bytes=0, stderr_bytes=0, timed_out=False,
        stopped_early=False, cancelled=False,
        classification=classify_output("claude", stdout="", now=now, local_tz=UTC),
        post="done", pid=None,
    )


@pytest.mark.parametrize("crash_after_polls", [1, 2])
def test_a_message_read_by_a_daemon_that_dies_is_posted_by_the_next_once(
    tmp_path: Path, crash_after_polls: int
) -> None:
    clock = FakeClock(NOW)
    store = RunStore.open(tmp_path / "run.db", create=True, run_id="r", now=NOW)
    store.enqueue_control("say", "keep me", now=NOW)
    polls = [0]

    def dies_mid_call(effect: StartCall, _member: Participant, _prompt: str) -> CallResult:
        # The daemon has seen the message (as its loop polls during a call), then dies.
        for _ in range(crash_after_polls):
            runner.controls.has("say")
            polls[0] += 1
        raise _Crash

    runner = _runner(store, clock, dies_mid_call)
    with pytest.raises(_Crash):
        runner.run(stop_at=NOW + timedelta(hours=1))
    assert polls[0] == crash_after_polls

    def posts(effect: StartCall, _member: Participant, _prompt: str) -> CallResult:
        return _posted(clock, effect)

    again = _runner(store, clock, posts)
    again.run(stop_at=NOW + timedelta(minutes=5))
    said = [p.text for p in store.thread() if p.participant == "user"]
    assert said == ["keep me"]
    store.close()
