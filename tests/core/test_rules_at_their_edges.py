"""Rules at their edges: instants exactly at a reset, waits for the later of a limit and an
outage, the search order from any due participant, the budget lines, readings at their bounds.

Each test names the slip it catches. Times are UTC; numbers (1 s after a first failure,
the outage retries of 1, 2, 4 minutes) are SPEC A27/A28's, written here on their own.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import attrs
from helpers.clock import T0
from helpers.scheduler_runs import member

from autodev_core import detect_limit
from autodev_core.detection.classification import LimitNotice
from autodev_core.engine import Engine
from autodev_core.participant import Participant
from autodev_core.scheduler import (
    CallEnded,
    Effect,
    Event,
    Log,
    RunStarted,
    SchedulerConfig,
    SchedulerState,
    Sleep,
    StartCall,
    Woke,
    initial_state,
    step,
)
from autodev_core.scheduler.state import EngineLimit, Outage


def at(hour: int, minute: int = 0, second: int = 0) -> datetime:
    return datetime(2026, 12, 1, hour, minute, second, tzinfo=UTC)


class Run:
    def __init__(self, *team: Participant, **config: object) -> None:
        self.config = SchedulerConfig(team=team, **config)  # type: ignore[arg-type]
        self.state: SchedulerState = initial_state(self.config)
        self.effects: tuple[Effect, ...] = ()
        self.now = T0

    def feed(self, event: Event) -> list[str]:
        self.state, self.effects = step(self.state, event)
        return [e.message for e in self.effects if isinstance(e, Log)]

    def end(
        self, kind: str, *, at_: datetime, reset: datetime | None = None, posted: bool = False
    ) -> list[str]:
        call = self.state.call
        assert call is not None
        self.now = at_
        limit = (
            LimitNotice(provider=call.engine.provider, reset_at=reset, text="limit")
            if kind == "limit"
            else None
        )
        return self.feed(
            CallEnded(
                now=at_, participant=call.participant, engine=call.engine,
                kind=kind,  # type: ignore[arg-type]
                posted=posted or kind == "post", limit=limit,
                exit_code=1 if kind == "exit" else None,
            )
        )

    @property
    def runner(self) -> tuple[str, str]:
        call = self.state.call
        assert call is not None
        return call.participant, str(call.engine)

    @property
    def sleep(self) -> Sleep:
        sleeps = [e for e in self.effects if isinstance(e, Sleep)]
        assert len(sleeps) == 1, self.effects
        return sleeps[0]


# ------------------------------------------------------------------------------------------------
# A18/A35 with A26: an entry both limited and out is back at the LATER of the two
# (planted: `limit >= outage` flipped in the wait's choice: a gate owner woke at 09:04)


def test_A35_an_engine_limited_and_out_is_waited_for_until_the_later_of_the_two() -> None:
    run = Run(member("ana", "claude", gate=True), member("bob", "codex"))
    run.state = attrs.evolve(
        run.state,
        limits=(EngineLimit(engine=Engine("claude"), until=at(12)),),
        outages=(Outage(provider="claude", retry_at=at(9, 4), attempts=3),),
    )
    lines = run.feed(RunStarted(now=T0))
    assert lines == ["ana cannot hand its turn over — waiting for claude, back at 12:00"]
    assert run.sleep.until == at(12) and run.state.status == "rate_limited"


def test_A18_every_entry_limited_and_out_waits_for_the_later_of_each() -> None:
    run = Run(member("ana", "claude"), member("bob", "codex"))
    run.state = attrs.evolve(
        run.state,
        limits=(
            EngineLimit(engine=Engine("claude"), until=at(12)),
            EngineLimit(engine=Engine("codex"), until=at(9, 2)),
        ),
        outages=(
            Outage(provider="claude", retry_at=at(9, 4), attempts=3),
            Outage(provider="codex", retry_at=at(11), attempts=9),
        ),
    )
    lines = run.feed(RunStarted(now=T0))
    # claude is back at 12:00 (its limit), codex at 11:00 (its outage): 11:00 is the nearest.
    assert lines == ["every participant limited — waiting for codex, back first at 11:00"]
    assert run.sleep.until == at(11)


# ------------------------------------------------------------------------------------------------
# A38 in the colleague search: a reset at t has passed when now == t
# (planted: `record.until <= now` → `<` in earliest_free: AssertionError "agy is free")


def test_A38_a_handover_at_the_exact_instant_a_colleagues_reset_passes() -> None:
    run = Run(member("ana", "claude"), member("bob", "agy"))
    run.state = attrs.evolve(
        run.state, limits=(EngineLimit(engine=Engine("agy"), until=at(9, 5)),)
    )
    run.feed(RunStarted(now=T0))
    assert run.runner == ("ana", "claude")
    lines = run.end("limit", at_=at(9, 5), reset=at(12))
    assert lines == ["claude limited until 12:00", "ana is rate limited — @bob takes the turn"]
    assert run.runner == ("bob", "agy")


# ------------------------------------------------------------------------------------------------
# A23 with A38: waking exactly at a reset lifts the limit from the state itself
# (planted: `record.until <= now` → `<` where passed limits are lifted)


def test_A23_waking_exactly_at_the_reset_removes_the_limit_from_the_state() -> None:
    run = Run(member("ana", "claude"))
    run.feed(RunStarted(now=T0))
    run.end("limit", at_=at(9, 1), reset=at(12))
    assert [r.engine for r in run.state.limits] == [Engine("claude")]
    run.feed(Woke(now=at(12)))
    assert run.runner == ("ana", "claude")
    assert run.state.limits == ()


# ------------------------------------------------------------------------------------------------
# A15/A33: the colleague search starts after the due participant, also when it is at index >= 2
# (planted: `(owner + offset) % n` → `offset % n`)


def test_A15_A33_the_search_starts_after_a_due_participant_at_index_two() -> None:
    run = Run(
        member("p0", "codex"), member("p1", "claude"), member("p2", "agy"), member("p3", "claude")
    )
    run.feed(RunStarted(now=T0))
    run.end("post", at_=at(9, 1))  # p0
    run.end("post", at_=at(9, 2))  # p1
    assert run.runner == ("p2", "agy") and run.state.due == 2
    lines = run.end("limit", at_=at(9, 3), reset=at(12))
    # After p2 comes p3 (claude is free), not p1, who comes first in the list.
    assert lines[-1] == "p2 is rate limited — @p3 takes the turn"
    assert run.runner == ("p3", "claude")


# ------------------------------------------------------------------------------------------------
# A30: a failure wait is cut short only by a reset still ahead
# (planted: `now < record.until < until` → `record.until < until`)


def test_A30_a_reset_already_passed_does_not_cut_a_failure_wait() -> None:
    run = Run(member("ana", "claude", "codex"))
    run.feed(RunStarted(now=T0))
    run.end("limit", at_=at(9, 1), reset=at(9, 1, 30))  # claude out until 09:01:30; hop to codex
    assert run.runner == ("ana", "codex")
    lines = run.end("exit", at_=at(9, 3))  # claude's reset has passed but is not lifted yet
    assert run.sleep.until == at(9, 3, 1)  # A28: 1 s after the first failure
    assert lines[-1] == (
        "ana failed on codex (codex exited with code 1); next attempt at 09:03"
    )


def test_A30_a_reset_inside_the_failure_wait_brings_the_attempt_forward() -> None:
    run = Run(member("ana", "claude", "codex"), member("bob", "codex"))
    run.feed(RunStarted(now=T0))
    run.end("limit", at_=at(9, 1), reset=at(9, 3, 30))  # hop to codex
    run.end("exit", at_=at(9, 2))  # 1st failure: 1 s
    run.feed(Woke(now=at(9, 2, 1)))
    run.end("exit", at_=at(9, 3))  # 2nd failure: 1 min, but claude is back at 09:03:30
    assert run.sleep.until == at(9, 3, 30)


# ------------------------------------------------------------------------------------------------
# A15: when a colleague's chain is exhausted, the owner itself comes first if it can run now
# (planted: the owner-first branch of the reroute removed: carl took the turn)


def test_A15_the_owner_is_preferred_back_when_the_colleague_is_limited() -> None:
    run = Run(member("ana", "claude"), member("bob", "codex"), member("carl", "agy"))
    run.feed(RunStarted(now=T0))
    assert run.end("limit", at_=at(9, 1), reset=at(9, 3))[-1] == (
        "ana is rate limited — @bob takes the turn"
    )
    lines = run.end("limit", at_=at(9, 4), reset=at(12))  # claude's reset has passed
    assert lines == ["codex limited until 12:00", "bob is rate limited — @ana takes the turn"]
    assert run.runner == ("ana", "claude")
    assert run.state.call is not None and run.state.call.turn_owner == "ana"


# ------------------------------------------------------------------------------------------------
# A34: the retried owed turn starts from its owner; the handover line is written again


def test_A34_a_retry_starts_from_the_owner_and_writes_the_handover_again() -> None:
    run = Run(member("ana", "claude"), member("bob", "codex"))
    run.feed(RunStarted(now=T0))
    run.end("limit", at_=at(9, 1), reset=at(12))
    assert run.runner == ("bob", "codex")
    run.end("exit", at_=at(9, 2))
    assert run.state.status == "backing_off"
    lines = run.feed(Woke(now=at(9, 2, 1)))
    # The owner (ana) is tried first; still limited, so bob takes the turn for it again.
    assert lines == ["ana is rate limited — @bob takes the turn"]
    assert run.runner == ("bob", "codex")
    assert run.state.call is not None and run.state.call.turn_owner == "ana"


def test_A34_a_retry_goes_back_to_the_owner_once_it_can_run() -> None:
    run = Run(member("ana", "claude"), member("bob", "codex"))
    run.feed(RunStarted(now=T0))
    run.end("limit", at_=at(9, 1), reset=at(9, 2))
    run.end("exit", at_=at(9, 3))  # bob failed on ana's turn; claude is back since 09:02
    lines = run.feed(Woke(now=at(9, 3, 1)))
    assert lines == [] and run.runner == ("ana", "claude")


# ------------------------------------------------------------------------------------------------
# A35: a gate wait whose engines are all out by outages is `unreachable`


def test_A35_a_gate_wait_on_engines_out_only_by_outages_is_unreachable() -> None:
    run = Run(member("ana", "claude", "agy", gate=True), member("bob", "codex"))
    run.feed(RunStarted(now=T0))
    lines = run.end("network", at_=at(9, 1))  # claude out, retried at 09:02
    assert lines == ["claude could not be reached; trying it again at 09:02",
                     "ana: claude unreachable → agy"]
    lines = run.end("network", at_=at(9, 1, 30))  # agy out, retried at 09:02:30
    assert lines == [
        "agy could not be reached; trying it again at 09:02",
        "ana cannot hand its turn over — waiting for claude, back at 09:02",
    ]
    assert run.state.status == "unreachable" and run.sleep.until == at(9, 2)


# ------------------------------------------------------------------------------------------------
# A43: the lines of the limits on calls and on call time


def test_A43_max_iterations_line() -> None:
    run = Run(member("ana", "claude"), max_iterations=2)
    run.feed(RunStarted(now=T0))
    run.end("post", at_=at(9, 1))
    lines = run.end("post", at_=at(9, 2))
    assert lines[-1] == "Reached max_iterations (2 calls); run stopped."
    assert run.state.status == "stopped"


def test_A43_max_runtime_line() -> None:
    run = Run(member("ana", "claude"), max_runtime=timedelta(minutes=90))
    run.feed(RunStarted(now=T0))
    run.end("post", at_=at(10, 0))
    lines = run.end("post", at_=at(10, 30))
    assert lines[-1] == "Reached max_runtime_min (90 min of calls); run stopped."
    assert run.state.status == "stopped"
    assert not any(isinstance(e, StartCall) for e in run.effects)


# ------------------------------------------------------------------------------------------------
# A5: the 300 characters are counted after trimming, on the structured-event path too
# (planted: the length measured before trimming)

NOTICE = "You've hit your limit · resets 2:30pm (America/New_York)"


def _exactly(total: int) -> str:
    return NOTICE + " " + "x" * (total - len(NOTICE) - 1)


def test_A5_a_result_text_of_300_characters_inside_whitespace_is_still_read() -> None:
    text = "\n  " + _exactly(300) + "  \n\n"
    assert len(text.strip()) == 300
    events = [
        {"type": "result", "subtype": "success", "is_error": True, "result": text},
        {"type": "assistant", "message": {"content": [{"type": "text", "text": text}]}},
    ]
    for event in events:
        notice = detect_limit("claude", stdout=json.dumps(event), now=T0, local_tz=UTC)
        assert notice is not None, event
        assert notice.reset_at == datetime(2026, 12, 1, 19, 30, tzinfo=UTC)
    codex = {"type": "item.completed", "item": {"type": "agent_message", "text": text}}
    assert detect_limit("codex", stdout=json.dumps(codex), now=T0, local_tz=UTC) is not None
    assert detect_limit("claude", stdout=text, now=T0, local_tz=UTC) is not None
    longer = "\n  " + _exactly(301) + "  \n"
    assert detect_limit("claude", stdout=json.dumps(
        {"type": "result", "subtype": "success", "is_error": True, "result": longer}
    ), now=T0, local_tz=UTC) is None


# ------------------------------------------------------------------------------------------------
# A6: an ISO reset with a ±HH:MM offset (planted: the offset's sign flipped); malformed hours


def test_A6_an_iso_reset_with_an_offset_is_read_with_its_sign() -> None:
    for written, utc_hour in (
        ("2026-12-01T15:00:00+02:00", 13),
        ("2026-12-01T15:00:00-02:00", 17),
        ("2026-12-01 15:00 +0530", 9),  # 09:30 UTC
    ):
        notice = detect_limit(
            "claude", stdout=f"You've hit your limit · resets {written}", now=T0, local_tz=UTC
        )
        assert notice is not None and notice.reset_at is not None, written
        expected = datetime(2026, 12, 1, utc_hour, 30 if "0530" in written else 0, tzinfo=UTC)
        assert notice.reset_at == expected, written


def test_A6_malformed_hours_are_no_reset() -> None:
    for text in (
        "You've hit your limit · resets 0am",
        "You've hit your limit · resets 13pm",
        "You've hit your limit · resets 25:00",
        "You've hit your limit · resets 9:75am",
    ):
        notice = detect_limit("claude", stdout=text, now=T0, local_tz=UTC)
        assert notice is not None and notice.reset_at is None, text


# ------------------------------------------------------------------------------------------------
# B9: a recovery copy of the active run does not open the gate for a write queued with no run id
# (planted: the check that the copy's run is also the queued run dropped)


def test_B9_a_recovery_copy_does_not_open_the_gate_for_a_write_queued_with_no_run_id() -> None:
    from autodev_core import PersistenceState, Queued, reduce_persistence
    from autodev_core.control.persistence import RecoveryCopy, turn_gate

    state = reduce_persistence(
        PersistenceState(), Queued(revision=3, run_id="", recoverable_tier="shadow")
    )
    assert state.pending_persist and state.queued_run_id == ""
    gate = turn_gate(state, "run-a", recovery=RecoveryCopy("run-a", 3, "shadow"))
    assert not gate.may_start and gate.reason == "pending-persist"
    # The same copy opens the gate for a write queued for the active run (B9).
    queued = reduce_persistence(
        PersistenceState(), Queued(revision=3, run_id="run-a", recoverable_tier="shadow")
    )
    opened = turn_gate(queued, "run-a", recovery=RecoveryCopy("run-a", 3, "shadow"))
    assert opened.may_start and opened.reason == "recovery-copy"
