"""C2: the run folder, or its write-ahead log, removed under a live daemon. The daemon
notices (same device and inode, every slice and before every write), stops writing with one
clear line and a non-zero exit; and while it lives, a second daemon on a folder made again at
the same path is refused (C4: the run-path lock lives outside the folder)."""

from __future__ import annotations

import shutil
import signal
from pathlib import Path

import pytest
from helpers.daemons import SLOW_FIRST_CLAUDE, Daemon, wait_for

from autodev_shell.cli.commands import EXIT_FOLDER_GONE


@pytest.mark.parametrize("what", ["folder", "wal"])
def test_a_removed_store_stops_the_daemon_with_one_clear_line(tmp_path: Path, what: str) -> None:
    d = Daemon(tmp_path, {"ana": "claude"}, SLOW_FIRST_CLAUDE)
    proc = d.start()
    try:
        wait_for(lambda: len(d.calls()) == 1, "the slow call")
        wal = d.run_dir / "run.db-wal"
        assert wal.exists()
        if what == "folder":
            shutil.rmtree(d.run_dir)
        else:
            wal.unlink()
        assert d.wait_exit() == EXIT_FOLDER_GONE
        assert proc.stderr is not None
        err = proc.stderr.read().decode()
        said = [line for line in err.splitlines() if line.startswith("autodev: ")]
        assert len(said) == 1 and "removed or replaced" in said[0], err
        assert "Traceback" not in err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_C4_a_recreated_folder_is_refused_while_the_old_daemon_lives(tmp_path: Path) -> None:
    d = Daemon(tmp_path, {"ana": "claude"}, SLOW_FIRST_CLAUDE)
    old = d.start()
    try:
        wait_for(lambda: len(d.calls()) == 1, "the slow call")
        old.send_signal(signal.SIGSTOP)  # the old daemon cannot notice anything meanwhile
        shutil.rmtree(d.run_dir)
        second = d.start()
        assert second.wait(timeout=60) == 2
        assert second.stderr is not None
        err = second.stderr.read().decode()
        assert "already driven by another autodev daemon" in err, err
        assert f"pid {old.pid}" in err
        old.send_signal(signal.SIGCONT)
        assert old.wait(timeout=60) == EXIT_FOLDER_GONE
    finally:
        for proc in (old,):
            if proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
                proc.kill()
                proc.wait()
