"""The real daemon's checkpoint between syncs (SPEC B13-B16, C3): written at the core's cadence,
level at pause and stop, and a disaster copy that works after a kill -9.

The daemon is `autodev run` in its own process, on stand-in CLIs that answer at once, so its
revisions come far faster than once a second: only the revision count of the cadence applies.
docs/store.md says a checkpoint is at most 25 revisions behind the store while the daemon runs
(the number is stated here, not read from the code).
"""

from __future__ import annotations

import random
import shutil
import time
from pathlib import Path

from helpers.daemons import Daemon, wait_for

from autodev_shell.cli import main
from autodev_shell.durability.checkpoint import load_checkpoint, read_checkpoint
from autodev_shell.status.replica_status import read_checkpoint_head
from autodev_shell.store.run_store import RunStore

#: docs/store.md: "at most 25 revisions behind".
MOST_BEHIND = 25


def _checkpoint(run_dir: Path) -> tuple[int, str, list[str]] | None:
    """(revision, run id, post keys) of the checkpoint on disk, None while there is none."""
    ckpt = read_checkpoint(run_dir / "run.db.checkpoint.json")
    if ckpt is None:
        return None
    snapshot = ckpt.snapshot
    return snapshot.revision, snapshot.run_id, [p.key for p in snapshot.posts]


def _lose_the_store(run_dir: Path, to: Path) -> None:
    """The disaster: the store's files (the database, its -wal and -shm) are gone, moved to `to`."""
    to.mkdir()
    for name in ("run.db", "run.db-wal", "run.db-shm"):
        if (run_dir / name).exists():
            shutil.move(run_dir / name, to / name)


def _store(run_dir: Path) -> tuple[int, str, list[str]]:
    store = RunStore.open(run_dir / "run.db", check=False)
    try:
        return store.revision, store.run_id, [p.key for p in store.thread()]
    finally:
        store.close()


def _behind(run_dir: Path) -> int | None:
    checkpoint = _checkpoint(run_dir)
    if checkpoint is None or not (run_dir / "run.db").exists():
        return None
    return _store(run_dir)[0] - checkpoint[0]


def test_B14_the_daemon_checkpoints_at_its_cadence_and_level_at_pause_and_stop(
    tmp_path: Path,
) -> None:
    daemon = Daemon(tmp_path, {"ana": "claude", "rui": "codex"},
                    {"default": {"post": "ok", "sleep": 0.01}})
    daemon.start()
    try:
        # Between syncs the checkpoint is behind the store: "pending sync", which is normal.
        wait_for(lambda: (_behind(daemon.run_dir) or 0) >= 2, "a checkpoint behind the store")
        wait_for(lambda: _store(daemon.run_dir)[0] > 3 * MOST_BEHIND, "a run of some length")
        seen = [_behind(daemon.run_dir) for _ in range(30)]
        assert all(b is not None and 0 <= b <= MOST_BEHIND for b in seen), seen
        daemon.control("pause")
        wait_for(lambda: daemon.status() == "paused", "the run to pause")
        # Paused: the backup holds everything the store holds.
        wait_for(lambda: _behind(daemon.run_dir) == 0, "a checkpoint level with the store")
        status = daemon.cli("status")
        assert status.returncode == 0, status.stderr
        assert "level with the store" in status.stdout
        daemon.control("resume")
        wait_for(lambda: daemon.status() != "paused", "the run to resume")
        daemon.stop()
        assert daemon.wait_exit() == 0
        revision, run_id, keys = _checkpoint(daemon.run_dir) or (0, "", [])
        assert (revision, run_id, keys) == _store(daemon.run_dir)
    finally:
        daemon.stop()


