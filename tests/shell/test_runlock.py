"""One daemon per run (SPEC C4), on real processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from autodev_shell.store.runlock import RunLock, RunLockedError, lock_path

HOLDER = (
    "import sys, time\n"
    "from autodev_shell.store.runlock import RunLock\n"
    "lock = RunLock.acquire(sys.argv[1], run=sys.argv[2])\n"
    "print('locked', flush=True)\n"
    "time.sleep(120)\n"
)


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    """A separate process holding the lock of run `team-run`."""
    db = tmp_path / "run.db"
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(db), "team-run"],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "locked"
        yield proc, db
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)


def test_C4_second_daemon_is_refused_naming_run_and_pid(
    holder: tuple[subprocess.Popen[str], Path],
) -> None:
    proc, db = holder
    with pytest.raises(RunLockedError) as info:
        RunLock.acquire(db, run="team-run")
    error = info.value
    assert error.pid == proc.pid
    assert error.run == "team-run"
    message = str(error)
    assert "'team-run'" in message and f"pid {proc.pid}" in message
    assert "\n" not in message


def test_C4_kill_9_never_leaves_a_stale_lock(
    holder: tuple[subprocess.Popen[str], Path],
) -> None:
    proc, db = holder
    with pytest.raises(RunLockedError):
        RunLock.acquire(db, run="team-run")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert lock_path(db).exists()  # The file stays; the kernel dropped the lock.
    with RunLock.acquire(db, run="team-run") as lock:
        assert lock.held
        assert lock_path(db).read_text().strip() == str(os.getpid())


def test_C4_second_lock_in_the_same_process_is_refused_until_released(tmp_path: Path) -> None:
    db = tmp_path / "run.db"
    first = RunLock.acquire(db, run="r")
    with pytest.raises(RunLockedError) as info:
        RunLock.acquire(db, run="r")
    assert info.value.pid == os.getpid()
    first.release()
    first.release()  # Idempotent.
    assert not first.held
    with RunLock.acquire(db, run="r") as second:
        assert second.held
    assert lock_path(db).read_text() == ""  # No pid left behind after a clean release.


def test_C4_different_runs_do_not_block_each_other(tmp_path: Path) -> None:
    with RunLock.acquire(tmp_path / "a.db", run="a"), RunLock.acquire(tmp_path / "b.db",
                                                                      run="b") as b:
        assert b.held


def test_C4_children_of_the_daemon_do_not_inherit_the_lock(tmp_path: Path) -> None:
    """A CLI the daemon spawns outliving it must not keep the run locked (O_CLOEXEC)."""
    db = tmp_path / "run.db"
    lock = RunLock.acquire(db, run="r")
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; print('up', flush=True); time.sleep(60)"],
        close_fds=False, stdout=subprocess.PIPE, text=True,
    )
    try:
        # Wait until the child runs: the kernel closes close-on-exec descriptors a moment
        # after the spawning parent resumes, and that moment is not what is tested here.
        assert child.stdout is not None and child.stdout.readline().strip() == "up"
        lock.release()
        with RunLock.acquire(db, run="r") as again:
            assert again.held
    finally:
        child.kill()
        child.wait(timeout=30)


def test_C4_lock_file_sits_beside_the_database(tmp_path: Path) -> None:
    assert lock_path(tmp_path / "run.db") == tmp_path / "run.db.lock"
