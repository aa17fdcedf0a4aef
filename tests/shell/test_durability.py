"""The durability glue the daemon loop calls (SPEC B3, B6-B9, B12, B14-B16, C3).

Failures of the canonical store are injected with `helpers.faults` (a connection whose
statements raise "disk I/O error"); a failing shadow write is real: its path is a directory,
which `rename` cannot replace even for root.
"""

from __future__ import annotations

import tempfile
from datetime import timedelta
from pathlib import Path

import pytest
from helpers.clock import T0 as NOW
from helpers.faults import DiskSwitch, faulty_connection
from hypothesis import given
from hypothesis import strategies as st

from autodev_core.control.identity import RunIdentity, resolve_active_identity
from autodev_core.control.persistence import PersistenceState
from autodev_core.control.replicas import PRIMARY_CHECKPOINT_SOURCE_EMPTY
from autodev_core.control.turn_input import bind_input_context
from autodev_core.serialization import from_json
from autodev_shell.durability.checkpoint import read_checkpoint
from autodev_shell.durability.files import ReplicaFileError
from autodev_shell.durability.paths import checkpoint_path
from autodev_shell.durability.shadow_file import read_shadow
from autodev_shell.durability.writes import Durability, PersistResult, SearchRebuild
from autodev_shell.store.run_store import NewPost, RunStore, Snapshot

RUN = resolve_active_identity(run_id="run-1")


def posts(revision: int, count: int = 2) -> tuple[NewPost, ...]:
    return tuple(NewPost("ana", "claude", f"rev {revision} post {i}", NOW,
                         key=f"turn-{revision}/0/{i}") for i in range(count))


class Rig:
    """A store opened through a switchable faulty connection, and its Durability."""

    def __init__(self, directory: Path, *, identity: RunIdentity = RUN,
                 search: SearchRebuild | None = None) -> None:
        self.directory = directory
        self.db = directory / "run.db"
        self.switch = DiskSwitch()
        self.store = RunStore.open(self.db, create=True, run_id="run-1", now=NOW,
                                   factory=faulty_connection(self.switch))
        self.durability = Durability.open(self.store, identity, search=search)

    def persist(self, revision: int, identity: RunIdentity = RUN) -> PersistResult:
        return self.durability.persist_revision(
            revision, posts(revision), f'{{"rev": {revision}}}', identity=identity,
            now=NOW + timedelta(minutes=revision))

    def restart(self, identity: RunIdentity = RUN) -> None:
        """What a new daemon sees: the files on disk, nothing from memory."""
        self.store.close()
        self.switch = DiskSwitch()
        self.store = RunStore.open(self.db, factory=faulty_connection(self.switch))
        self.durability = Durability.open(self.store, identity)

    def keys(self) -> list[str]:
        return [p.key for p in self.store.thread()]


@pytest.fixture
def rig(tmp_path: Path) -> Rig:
    return Rig(tmp_path)


def test_B7_a_committed_revision_is_confirmed_by_the_canonical_tier(rig: Rig) -> None:
    result = rig.durability.persist_revision(1, posts(1), '{"rev": 1}', identity=RUN, now=NOW)
    assert result.outcome == "committed" and result.committed == (1,) and result.pending == ()
    state = result.state
    assert not state.pending_persist and not state.writes_blocked
    assert (state.last_accepted_revision, state.accepted_tier) == (1, "sqlite")
    assert (result.gate.may_start, result.gate.reason) == (True, "confirmed")
    assert result.checkpoint is not None and result.checkpoint.ok
    assert result.sync is not None and result.sync.ok
    ckpt = read_checkpoint(rig.durability.checkpoint_file)
    assert ckpt is not None and ckpt.revision == 1
    assert rig.durability.audit() == ("in-sync", ())
    # The persistence state committed with the revision is the queued one (B6); the marker
    # beside it is what lets a restart clear it (B8).
    stored = from_json(rig.store.snapshot().persistence_state_json, PersistenceState)
    assert stored.pending_persist and stored.queued_revision == 1


