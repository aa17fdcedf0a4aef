"""A run folder whose `run.db` is gone but whose `run.db-wal` is left (SPEC C3, B1, B13): the
operator deletes `run.db` after a kill -9 or a crash (to start afresh, or having lost it) and
starts a run, or restores the checkpoint. SQLite finds a WAL by its name alone and replays its
frames onto whatever database file is at that path, so a store made there anew would take the
old run's pages: the old run's thread and revision come back under the new run ("resurrected"),
or, once the old WAL's pages no longer fit the new file, the store is corrupt.

What must hold: a store made where none is opens as new (its own run id, revision 0, no posts,
sound), and the old WAL is kept beside it, never deleted (it may be the only copy of the old
run's last revisions)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.clock import T0 as NOW
from helpers.daemons import Daemon, wait_for

from autodev_shell.standins import write_script
from autodev_shell.store.run_store import RunStore

#: A process that commits `count` revisions of the old run, then dies as a kill -9 leaves a
#: store: nothing closed, the WAL and its index on disk.
_OLD_RUN = """
import json, os, sys
from datetime import UTC, datetime, timedelta
from autodev_shell.store.run_store import NewPost, RunStore
path, count = sys.argv[1], int(sys.argv[2])
now = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
store = RunStore.open(path, create=True, run_id="old-run", now=now)
for revision in range(1, count + 1):
    at = now + timedelta(seconds=revision)
    post = NewPost("ana", "claude", f"old post {revision} " + "o" * 300, at, key=f"old-{revision}")
    store.commit(revision, (post,), json.dumps({"revision": revision, "pad": "s" * 500}),
                 persistence_state_json=json.dumps({"pending_persist": False}), now=at)
store.enqueue_control("say", "an old message", now=now)
os._exit(0)
"""


def _old_run(path: Path, count: int) -> bytes:
    subprocess.run([sys.executable, "-c", _OLD_RUN, str(path), str(count)], check=True,
                   timeout=300)
    wal = Path(f"{path}-wal")
    assert wal.exists() and wal.stat().st_size > 0  # what a kill -9 leaves
    return wal.read_bytes()


def _kept(folder: Path, old_wal: bytes) -> list[Path]:
    return [p for p in folder.iterdir()
            if p.is_file() and p.name != "run.db-wal" and p.read_bytes() == old_wal]


@pytest.mark.parametrize("count", [5, 400], ids=["short-run", "past-a-checkpoint"])
@pytest.mark.parametrize("how", ["deleted", "emptied"])
def test_C3_B1_a_store_made_beside_an_orphaned_wal_is_new_and_the_wal_is_kept(
        tmp_path: Path, count: int, how: str) -> None:
    path = tmp_path / "run.db"
    old_wal = _old_run(path, count)
    if how == "deleted":
        path.unlink()  # the operator's `rm run.db`
    else:
        path.write_bytes(b"")  # a file emptied (a disk repair, a `> run.db`)
    with RunStore.open(path, create=True, run_id="new-run", now=NOW) as store:
        assert store.integrity_check() == ("ok",)
        assert store.run_id == "new-run"
        assert store.revision == 0
        assert store.thread() == ()
        assert store.pending_controls() == ()
    with RunStore.open(path) as store:  # and again, as the next command opens it
        assert (store.run_id, store.revision, store.post_count()) == ("new-run", 0, 0)
    assert _kept(tmp_path, old_wal), sorted(p.name for p in tmp_path.iterdir())


def test_C3_a_store_with_its_own_wal_is_opened_with_it(tmp_path: Path) -> None:
    """The other side: a WAL beside its own database is the store's latest commits."""
    path = tmp_path / "run.db"
    _old_run(path, 5)
    with RunStore.open(path) as store:
        assert (store.run_id, store.revision, store.post_count()) == ("old-run", 5, 5)
        assert [c.arg for c in store.pending_controls()] == ["an old message"]
    assert json.loads(RunStore.open(path).committed_state().scheduler_state_json)["revision"] == 5


def _posts(d: Daemon) -> list[str]:
    return [text for _, who, text in d.thread() if who != "user"]


def _killed_with_a_wal(tmp_path: Path) -> Daemon:
    """A daemon that posted a few times ("old"), then kill -9: its WAL is left in the folder."""
    d = Daemon(tmp_path, {"ana": "claude", "rui": "codex"},
               {"default": {"post": "old", "sleep": 0.1}})
    d.start()
    try:
        wait_for(lambda: len(_posts(d)) >= 3, "three posts")
        assert d.cli("say", "an old message").returncode == 0
        wait_for(lambda: any(who == "user" for _, who, _ in d.thread()), "the message posted")
    finally:
        d.kill9()
    assert (d.run_dir / "run.db-wal").exists()
    return d


def test_C3_rm_run_db_after_a_kill_9_then_run_starts_a_new_thread(tmp_path: Path) -> None:
    d = _killed_with_a_wal(tmp_path)
    old_wal = (d.run_dir / "run.db-wal").read_bytes()
    (d.run_dir / "run.db").unlink()  # the operator starts afresh
    write_script(d.script, {"default": {"post": "new", "sleep": 0.1}})
    d.start()
    try:
        wait_for(lambda: len(_posts(d)) >= 2, "two posts of the new run")
    finally:
        d.stop()
    assert d.wait_exit() == 0
    thread = d.thread()
    assert "old" not in _posts(d) and all(who != "user" for _, who, _ in thread), thread
    assert _kept(d.run_dir, old_wal)
    with RunStore.open(d.run_dir / "run.db") as store:
        assert store.integrity_check() == ("ok",)


def test_B13_restore_after_rm_run_db_holds_the_checkpoint_alone(tmp_path: Path) -> None:
    d = _killed_with_a_wal(tmp_path)
    old_wal = (d.run_dir / "run.db-wal").read_bytes()
    (d.run_dir / "run.db").unlink()
    done = d.cli("restore")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "None" not in done.stdout, done.stdout
    with RunStore.open(d.run_dir / "run.db") as store:
        assert store.integrity_check() == ("ok",)
        revision = store.revision
    assert f"restored revision {revision}" in done.stdout
    status = d.cli("status", "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["replicas"]["checkpoint"]["revision"] == revision
    assert _kept(d.run_dir, old_wal)
