"""h2's discipline: transitions are a table, anything outside it is refused, and the documented
diagram and table are exactly the ones generated from the table."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from helpers.clock import T0 as NOW

from autodev_core.detection.classification import UsageReading
from autodev_core.engine import Engine
from autodev_core.participant import Participant
from autodev_core.scheduler import (
    EVENT_TYPES,
    STATUSES,
    TRANSITIONS,
    CallCancelled,
    CallEnded,
    GateApproved,
    GateRequested,
    LimitCleared,
    LimitObserved,
    Log,
    PauseRequested,
    ResumeRequested,
    RunStarted,
    SchedulerConfig,
    SchedulerProtocolError,
    SchedulerState,
    Sleep,
    StartCall,
    StatusChanged,
    StopRequested,
    UsageObserved,
    initial_state,
    step,
)
from autodev_core.scheduler.diagram import mermaid, table
from autodev_core.serialization import from_json, from_yaml, to_json, to_yaml

DOC = Path(__file__).resolve().parents[2] / "docs" / "scheduler.md"


def test_docs_embed_exactly_the_generated_diagram() -> None:
    text = DOC.read_text(encoding="utf-8")
    block = text.split("```mermaid\n", 1)[1].split("```", 1)[0]
    assert block == mermaid()


def test_docs_embed_exactly_the_generated_transition_table() -> None:
    text = DOC.read_text(encoding="utf-8")
    block = text.split("<!-- transitions:", 1)[1].split("-->\n", 1)[1]
    assert block.split("<!-- end transitions -->", 1)[0] == table()


def test_the_table_has_an_entry_for_every_status_and_event() -> None:
    rows = table().splitlines()[2:]
    assert [row.split(" | ")[0] for row in rows] == [f"| `{t.__name__}`" for t in EVENT_TYPES]
    for row, event_type in zip(rows, EVENT_TYPES, strict=True):
        cells = row.strip("|").split(" | ")[1:]
        assert len(cells) == len(STATUSES)
        for cell, status in zip(cells, STATUSES, strict=True):
            assert (cell.strip() == "—") == ((status, event_type) not in TRANSITIONS)


def test_the_diagram_shows_every_status() -> None:
    for status in STATUSES:
        assert f"    {status} --> " in mermaid() or f"--> {status} :" in mermaid()


def test_every_status_accepts_stop_and_call_end_but_run_started_only_when_stopped() -> None:
    for status in STATUSES:
        assert (status, CallEnded) in TRANSITIONS
        assert ((status, RunStarted) in TRANSITIONS) == (status == "stopped")


def _state(status: str) -> SchedulerState:
    config = SchedulerConfig(team=(Participant(id="ana", provider="claude"),))
    return SchedulerState(
        config=config, status=status, empties=(0,), seats=(0,), passed=(0,),  # type: ignore[arg-type]
        wait_until=NOW if status in ("rate_limited", "unreachable", "backing_off") else None,
    )


def _event(kind: type) -> object:
    if kind is CallEnded:
        return CallEnded(now=NOW, participant="ana", engine=Engine("claude"), kind="post",
                         posted=True)
    if kind in (GateApproved, GateRequested):
        return kind(now=NOW, participant="ana")
    if kind is LimitObserved:
        return LimitObserved(now=NOW, engine=Engine("claude"), until=NOW, source="laptop")
    if kind is LimitCleared:  # docs/limits.md: a limit lifted by hand
        return LimitCleared(now=NOW, engine=Engine("claude"))
    if kind is UsageObserved:  # issue 25
        return UsageObserved(now=NOW, engine=Engine("claude"), source="laptop",
                             reading=UsageReading(provider="claude", utilization=0.97))
    return kind(now=NOW)


@pytest.mark.parametrize("status", STATUSES)
@pytest.mark.parametrize("kind", EVENT_TYPES, ids=lambda k: k.__name__)
def test_closure_every_pair_is_in_the_table_or_refused(status: str, kind: type) -> None:
    state = _state(status)
    event = _event(kind)
    if (status, kind) not in TRANSITIONS:
        with pytest.raises(SchedulerProtocolError):
            step(state, event)  # type: ignore[arg-type]
        return
    if kind in (CallEnded, CallCancelled):  # no call in flight: the caller's mistake
        with pytest.raises(SchedulerProtocolError, match="no call in flight"):
            step(state, event)  # type: ignore[arg-type]
        return
    new, _effects = step(state, event)  # type: ignore[arg-type]
    assert new.status in TRANSITIONS[(status, kind)][1]


def test_a_call_end_for_another_call_is_refused() -> None:
    config = SchedulerConfig(team=(Participant(id="ana", provider="claude"),))
    state, _ = step(initial_state(config), RunStarted(now=NOW))
    with pytest.raises(SchedulerProtocolError, match="in flight is ana on claude"):
        step(state, CallEnded(now=NOW, participant="ana", engine=Engine("codex"), kind="empty"))


def test_illegal_events_cannot_be_built() -> None:
    with pytest.raises(ValueError):
        CallEnded(now=NOW, participant="ana", engine=Engine("claude"), kind="limit")
    with pytest.raises(ValueError):
        CallEnded(now=NOW.replace(tzinfo=None), participant="a", engine=Engine("claude"),
                  kind="empty")
    with pytest.raises(ValueError):
        CallEnded(now=NOW, participant="a", engine=Engine("claude"), kind="exit", exit_code=0)
    with pytest.raises(ValueError):
        CallEnded(now=NOW, participant="a", engine=Engine("claude"), kind="network", posted=True)


def test_0_3_events_and_effects_round_trip_with_a_type_tag() -> None:
    from autodev_core.scheduler import Effect, Event

    effects = [
        StartCall(at=NOW, participant="ana", engine=Engine("claude", "sonnet"), model="sonnet",
                  turn_kind="fresh", turn_owner="ana"),
        Sleep(until=NOW, status="rate_limited", wakes_on_message=False),
        Log(at=NOW, message="claude limited until 10:00 — →"),
        StatusChanged(at=NOW, status="paused"),
    ]
    for effect in effects:
        text = to_json(effect, as_type=Effect)
        assert f'"type":"{type(effect).__name__}"' in text
        assert from_json(text, Effect) == effect
        assert from_yaml(to_yaml(effect, as_type=Effect), Effect) == effect
    for kind in EVENT_TYPES:
        event = _event(kind)
        assert from_json(to_json(event, as_type=Event), Event) == event


def _paused_mid_call() -> SchedulerState:
    config = SchedulerConfig(
        team=(Participant(id="ana", provider="claude"), Participant(id="rui", provider="codex"))
    )
    state, _ = step(initial_state(config), RunStarted(now=NOW))
    state, _ = step(state, PauseRequested(now=NOW))
    assert state.status == "paused" and state.call is not None
    return state


def test_A33_a_cancelled_call_leaves_its_turn_owed_and_resume_starts_it_again() -> None:
    # issue 9.1: pause cut the call short; resume must start the owed turn, not sit `running`.
    later = NOW + timedelta(minutes=5)
    state, effects = step(_paused_mid_call(), CallCancelled(now=later))
    assert effects == () and state.call is None and state.status == "paused"
    assert state.runtime == timedelta(minutes=5)  # A21: the call's time is call time
    state, effects = step(state, ResumeRequested(now=later))
    starts = [e for e in effects if isinstance(e, StartCall)]
    assert [(s.participant, s.turn_owner) for s in starts] == [("ana", "ana")]
    assert state.status == "running"


def test_A33_a_stop_then_a_new_start_starts_the_cancelled_turn_again() -> None:
    state, _ = step(_paused_mid_call(), StopRequested(now=NOW))
    state, _ = step(state, CallCancelled(now=NOW))
    state, effects = step(state, RunStarted(now=NOW))
    assert [e.participant for e in effects if isinstance(e, StartCall)] == ["ana"]


def test_a_call_is_cancelled_only_after_a_pause_or_stop() -> None:
    config = SchedulerConfig(team=(Participant(id="ana", provider="claude"),))
    state, _ = step(initial_state(config), RunStarted(now=NOW))
    with pytest.raises(SchedulerProtocolError, match="CallCancelled makes no sense while"):
        step(state, CallCancelled(now=NOW))