def test_B14_C3_after_a_kill_9_between_checkpoints_the_run_restores_and_goes_on(
    tmp_path: Path,
) -> None:
    daemon = Daemon(tmp_path, {"ana": "claude", "rui": "codex"},
                    {"default": {"post": "ok", "sleep": 0.01}})
    run_dir = daemon.run_dir
    for _attempt in range(5):  # the kill may land just after a sync: then try again
        daemon.start()
        try:
            wait_for(lambda: (_behind(run_dir) or 0) >= 2, "a checkpoint behind the store")
        finally:
            daemon.kill9()
        if (_behind(run_dir) or 0) > 0:
            break
    behind = _behind(run_dir)
    assert behind is not None and 0 < behind <= MOST_BEHIND
    kept = _checkpoint(run_dir)
    assert kept is not None
    revision, run_id, keys = kept
    primary, store_run, store_keys = _store(run_dir)
    assert store_run == run_id and store_keys[:len(keys)] == keys and primary > revision

    # B14: the store is ahead, so the checkpoint may not replace it.
    assert main(["restore", "--run", str(run_dir)]) == 1
    assert _store(run_dir) == (primary, store_run, store_keys)

    # The disaster: the store is gone. The checkpoint brings the run back to its revision ...
    _lose_the_store(run_dir, tmp_path / "lost")
    assert main(["restore", "--run", str(run_dir)]) == 0
    assert _store(run_dir) == (revision, run_id, keys)

    # ... and the run goes on from there, with this run's posts and nothing of another run.
    daemon.start()
    try:
        wait_for(lambda: len(_store(run_dir)[2]) > len(keys) + 2, "the run to post again")
    finally:
        daemon.stop()
    after, after_run, after_keys = _store(run_dir)
    assert after_run == run_id and after > revision
    assert after_keys[:len(keys)] == keys and len(set(after_keys)) == len(after_keys)


def _frames_of(run_dir: Path) -> tuple[int, int] | None:
    """(revision, records appended after the base) of the checkpoint, None while none."""
    loaded = load_checkpoint(run_dir / "run.db.checkpoint.json")
    if loaded is None or loaded.tail is None:
        return None
    return loaded.file.revision, loaded.tail.records


def test_B15_C3_kill_9_while_the_daemon_appends_leaves_a_checkpoint_that_reads_and_restores(
    tmp_path: Path,
) -> None:
    daemon = Daemon(tmp_path, {"ana": "claude", "rui": "codex"},
                    {"default": {"post": "ok " * 300, "sleep": 0.01}})
    run_dir = daemon.run_dir
    rng = random.Random(15)
    records_seen = 0
    for _cycle in range(3):
        daemon.start()
        try:
            start = _store(run_dir)[0] if (run_dir / "run.db").exists() else 0
            goal = max(start, 60) + 26

            def far_enough(goal: int = goal) -> bool:
                return (run_dir / "run.db").exists() and _store(run_dir)[0] > goal

            # Long enough for checkpoints to be appended (records fit in the base once the
            # thread holds some posts), then a kill at a moment of the test's choosing.
            wait_for(far_enough, "the run to go on")
            time.sleep(rng.uniform(0, 0.3))
        finally:
            daemon.kill9()
        # Whatever the kill cut: the checkpoint reads, its head agrees, and it is a prefix.
        frames = _frames_of(run_dir)
        assert frames is not None
        revision, records = frames
        records_seen = max(records_seen, records)
        kept = _checkpoint(run_dir)
        assert kept is not None and kept[0] == revision
        assert read_checkpoint_head(run_dir / "run.db.checkpoint.json")[0] == revision
        primary, store_run, store_keys = _store(run_dir)
        assert kept[1] == store_run and store_keys[: len(kept[2])] == kept[2]
        assert 0 <= primary - revision <= MOST_BEHIND
    assert records_seen > 0, "no record was appended"
    # A clean stop leaves it level; without the store, it restores the whole run.
    daemon.start()
    restarted = _store(run_dir)[0]
    wait_for(lambda: _store(run_dir)[0] > restarted + 2, "the run to go on once more")
    daemon.stop()
    assert daemon.wait_exit() == 0
    assert _checkpoint(run_dir) == _store(run_dir)
    expected = _store(run_dir)
    _lose_the_store(run_dir, tmp_path / "lost-again")
    assert main(["restore", "--run", str(run_dir)]) == 0
    assert _store(run_dir) == expected
