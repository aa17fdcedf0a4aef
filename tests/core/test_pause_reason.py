"""Why the run is paused (A29, A31, A32, A42; docs/api.md `SchedulerState.paused_for`): each
pause records its reason, whatever takes the run out of `paused` clears it, a restore keeps it,
and a state saved before the field existed still loads. The property — paused exactly when a
reason is said — is the shipped machine's invariant `paused_exactly_when_a_reason_is_said`
(autodev_core/testing/scheduler_machine.py, run by tests/core/test_scheduler_stateful.py)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from helpers.scheduler_runs import Run, member

from autodev_core.names import PAUSE_NEEDS, PAUSE_REASONS
from autodev_core.scheduler import (
    PauseRequested,
    ResumeRequested,
    SchedulerState,
    StopRequested,
    step,
)
from autodev_core.scheduler.restore import restore_state
from autodev_core.serialization import from_json, to_json


def test_A31_three_empty_turns_pause_for_empty() -> None:
    run = Run(member("ana", "claude"))
    run.start()
    for _ in range(2):
        run.end("empty")
        assert run.state.paused_for is None
        run.wake()
    run.end("empty")
    assert (run.state.status, run.state.paused_for) == ("paused", "empty")


def test_A29_the_twelfth_failure_pauses_for_failures() -> None:
    run = Run(member("ana", "claude"), member("bob", "codex"))
    run.start()
    for _ in range(11):
        run.end("exit", exit_code=2)
        assert run.state.paused_for is None
        run.wake()
    run.end("timeout")
    assert (run.state.status, run.state.paused_for) == ("paused", "failures")


def test_A32_claude_not_logged_in_pauses_for_login() -> None:
    run = Run(member("ana", "claude"))
    run.start()
    run.end("login")
    assert (run.state.status, run.state.paused_for) == ("paused", "login")


def test_an_operator_pause_is_the_operators_in_a_call_and_in_a_wait() -> None:
    run = Run(member("ana", "claude"))
    run.start()
    run.feed(PauseRequested(now=run.now))  # in a call
    assert (run.state.status, run.state.paused_for) == ("paused", "operator")
    run.feed(ResumeRequested(now=run.now))
    run.end("exit")  # a failure wait
    assert run.state.status == "backing_off"
    run.feed(PauseRequested(now=run.now))
    assert (run.state.status, run.state.paused_for) == ("paused", "operator")


def test_a_pause_asked_of_a_paused_run_keeps_the_reason_it_has() -> None:
    run = Run(member("ana", "claude"))
    run.start()
    run.end("login")
    run.feed(PauseRequested(now=run.now))
    assert run.state.paused_for == "login"


def test_resume_and_stop_clear_the_reason() -> None:
    run = Run(member("ana", "claude"))
    run.start()
    run.end("login")
    run.now += timedelta(minutes=5)
    run.feed(ResumeRequested(now=run.now))
    assert run.state.status == "running" and run.state.paused_for is None
    run.end("login")
    run.feed(StopRequested(now=run.now))
    assert run.state.status == "stopped" and run.state.paused_for is None


def test_a_restore_keeps_why_the_saved_run_paused() -> None:
    run = Run(member("ana", "claude"))
    run.start()
    run.end("login")
    saved = from_json(to_json(run.state), SchedulerState)
    restored = restore_state(run.config, saved)
    assert (restored.status, restored.paused_for) == ("paused", "login")


def test_a_state_saved_before_the_field_existed_still_loads_and_restores() -> None:
    run = Run(member("ana", "claude"))
    run.start()
    run.end("login")
    data = json.loads(to_json(run.state))
    assert data.pop("paused_for") == "login"  # written as the other fields are
    old = from_json(json.dumps(data), SchedulerState)
    assert (old.status, old.paused_for) == ("paused", None)
    restored = restore_state(run.config, old)
    assert (restored.status, restored.paused_for) == ("paused", None)
    resumed, _effects = step(restored, ResumeRequested(now=run.now))
    assert resumed.status == "running" and resumed.paused_for is None


def test_an_unknown_reason_is_refused() -> None:
    run = Run(member("ana", "claude"))
    data = json.loads(to_json(run.state))
    data["status"], data["paused_for"] = "paused", "coffee"
    with pytest.raises(Exception) as refused:  # cattrs groups the field's own error
        from_json(json.dumps(data), SchedulerState)
    assert "coffee" in repr(getattr(refused.value, "exceptions", refused.value))


def test_every_reason_has_its_few_words() -> None:
    assert set(PAUSE_NEEDS) == set(PAUSE_REASONS)
    assert PAUSE_NEEDS["login"] == "login needed"