def test_B6_failed_canonical_write_leaves_a_shadow_copy_and_confirms_nothing(rig: Rig) -> None:
    rig.persist(1)
    rig.switch.fail()
    first = rig.durability.persist_revision(2, posts(2), '{"rev": 2}', identity=RUN, now=NOW)
    second = rig.durability.persist_revision(3, posts(3), '{"rev": 3}', identity=RUN, now=NOW)
    for result in (first, second):
        assert result.outcome == "shadowed" and "disk I/O error" in result.error
        assert result.state.pending_persist  # A shadow copy never confirms (B7).
        assert not result.state.writes_blocked  # B6: recovery-only tier keeps writes open.
        assert result.state.last_recoverable_tier == "shadow"
        assert result.state.last_accepted_revision == 1
        # B9: a recovery copy as new as the queued revision lets a turn start — never as
        # "confirmed" — and the write stays pending and is retried.
        assert result.gate.reason == "recovery-copy"
    assert second.pending == (2, 3) and second.state.queued_revision == 3
    shadow = read_shadow(rig.durability.shadow_file)
    assert shadow is not None and [p.revision for p in shadow.pending] == [2, 3]
    assert [p.key for p in shadow.pending[1].posts] == [p.key for p in posts(3)]

    rig.switch.heal()
    healed = rig.durability.retry(identity=RUN, now=NOW)
    assert healed.outcome == "committed" and healed.committed == (2, 3)
    assert not healed.state.pending_persist and healed.state.last_accepted_revision == 3
    assert healed.gate.reason == "confirmed"
    assert not rig.durability.shadow_file.exists()
    assert rig.keys() == [p.key for r in (1, 2, 3) for p in posts(r)]  # Each exactly once.
    assert rig.store.snapshot().scheduler_state_json == '{"rev": 3}'


def test_B9_when_the_shadow_fails_too_the_gate_stays_closed(rig: Rig) -> None:
    rig.durability.shadow_file.mkdir()  # rename() cannot replace a directory, even as root.
    (rig.durability.shadow_file / "keep").write_text("x")
    rig.switch.fail()
    result = rig.persist(1)
    assert result.outcome == "unsaved"
    assert result.shadow_error
    assert result.state.writes_blocked and result.state.pending_persist
    gate = rig.durability.gate(RUN)
    assert not gate.may_start and gate.reason == "pending-persist" and gate.retry_write
    still = rig.durability.retry(identity=RUN, now=NOW)
    assert still.outcome == "unsaved" and still.pending == (1,)
    rig.switch.heal()
    done = rig.durability.retry(identity=RUN, now=NOW)
    assert done.outcome == "committed" and done.gate.reason == "confirmed"
    assert rig.keys() == [p.key for p in posts(1)]


def test_B6_a_partial_flush_accepts_what_was_committed_and_queues_the_rest(rig: Rig) -> None:
    rig.switch.fail()
    rig.persist(1)
    rig.persist(2)
    # Heal for exactly one transaction's writes (BEGIN, 2 posts, the state with its marker,
    # COMMIT).
    rig.switch.fail(after=5)
    result = rig.durability.retry(identity=RUN, now=NOW)
    assert result.outcome == "shadowed" and result.committed == (1,) and result.pending == (2,)
    assert result.state.last_accepted_revision == 1 and result.state.pending_persist
    assert result.state.queued_revision == 2
    shadow = read_shadow(rig.durability.shadow_file)
    assert shadow is not None and [p.revision for p in shadow.pending] == [2]


def test_C3_a_restart_takes_up_the_shadow_copy_and_loses_nothing(rig: Rig) -> None:
    rig.persist(1)
    rig.switch.fail()
    rig.persist(2)
    rig.persist(3)
    rig.restart()  # The daemon died while the store was failing.
    assert rig.durability.pending == (2, 3)
    state = rig.durability.state
    assert state.pending_persist and state.last_recoverable_tier == "shadow"
    assert rig.durability.gate(RUN).reason == "recovery-copy"
    result = rig.durability.persist_revision(4, posts(4), "{}", identity=RUN, now=NOW)
    assert result.outcome == "committed" and result.committed == (2, 3, 4)
    assert rig.keys() == [p.key for r in (1, 2, 3, 4) for p in posts(r)]


def test_B8_a_restart_after_a_commit_clears_the_stale_pending_flag(rig: Rig) -> None:
    rig.persist(1)
    rig.persist(2)
    committed = from_json(rig.store.snapshot().persistence_state_json, PersistenceState)
    assert committed.pending_persist  # As committed: queued, before its own Accepted.
    rig.restart()
    state = rig.durability.state  # Settled by the core's planner with the marker (B8).
    assert not state.pending_persist and state.last_accepted_revision == 2
    assert state.accepted_tier == "sqlite"
    assert rig.durability.gate(RUN).reason == "confirmed"


