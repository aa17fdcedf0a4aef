"""Misuse of the scheduler is loud (issue 12 item 2; STYLE: h11's events, an illegal event
cannot exist): a value that is not an event, an event built with the wrong types, and time
going backwards each raise at once, naming what was expected."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from helpers.clock import T0
from hypothesis import given
from hypothesis import strategies as st

from autodev_core import (
    AutodevError,
    CallEnded,
    Engine,
    GateApproved,
    GateRequested,
    LimitNotice,
    MessageArrived,
    Participant,
    RunStarted,
    SchedulerConfig,
    SchedulerProtocolError,
    StartCall,
    Woke,
    initial_state,
    step,
)


def _running() -> Any:
    config = SchedulerConfig(
        team=(Participant(id="ana", provider="claude"), Participant(id="rui", provider="codex"))
    )
    state, effects = step(initial_state(config), RunStarted(now=T0))
    (start,) = [e for e in effects if isinstance(e, StartCall)]
    return state, start


@pytest.mark.parametrize("thing", ["Woke", None, 3, T0, object()])
def test_step_refuses_a_value_that_is_not_an_event_with_a_type_error(thing: object) -> None:
    state, _start = _running()
    with pytest.raises(TypeError) as raised:
        step(state, thing)  # type: ignore[arg-type]
    message = str(raised.value)
    # The error names what was given and every event type step accepts.
    assert type(thing).__name__ in message
    for name in ("RunStarted", "CallEnded", "Woke", "MessageArrived", "StopRequested",
                 "PauseRequested", "ResumeRequested", "GateRequested", "GateApproved"):
        assert name in message


def test_an_engine_given_as_a_string_is_refused_when_the_event_is_built() -> None:
    with pytest.raises(TypeError, match="Engine"):
        CallEnded(now=T0, participant="rui", engine="codex", kind="post",  # type: ignore[arg-type]
                  posted=True)


@pytest.mark.parametrize(
    "fields",
    [
        {"participant": 3},
        {"participant": ""},
        {"posted": "yes"},
        {"exit_code": "1", "kind": "exit"},
        {"exit_code": True, "kind": "exit"},
        {"limit": "limit", "kind": "limit"},
        {"kind": "crash"},
    ],
)
def test_CallEnded_checks_every_field_type(fields: dict[str, Any]) -> None:
    base: dict[str, Any] = {
        "now": T0, "participant": "rui", "engine": Engine("codex"), "kind": "post",
        "posted": True,
    }
    base.update(fields)
    if base["kind"] != "post":
        base["posted"] = False
    with pytest.raises((TypeError, ValueError)):
        CallEnded(**base)


@pytest.mark.parametrize("event_type", [GateRequested, GateApproved])
@pytest.mark.parametrize("participant", [None, 7, ""])
def test_gate_events_need_a_participant_id(event_type: Any, participant: object) -> None:
    with pytest.raises((TypeError, ValueError)):
        event_type(now=T0, participant=participant)


@pytest.mark.parametrize("now", ["2026-12-01T09:00:00+00:00", 0, datetime(2026, 12, 1)])
def test_every_event_needs_an_aware_datetime(now: object) -> None:
    for event_type in (RunStarted, Woke, MessageArrived):
        with pytest.raises((TypeError, ValueError)):
            event_type(now=now)


def test_a_call_ending_before_it_started_is_refused_naming_both_instants() -> None:
    state, start = _running()
    early = T0 - timedelta(hours=5)
    ended = CallEnded(now=early, participant=start.participant, engine=start.engine,
                      kind="post", posted=True)
    with pytest.raises(SchedulerProtocolError) as raised:
        step(state, ended)
    message = str(raised.value)
    assert early.isoformat() in message and T0.isoformat() in message
    assert isinstance(raised.value, AutodevError)


@given(
    forward=st.lists(st.integers(min_value=0, max_value=3600), min_size=1, max_size=6),
    back=st.integers(min_value=1, max_value=10**6),
)
def test_time_never_goes_backwards_between_events(forward: list[int], back: int) -> None:
    """Any event earlier than the last one fed is refused; the same instant is fine."""
    state, start = _running()
    now = T0
    for seconds in forward:
        now += timedelta(seconds=seconds)
        state, _effects = step(state, MessageArrived(now=now))
    assert state.last_event_at == now
    with pytest.raises(SchedulerProtocolError, match="earlier than"):
        step(state, MessageArrived(now=now - timedelta(seconds=back)))
    same, _ = step(state, CallEnded(now=now, participant=start.participant,
                                    engine=start.engine, kind="post", posted=True))
    assert same.last_event_at == now


def test_a_limit_notice_of_another_type_is_refused() -> None:
    notice = LimitNotice(provider="codex", reset_at=None, text="limit")
    ok = CallEnded(now=T0, participant="rui", engine=Engine("codex"), kind="limit", limit=notice)
    assert ok.limit == notice


@pytest.mark.parametrize(
    ("saved", "said"),
    [
        ('{"status": "stopped"}', r"not JSON text: call from_json\(text, SchedulerState\) first"),
        (b'{"status": "stopped"}', r"not JSON text: call from_json\(text, SchedulerState\) first"),
        ({"status": "stopped"}, "not dict"),
    ],
)
def test_restore_state_handed_what_is_not_a_saved_state_says_so_in_one_line(
        saved: object, said: str) -> None:
    """A33 restarts from the saved state: JSON text or a dict is a caller's mistake, named in
    one line (docs/orchestrators.md, Restarting), never `'str' object has no attribute 'config'`."""
    from autodev_core.scheduler.restore import NotASavedState, restore_state

    state, _ = _running()
    with pytest.raises(NotASavedState, match=said) as caught:
        restore_state(state.config, saved)  # type: ignore[arg-type]
    assert "\n" not in str(caught.value)
    with pytest.raises(NotASavedState, match="SchedulerConfig first, not SchedulerState"):
        restore_state(state, state)  # type: ignore[arg-type]
    assert restore_state(state.config, state).config == state.config
