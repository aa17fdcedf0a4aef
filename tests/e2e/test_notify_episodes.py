"""`notify:` with the real daemon in `--fast` time (docs/notifications.md), to a loopback JSON
webhook and a command, as tests/e2e/test_notify_daemon.py does: every participant limited (A18)
is told once per episode — a run limited again and again with nobody posting is one notice, and
a post starts a new episode — and a daemon ended by SIGTERM is told as `stopped`."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from helpers.daemons import wait_for
from test_notify_daemon import FastRun, _events, receiver

pytest.importorskip("apprise")  # the test extra brings it (tests/project/test_test_extra.py)

__all__ = ["receiver"]  # the fixture, shared with test_notify_daemon

#: A2: a notice with a relative reset, elapsed time on the run's clock (A6): 20 virtual minutes.
LIMITED = {"kind": "limit", "notice": "Usage limit reached. Try again in 20 minutes."}


class ScriptedRun(FastRun):
    """FastRun's team of one (ana on claude) and its receivers, answering from `script`."""

    def __init__(self, root: Path, port: int, script: dict[str, Any]) -> None:
        super().__init__(root, port)
        self.script.write_text(json.dumps(script), "utf-8")


def _told(server: Any) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = server.got
    return got


@pytest.mark.slow  # nine waits of 20 virtual minutes and the daemons, a few seconds
def test_A18_every_participant_limited_is_told_once_per_episode(
    tmp_path: Path, receiver: Any
) -> None:
    # Limited five times in a row (each wait slept out, the run limited again at once), a
    # post, then limited for good: two episodes.
    script = {"claude": {"answers": [LIMITED] * 5 + [{"post": "done"}],
                         "default": LIMITED}}
    run = ScriptedRun(tmp_path, receiver.server_address[1], script)
    run.start()
    try:
        # The sixth call is the post (the script's queue, in order).
        wait_for(lambda: len(run.calls()) >= 10, "five limits, the post, then four limits more")
        time.sleep(1.0)  # the notices of the waits so far have gone out
        run.control("stop")
        assert run.wait_exit() == 0
    finally:
        run.stop()
    assert _events(receiver) == ["waiting", "waiting", "stopped"]
    assert run.commanded_events() == ["wait-limited", "wait-limited", "stopped"]
    first, second = (item["body"]["message"] for item in _told(receiver)[:2])
    assert first.startswith("every participant limited — waiting for claude, back first at ")
    assert second.startswith("every participant limited — waiting for claude, back first at ")


def test_a_daemon_ended_by_sigterm_is_told_as_stopped(tmp_path: Path, receiver: Any) -> None:
    run = ScriptedRun(tmp_path, receiver.server_address[1], {"default": LIMITED})
    proc = run.start()
    try:
        wait_for(lambda: run.commanded_events() == ["wait-limited"], "the wait told")
        os.kill(proc.pid, signal.SIGTERM)
        assert run.wait_exit() == 143  # 128 + 15 (cli/commands.py EXIT_TERMINATED)
    finally:
        run.stop()
    assert run.commanded_events() == ["wait-limited", "stopped"]
    assert _events(receiver) == ["waiting", "stopped"]
    said = _told(receiver)[-1]["body"]["message"]
    assert said.startswith("daemon ended by SIGTERM; its call in flight was stopped")
