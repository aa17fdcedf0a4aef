"""C1: no CLI outlives its daemon, and never two calls of one turn alive together. A
kill -9 of the daemon during a slow call: the restart ends that call's process group (the CLI's
own child outlives the CLI) before it starts the owed turn again. SIGTERM: the daemon ends the
call's group before it exits. Real daemon, stand-in CLIs with a grandchild."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from helpers.daemons import Daemon, alive, wait_for

from autodev_shell.cli.commands import EXIT_TERMINATED


def _slow_with_grandchild(root: Path) -> dict[str, object]:
    return {
        "claude": [{"post": "slow", "sleep": 600,
                    "grandchild_pidfile": str(root / "grandchild.pid")}],
        "default": {"post": "ok"},
    }


def _grandchild(root: Path) -> int:
    path = root / "grandchild.pid"
    wait_for(lambda: path.exists() and path.read_text().strip().isdigit(), "the grandchild")
    return int(path.read_text().strip())


def test_kill_9_then_restart_ends_the_old_call_before_the_owed_turn_starts(
    tmp_path: Path,
) -> None:
    d = Daemon(tmp_path, {"ana": "claude", "rui": "codex"}, _slow_with_grandchild(tmp_path))
    d.start()
    try:
        wait_for(lambda: len(d.calls()) == 1, "the slow call")
        first = d.calls()[0]["pid"]
        grandchild = _grandchild(tmp_path)
        assert alive(first) and alive(grandchild)
        d.kill9()
        d.start()
        wait_for(lambda: len(d.calls()) >= 2, "the owed turn started again")
        second = d.calls()[1]
        assert second["cli"] == "claude"  # ana's turn, still owed (A33)
        # When the second call started, the first was no longer running ...
        assert second["alive_before"] == []
        # ... nor the child it left behind.
        wait_for(lambda: not alive(grandchild), "the old call's grandchild to be gone", 10)
        wait_for(lambda: any(who == "ana" for _, who, _ in d.thread()), "ana's post")
    finally:
        d.stop()
        for pid in (first, grandchild):
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_sigterm_ends_the_calls_process_group_before_the_daemon_exits(tmp_path: Path) -> None:
    d = Daemon(tmp_path, {"ana": "claude"}, _slow_with_grandchild(tmp_path))
    proc = d.start()
    try:
        wait_for(lambda: len(d.calls()) == 1, "the slow call")
        first = d.calls()[0]["pid"]
        grandchild = _grandchild(tmp_path)
        proc.send_signal(signal.SIGTERM)
        assert d.wait_exit() == EXIT_TERMINATED
        assert proc.stderr is not None
        err = proc.stderr.read().decode()
        assert "SIGTERM" in err and "Traceback" not in err, err
        # The group was ended before the daemon exited (poll: the kernel reaps asynchronously).
        wait_for(lambda: not alive(first) and not alive(grandchild), "the call's group gone", 10)
    finally:
        for pid in (first, grandchild):
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