def test_B8_a_restart_under_another_run_keeps_the_pending_flag(rig: Rig) -> None:
    rig.persist(1)
    rig.restart(identity=resolve_active_identity(run_id="run-2"))
    assert rig.durability.state.pending_persist  # queued-run-mismatch: never cleared (B9).
    assert rig.durability.gate(resolve_active_identity(run_id="run-2")).reason == (
        "queued-run-mismatch")


def test_C3_a_shadow_older_than_the_store_is_not_replayed(rig: Rig) -> None:
    rig.switch.fail()
    rig.persist(1)
    rig.switch.heal()
    # The commit lands but the daemon dies before removing the shadow copy.
    rig.store.commit(1, posts(1), '{"rev": 1}', persistence_state_json="{}", now=NOW)
    rig.restart()
    assert rig.durability.pending == ()
    assert rig.keys() == [p.key for p in posts(1)]


def test_B12_a_write_queued_for_another_run_is_never_applied(rig: Rig) -> None:
    rig.switch.fail()
    rig.persist(1)
    rig.switch.heal()
    other = resolve_active_identity(run_id="run-2")
    result = rig.durability.retry(identity=other, now=NOW)
    assert result.outcome == "run-mismatch" and "run-1" in result.error and "run-2" in result.error
    assert result.pending == (1,) and rig.keys() == []
    assert result.gate.reason == "queued-run-mismatch"
    refused = rig.durability.persist_revision(2, posts(2), "{}", identity=other, now=NOW)
    assert refused.outcome == "run-mismatch" and rig.keys() == []
    back = rig.durability.retry(identity=RUN, now=NOW)
    assert back.outcome == "committed" and rig.keys() == [p.key for p in posts(1)]


def test_B1_a_shadow_of_another_run_is_left_alone_at_restart(rig: Rig) -> None:
    rig.switch.fail()
    rig.persist(1)
    rig.restart(identity=resolve_active_identity(run_id="run-2"))
    assert rig.durability.pending == ()
    assert rig.durability.shadow_file.exists()  # Kept for recovery; not applied, not deleted.


def test_B3_an_alias_of_the_stores_run_is_the_same_run(rig: Rig) -> None:
    aliased = resolve_active_identity(run_id="run-1", integrity_id="int-77")
    assert aliased.run_id == "int-77"
    result = rig.persist(1, identity=aliased)
    assert result.outcome == "committed"
    marker = rig.store.marker()
    assert marker is not None and marker.run_id == "int-77"


def test_B16_a_failing_search_rebuild_does_not_stop_the_checkpoint(tmp_path: Path) -> None:
    def rebuild(_snapshot: Snapshot) -> None:
        raise RuntimeError("index offline")

    rig = Rig(tmp_path, search=rebuild)
    result = rig.persist(1)
    assert result.outcome == "committed"
    assert result.sync is not None and result.sync.failed_replicas == ("search",)
    assert "index offline" in result.sync.failed[0].error
    assert result.checkpoint is not None and result.checkpoint.ok
    assert rig.durability.audit() == ("pending-sync", ("search",))  # B14: not drift.


def test_B16_a_failing_checkpoint_does_not_stop_the_search_rebuild(tmp_path: Path) -> None:
    seen: list[int] = []
    rig = Rig(tmp_path, search=lambda snap: seen.append(snap.revision))
    # A checkpoint the disk refuses: a folder (not empty) where its file goes.
    (checkpoint_path(rig.db) / "in the way").mkdir(parents=True)
    result = rig.persist(1)
    assert result.checkpoint is not None and not result.checkpoint.ok
    assert result.sync is not None and result.sync.failed_replicas == ("checkpoint",)
    assert seen == [1]
    assert result.gate.reason == "confirmed"


def test_B15_checkpoint_refresh_fails_when_the_export_fails(rig: Rig) -> None:
    rig.switch.fail(("BEGIN",), after=1)  # The commit's BEGIN passes; the export's fails.
    result = rig.persist(1)
    assert result.outcome == "committed"
    assert result.checkpoint is not None
    assert result.checkpoint.failure == PRIMARY_CHECKPOINT_SOURCE_EMPTY
    assert not rig.durability.checkpoint_file.exists()
    rig.switch.heal()
    again = rig.persist(2)
    assert again.checkpoint is not None
    assert again.checkpoint.ok and again.checkpoint.revision == 2


