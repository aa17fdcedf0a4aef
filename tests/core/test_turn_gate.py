"""The turn gate (SPEC B9)."""

from __future__ import annotations

from autodev_core.control.identity import NO_RUN, resolve_active_identity
from autodev_core.control.persistence import (
    Accepted,
    CommitMarker,
    PersistenceState,
    Queued,
    RecoveryCopy,
    TierRoles,
    TurnGate,
    reduce_persistence,
    turn_gate,
)
from autodev_core.serialization import from_json, to_json

RUN = resolve_active_identity(run_id="run-7", aliases=["r7"])


def queued(revision: int = 3, run_id: str = "run-7") -> PersistenceState:
    return reduce_persistence(PersistenceState(), Queued(revision, run_id))


def test_B9_confirmed_writes_open_the_gate() -> None:
    state = reduce_persistence(queued(3), Accepted("sqlite", 3))
    gate = turn_gate(state, RUN)
    assert (gate.may_start, gate.reason, gate.state) == (True, "confirmed", state)


def test_B9_pending_write_defers_the_turn_and_asks_for_a_retry() -> None:
    state = queued(3)
    gate = turn_gate(state, RUN)
    assert not gate.may_start
    assert gate.reason == "pending-persist"
    assert gate.retry_write
    assert gate.code == "accepted-revision-behind"
    assert "revision 3 of run 'run-7' is waiting for a canonical tier (sqlite)" in gate.detail
    assert gate.state == state


def test_B9_recovery_only_acceptance_does_not_open_the_gate() -> None:
    state = reduce_persistence(queued(3), Accepted("shadow", 3))
    assert turn_gate(state, RUN).reason == "pending-persist"


def test_B9_a_stale_pending_flag_is_cleared_and_the_turn_starts() -> None:
    state = reduce_persistence(queued(2), Accepted("sqlite", 2, clear_queued=False))
    state = reduce_persistence(state, Queued(2, "run-7"))
    gate = turn_gate(state, RUN)
    assert (gate.may_start, gate.reason) == (True, "stale-pending-cleared")
    assert not gate.state.pending_persist
    assert gate.state.last_accepted_revision == 2


def test_B9_stale_flag_cleared_through_the_commit_marker() -> None:
    state = queued(4)
    gate = turn_gate(state, RUN, marker=CommitMarker("r7", 4, "sqlite"))
    assert gate.reason == "stale-pending-cleared"
    assert gate.state.last_accepted_revision == 4


def test_B9_recovery_copy_as_new_as_the_queue_lets_the_turn_start_but_confirms_nothing() -> None:
    state = queued(3)
    gate = turn_gate(state, RUN, recovery=RecoveryCopy("run-7", 3, "shadow"))
    assert (gate.may_start, gate.reason) == (True, "recovery-copy")
    assert gate.state.pending_persist, "a recovery copy never confirms (B7)"


def test_B9_recovery_copy_that_is_older_or_foreign_or_not_recovery_only_does_not_count() -> None:
    state = queued(3)
    for copy in (
        RecoveryCopy("run-7", 2, "shadow"),
        RecoveryCopy("run-8", 3, "shadow"),
        RecoveryCopy("run-7", 3, "search"),
        RecoveryCopy("run-7", 3, "sqlite"),
    ):
        assert turn_gate(state, RUN, recovery=copy).reason == "pending-persist", copy


def test_B9_queued_write_for_another_run_is_never_applied_to_the_active_run() -> None:
    state = reduce_persistence(queued(3, "run-A"), Accepted("sqlite", 1, clear_queued=False))
    state = reduce_persistence(state, Queued(3, "run-A"))
    other = resolve_active_identity(run_id="run-B")
    gate = turn_gate(
        state, other, marker=CommitMarker("run-A", 3, "sqlite"),
        recovery=RecoveryCopy("run-B", 9, "shadow"),
    )
    assert (gate.may_start, gate.reason) == (False, "queued-run-mismatch")
    assert gate.state == state
    assert gate.state.pending_persist and gate.state.queued_run_id == "run-A"
    assert not gate.retry_write


def test_B9_no_active_run_with_a_pending_write() -> None:
    gate = turn_gate(queued(3), NO_RUN)
    assert (gate.may_start, gate.reason) == (False, "no-active-run")


def test_B9_custom_tiers() -> None:
    tiers = TierRoles(canonical={"pg"}, recovery_only={"wal"}, replica_only=set())
    state = queued(3)
    assert turn_gate(state, RUN, recovery=RecoveryCopy("run-7", 3, "wal"), tiers=tiers).may_start
    assert not turn_gate(state, RUN, recovery=RecoveryCopy("run-7", 3, "shadow"),
                         tiers=tiers).may_start


def test_0_3_turn_gate_round_trips() -> None:
    gate = turn_gate(queued(3), RUN)
    assert from_json(to_json(gate), TurnGate) == gate


def test_B9_retry_write_says_what_the_caller_must_do_under_every_verdict() -> None:
    """Issue 28 item 4: under `recovery-copy` the turn starts but the write is still owed (a
    recovery copy confirms nothing, B7), so the caller must keep retrying it: `retry_write`."""
    owed = queued(3)
    on_copy = turn_gate(owed, RUN, recovery=RecoveryCopy("run-7", 3, "shadow"))
    assert (on_copy.may_start, on_copy.reason, on_copy.retry_write) == (
        True, "recovery-copy", True)
    assert on_copy.state.pending_persist  # the write it must retry
    deferred = turn_gate(owed, RUN)
    assert (deferred.reason, deferred.retry_write) == ("pending-persist", True)
    confirmed = turn_gate(reduce_persistence(owed, Accepted("sqlite", 3)), RUN)
    assert (confirmed.reason, confirmed.retry_write) == ("confirmed", False)
    cleared = turn_gate(owed, RUN, marker=CommitMarker("r7", 3, "sqlite"))
    assert (cleared.reason, cleared.retry_write) == ("stale-pending-cleared", False)
    assert not turn_gate(owed, NO_RUN).retry_write  # no run to retry it for
