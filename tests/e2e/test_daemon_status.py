"""C6: `autodev status` tells the truth. A daemon killed with -9 is shown as not running
(its lock, not the heartbeat alone, says so); `status | head -1` prints no `Broken pipe`, nor
does any command whose reader goes away; `status --json` has the same facts under stable keys."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from helpers.daemons import SLOW_FIRST_CLAUDE, Daemon, wait_for


def test_C6_a_killed_daemon_is_not_running_in_status_and_status_json(tmp_path: Path) -> None:
    d = Daemon(tmp_path, {"ana": "claude"}, SLOW_FIRST_CLAUDE)
    proc = d.start()
    try:
        wait_for(lambda: len(d.calls()) == 1, "the slow call")
        live = d.cli("status")
        assert live.returncode == 0, live.stderr
        assert "status: running" in live.stdout
        assert f"daemon: running (pid {proc.pid})" in live.stdout
        facts = json.loads(d.cli("status", "--json").stdout)
        assert facts["daemon"]["running"] is True and facts["daemon"]["pid"] == proc.pid
        assert facts["status"] == "running" and facts["due"] == "ana"
        d.kill9()
        dead = d.cli("status")
        assert dead.returncode == 0, dead.stderr
        first = [line for line in dead.stdout.splitlines() if line.startswith("status: ")]
        assert first == [first[0]] and first[0].startswith(
            f"status: not running (daemon pid {proc.pid} is gone; last heartbeat "), first
        assert "last status: running" in first[0]
        assert "daemon: not running" in dead.stdout
        facts = json.loads(d.cli("status", "--json").stdout)
        assert facts["daemon"]["running"] is False and facts["daemon"]["pid"] == proc.pid
        assert facts["daemon"]["last_heartbeat"] is not None
        assert set(facts) >= {"run_id", "store", "status", "daemon", "wait_until", "due",
                              "limits", "outages", "failure_streak", "calls", "persistence",
                              "posts"}
    finally:
        d.stop()


def test_a_reader_that_goes_away_is_no_error(tmp_path: Path) -> None:
    d = Daemon(tmp_path, {"ana": "claude"}, {"default": {"post": "ok"}})
    d.start()
    wait_for(lambda: d.thread(), "a post")
    d.stop()
    for args in (("status",), ("status", "--json"), ("lane", "ana")):
        read, write = os.pipe()
        os.close(read)  # the reader is gone before anything is written: EPIPE at once
        try:
            done = subprocess.run(
                [sys.executable, "-m", "autodev_shell.cli", *args, "--run", str(d.run_dir)],
                stdout=write, stderr=subprocess.PIPE, text=True, timeout=120, env=d.env,
            )
        finally:
            os.close(write)
        assert done.stderr == "", (args, done.stderr)
        assert done.returncode in (0, 141)