def test_revisions_must_increase_while_pending(rig: Rig) -> None:
    rig.switch.fail()
    rig.persist(2)
    with pytest.raises(ValueError, match="not above"):
        rig.persist(2)


ops = st.lists(st.sampled_from(["persist", "persist", "fail", "heal", "retry", "restart"]),
               max_size=14)


@given(ops)
def test_C3_nothing_acknowledged_is_ever_lost_or_duplicated(steps: list[str]) -> None:
    """Any interleaving of persists, disk failures, retries and restarts: once the disk heals
    and a retry runs, the thread holds every persisted revision's posts exactly once, and the
    persistence state is confirmed at the store's revision."""
    with tempfile.TemporaryDirectory() as tmp:
        rig = Rig(Path(tmp))
        revision = 0
        failing = False
        for step in steps:
            if step == "persist":
                revision += 1
                rig.persist(revision)
            elif step == "fail":
                rig.switch.fail()
                failing = True
            elif step == "heal":
                rig.switch.heal()
                failing = False
            elif step == "retry":
                rig.durability.retry(identity=RUN, now=NOW)
            else:
                rig.restart()
                failing = False
            assert rig.durability.state.pending_persist == bool(rig.durability.pending)
            if not failing and step in ("persist", "retry"):
                assert rig.durability.pending == ()  # A healthy disk flushes everything.
        rig.switch.heal()
        rig.durability.retry(identity=RUN, now=NOW)
        rig.durability.gate(RUN)
        assert rig.durability.pending == ()
        assert rig.keys() == [p.key for r in range(1, revision + 1) for p in posts(r)]
        assert rig.store.revision == revision
        state = rig.durability.state
        assert not state.pending_persist
        assert state.last_accepted_revision == revision or revision == 0
        rig.store.close()


def test_C3_an_unreadable_shadow_copy_stops_the_start_naming_it(rig: Rig) -> None:
    """It may hold the only copy of uncommitted revisions: never dropped silently."""
    rig.durability.shadow_file.write_text("{ half a shadow")
    with pytest.raises(ReplicaFileError) as info:
        rig.restart()
    assert str(rig.durability.shadow_file) in str(info.value)
    assert rig.durability.shadow_file.read_text() == "{ half a shadow"


def test_C3_an_unreadable_checkpoint_is_rewritten_by_the_next_sync(rig: Rig) -> None:
    rig.persist(1)
    rig.durability.checkpoint_file.write_text("garbage")
    rig.restart()
    result = rig.persist(2)
    assert result.checkpoint is not None and result.checkpoint.ok
    ckpt = read_checkpoint(rig.durability.checkpoint_file)
    assert ckpt is not None and ckpt.revision == 2


# --- B2: identity is the operation's own, passed explicitly ------------------------------------


def test_B2_a_turn_input_is_gated_by_the_identity_of_its_own_operation(rig: Rig) -> None:
    """The first write was the active run's: a later save under no active run is still refused
    by B11 — the gate asks the identity passed with this operation, not one remembered."""
    assert rig.persist(1).outcome == "committed"
    held = bind_input_context("msg-1:a", "parent", "context")
    assert rig.durability.save_turn_input(held, identity=RunIdentity(run_id=""), now=NOW) is False
    assert rig.store.load_turn_input("msg-1:a") is None
    # Held, not lost: it goes with the next commit of the active run, in that transaction.
    assert rig.persist(2).outcome == "committed"
    assert rig.store.load_turn_input("msg-1:a") == held
    written = bind_input_context("msg-2:a", "parent", "context")
    assert rig.durability.save_turn_input(written, identity=RUN, now=NOW) is True
    assert rig.store.load_turn_input("msg-2:a") == written


def test_B2_opening_under_no_active_run_does_not_let_a_turn_input_through(
    tmp_path: Path,
) -> None:
    """Durability opened with the store's own run id once stood in for the operation's."""
    rig = Rig(tmp_path, identity=RunIdentity(run_id=""))
    record = bind_input_context("msg-1:a", "parent", "context")
    assert rig.durability.save_turn_input(record, identity=RunIdentity(run_id=""),
                                          now=NOW) is False
    assert rig.store.load_turn_input("msg-1:a") is None
