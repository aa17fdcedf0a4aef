"""Checkpoint, shadow copy and restore (SPEC C3, B13-B15)."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import pytest
from helpers.clock import T0 as NOW
from helpers.faults import DiskSwitch, faulty_connection

from autodev_core.control.replicas import PRIMARY_CHECKPOINT_SOURCE_EMPTY
from autodev_shell.durability.checkpoint import (
    offer_restore,
    read_checkpoint,
    restore_from_checkpoint,
    write_checkpoint,
)
from autodev_shell.durability.files import ReplicaFileError, atomic_write_text
from autodev_shell.durability.paths import checkpoint_path, shadow_path
from autodev_shell.durability.shadow_file import (
    PendingRevision,
    ShadowCopy,
    read_shadow,
    remove_shadow,
    write_shadow,
)
from autodev_shell.store.run_store import NewPost, RunStore, StoreError
from autodev_shell.store.runlock import RunLock, RunLockedError


def post(revision: int) -> NewPost:
    return NewPost("ana", "codex", f"post of revision {revision}", NOW, key=f"turn-{revision}")


def filled(path: Path, revisions: int, **kwargs: object) -> RunStore:
    store = RunStore.open(path, create=True, run_id="run-1", now=NOW, **kwargs)  # type: ignore[arg-type]
    for r in range(1, revisions + 1):
        store.commit(r, (post(r),), f'{{"r": {r}}}', persistence_state_json="{}",
                     now=NOW + timedelta(minutes=r))
    return store


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


# --- the checkpoint (B15) -------------------------------------------------------------------


def test_B15_checkpoint_is_the_canonical_snapshot(tmp_path: Path) -> None:
    db = tmp_path / "run.db"
    with filled(db, 3) as store:
        written = write_checkpoint(store, checkpoint_path(db), now=NOW)
        snapshot = store.snapshot()
    assert written.ok and written.revision == 3
    assert written.plan is not None and written.plan.source == "primary-snapshot"
    loaded = read_checkpoint(checkpoint_path(db))
    assert loaded is not None
    assert loaded.snapshot == snapshot and loaded.written_at == NOW
    assert leftovers(tmp_path) == []


def test_B15_empty_primary_fails_with_primary_checkpoint_source_empty(tmp_path: Path) -> None:
    db = tmp_path / "run.db"
    with filled(db, 0) as store:
        written = write_checkpoint(store, checkpoint_path(db), now=NOW)
    assert not written.ok
    assert written.failure == PRIMARY_CHECKPOINT_SOURCE_EMPTY
    assert not checkpoint_path(db).exists()


def test_B15_failed_export_never_falls_back_to_other_state(tmp_path: Path) -> None:
    db = tmp_path / "run.db"
    switch = DiskSwitch()
    with filled(db, 2, factory=faulty_connection(switch)) as store:
        assert write_checkpoint(store, checkpoint_path(db), now=NOW).ok
        store.commit(3, (post(3),), "{}", persistence_state_json="{}", now=NOW)
        switch.fail(("BEGIN", "SELECT"))  # The export itself fails.
        written = write_checkpoint(store, checkpoint_path(db), now=NOW)
    assert not written.ok
    assert written.failure == PRIMARY_CHECKPOINT_SOURCE_EMPTY
    assert "disk I/O error" in written.error
    kept = read_checkpoint(checkpoint_path(db))
    assert kept is not None and kept.revision == 2  # The old checkpoint stands, untouched.


def test_C3_checkpoint_write_failure_leaves_the_old_file_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    db = tmp_path / "run.db"
    with filled(db, 1) as store:
        assert write_checkpoint(store, checkpoint_path(db), now=NOW).ok
        store.commit(2, (post(2),), "{}", persistence_state_json="{}", now=NOW)

        def broken_fsync(_fd: int) -> None:
            raise OSError(5, "Input/output error")

        monkeypatch.setattr("autodev_shell.durability.checkpoint.os.fsync", broken_fsync)
        written = write_checkpoint(store, checkpoint_path(db), now=NOW)
    assert not written.ok and written.failure == "write-failed"
    assert "Input/output error" in written.error
    kept = read_checkpoint(checkpoint_path(db))
    assert kept is not None and kept.revision == 1
    assert leftovers(tmp_path) == []


def test_C3_atomic_write_replaces_whole_files_only(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "f.json"
    atomic_write_text(target, "old")

    def broken_replace(_a: object, _b: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("autodev_shell.durability.checkpoint.os.replace", broken_replace)
    with pytest.raises(OSError):
        atomic_write_text(target, "new" * 1000)
    assert target.read_text() == "old"
    assert leftovers(tmp_path) == []


def test_checkpoint_that_is_not_a_checkpoint_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "run.db.checkpoint.json"
    path.write_text('{"format": "something else"}')
    with pytest.raises(ReplicaFileError) as info:
        read_checkpoint(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)
    path.write_text("{ truncated")
    with pytest.raises(ReplicaFileError):
        read_checkpoint(path)
    assert read_checkpoint(tmp_path / "absent.json") is None


# --- the shadow copy (C3) ---------------------------------------------------------------------


def test_C3_shadow_copy_round_trips_and_is_removed(tmp_path: Path) -> None:
    path = shadow_path(tmp_path / "run.db")
    shadow = ShadowCopy(NOW, (
        PendingRevision(4, "run-1", (post(4),), '{"r": 4}', NOW),
        PendingRevision(5, "run-1", (post(5), post(6)), '{"r": 5}', NOW),
    ), error="disk I/O error")
    write_shadow(path, shadow)
    assert read_shadow(path) == shadow and shadow.revision == 5
    assert leftovers(tmp_path) == []
    assert remove_shadow(path) and not path.exists()
    assert not remove_shadow(path)
    assert read_shadow(path) is None


# --- restoring (B14) --------------------------------------------------------------------------


def test_B14_restore_is_refused_while_the_primary_is_ahead(tmp_path: Path) -> None:
    db = tmp_path / "run.db"
    with filled(db, 2) as store:
        assert write_checkpoint(store, checkpoint_path(db), now=NOW).ok
        store.commit(3, (post(3),), "{}", persistence_state_json="{}", now=NOW)
    offer = offer_restore(db)
    assert not offer.allowed and offer.decision.reason == "primary-ahead"
    assert "refused" in offer.message and str(db) in offer.message
    result = restore_from_checkpoint(db, now=NOW)
    assert not result.restored
    with RunStore.open(db) as store:
        assert store.revision == 3 and len(store.thread()) == 3


def test_B14_restore_of_an_equal_revision_has_nothing_to_do(tmp_path: Path) -> None:
    db = tmp_path / "run.db"
    with filled(db, 2) as store:
        assert write_checkpoint(store, checkpoint_path(db), now=NOW).ok
    offer = offer_restore(db)
    assert not offer.allowed and offer.decision.reason == "up-to-date"


def test_B14_no_checkpoint_no_restore(tmp_path: Path) -> None:
    db = tmp_path / "run.db"
    filled(db, 1).close()
    offer = offer_restore(db)
    assert not offer.allowed and offer.decision.reason == "no-checkpoint"


def _corrupt(db: Path) -> None:
    with db.open("r+b") as handle:
        handle.truncate(db.stat().st_size // 3)


def test_B14_corrupt_store_is_detected_and_restored_from_the_checkpoint(tmp_path: Path) -> None:
    db = tmp_path / "run.db"
    with filled(db, 40) as store:
        assert write_checkpoint(store, checkpoint_path(db), now=NOW).ok
        expected = store.snapshot()
    _corrupt(db)
    with pytest.raises(StoreError) as info:
        RunStore.open(db)
    assert info.value.kind == "corrupt" and str(db) in str(info.value)
    offer = offer_restore(db)
    assert offer.allowed and offer.decision.reason == "primary-missing"
    assert str(db) in offer.problem
    result = restore_from_checkpoint(db, now=NOW + timedelta(hours=1))
    assert result.restored and result.revision == 40
    assert result.replaced is not None and Path(result.replaced).exists()  # Kept, not deleted.
    with RunStore.open(db) as store:
        assert store.integrity_check() == ("ok",)
        assert store.snapshot() == expected
        store.commit(41, (post(41),), "{}", persistence_state_json="{}", now=NOW)
        assert [p.seq for p in store.thread()][-2:] == [40, 41]


def test_B14_restore_moves_the_old_write_ahead_log_aside(tmp_path: Path) -> None:
    """A corrupt store's -wal must move aside with it, or the new store would replay it."""
    db = tmp_path / "run.db"
    wal = db.with_name(db.name + "-wal")
    store = filled(db, 5)
    assert write_checkpoint(store, checkpoint_path(db), now=NOW).ok
    left_wal = wal.read_bytes()  # What a crashed writer leaves: its WAL, not checkpointed.
    assert left_wal
    store.close()
    db.write_bytes(b"\0" * 8192)  # ...beside a clobbered database file.
    wal.write_bytes(left_wal)
    assert offer_restore(db).allowed
    result = restore_from_checkpoint(db, now=NOW)
    assert result.restored and result.replaced is not None
    assert Path(result.replaced + "-wal").read_bytes() == left_wal
    with RunStore.open(db) as again:
        assert again.revision == 5 and again.integrity_check() == ("ok",)


def test_B14_restore_is_refused_while_a_daemon_holds_the_run(tmp_path: Path) -> None:
    db = tmp_path / "run.db"
    with filled(db, 3) as store:
        assert write_checkpoint(store, checkpoint_path(db), now=NOW).ok
    _corrupt(db)
    with RunLock.acquire(db, run="run-1") as lock:
        with pytest.raises(RunLockedError):
            restore_from_checkpoint(db, now=NOW)
        assert restore_from_checkpoint(db, now=NOW, lock=lock).restored  # The holder may.


def test_B14_restore_needs_an_empty_target_store(tmp_path: Path) -> None:
    db = tmp_path / "run.db"
    with filled(db, 2) as store:
        snap = store.snapshot()
        with pytest.raises(StoreError, match="not empty"):
            store.import_snapshot(snap, now=NOW)
    assert os.path.exists(db)
