"""The panel on a real daemon (`autodev run` on stand-in CLIs, docs/panel.md): a say sent from the
panel reaches the thread exactly once and the panel says at which revision; pause, resume and
stop from the panel act through the control table as `autodev pause|resume|stop` (C6); the
status the panel streams is the status the command prints."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")

from helpers.daemons import Daemon
from helpers.panels import Panel

FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def _status_word(event: dict[str, Any]) -> str:
    return str(event["data"]["view"]["status"]) if event["event"] == "status" else ""


def test_say_pause_resume_stop_from_the_panel_on_a_real_daemon(tmp_path: Path) -> None:
    daemon = Daemon(tmp_path, {"ana": "claude", "rui": "codex"},
                    {"default": {"post": "ok", "sleep": 0.5}})
    daemon.start()
    panel: Panel | None = None
    try:
        deadline = time.monotonic() + 60
        while not (daemon.run_dir / "run.db").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        panel = Panel(daemon.run_dir, env={**daemon.env, "PYTHONUNBUFFERED": "1"})
        stream = panel.events()
        stream.until(lambda e: e["event"] == "status" and e["data"]["view"]["daemon_running"])
        said = panel.request("POST", "/api/say", body="message=from+the+panel+%3Cb%3E",
                             headers=FORM)
        assert said.status == 200 and said.json()["daemon_running"] is True
        key = said.json()["key"]
        arrived = stream.until(lambda e: e["event"] == "post" and e["data"]["key"] == key)
        post = arrived[-1]["data"]
        assert post["text"] == "from the panel <b>" and post["kind"] == "message"
        assert arrived[-1]["id"] is not None or post["revision"] > 0
        # exactly once in the store, whatever the stream did
        thread = panel.request("GET", "/api/thread?limit=500").json()
        assert [p["key"] for p in thread].count(key) == 1

        assert panel.request("POST", "/api/pause").status == 200
        stream.until(lambda e: _status_word(e) == "paused")
        printed = subprocess.run(
            [sys.executable, "-m", "autodev_shell.cli", "status", "--json", "--run",
             str(daemon.run_dir)], capture_output=True, text=True, timeout=60, env=daemon.env)
        served = panel.request("GET", "/api/status").json()
        mine = json.loads(printed.stdout)
        for facts in (mine, served):
            facts["daemon"].pop("heartbeat_age_seconds")
            facts["daemon"].pop("lock_file_time")
        assert served == mine and served["status"] == "paused"

        assert panel.request("POST", "/api/resume").status == 200
        stream.until(lambda e: _status_word(e) == "running")
        assert panel.request("POST", "/api/stop").status == 200
        assert daemon.proc is not None
        assert daemon.proc.wait(timeout=120) == 0  # the daemon stopped by its control table
        stream.until(lambda e: e["event"] == "status"
                     and not e["data"]["view"]["daemon_running"])
        assert panel.request("POST", "/api/pause").status == 409  # no daemon: not queued
        stream.close()
    finally:
        if panel is not None:
            assert panel.stop() == 0
        if daemon.proc is not None and daemon.proc.poll() is None:
            daemon.proc.kill()
            daemon.proc.wait(timeout=60)
