"""The log records the daemon's own life (docs/loop.md, The daemon's own lines): its start, a
restart on a run with a saved state, a stop, and a signal ending it. Real processes, stand-in
CLIs."""

from __future__ import annotations

import re
import signal
from pathlib import Path

from helpers.daemons import SLOW_FIRST_CLAUDE, Daemon, wait_for


def _lines(d: Daemon) -> list[str]:
    text = (d.run_dir / "autodev.log").read_text(encoding="utf-8")
    return [line.split(" ", 1)[1] for line in text.splitlines() if line.startswith("20")]


def test_the_log_records_start_stop_signal_end_and_restart(tmp_path: Path) -> None:
    d = Daemon(tmp_path, {"ana": "claude"}, SLOW_FIRST_CLAUDE)
    first = d.start()
    try:
        wait_for(lambda: len(d.calls()) == 1, "the first (slow) call")
        first.send_signal(signal.SIGTERM)
        assert d.wait_exit() == 143
        second = d.start()
        wait_for(lambda: d.thread(), "a post after the restart")
        d.control("stop")
        assert d.wait_exit() == 0
    finally:
        d.stop()
    daemon = [line for line in _lines(d) if line.startswith("daemon ")]
    assert daemon == [
        f"daemon started (pid {first.pid}); calls run in {Path.cwd()}",
        "daemon ended by SIGTERM; its call in flight was stopped, the owed turn starts again "
        "with the next `autodev run`",
        f"daemon restarted (pid {second.pid}); going on from the run's saved state; calls run "
        f"in {Path.cwd()}",
        "daemon stopped; the run is stopped",
    ]
    assert all(not re.search(r"Traceback", line) for line in _lines(d))
