"""`notify:` with the real daemon in `--fast` time (docs/notifications.md; A31, A42): a run whose
participant never posts pauses (three empty turns); every pause reaches a loopback JSON webhook
(Apprise's `json://`) and a command exactly once, through resumes, a virtual day left alone and a
restart of the daemon; `stop` is told once too."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from helpers.daemons import Daemon, operator_signals_default, wait_for

pytest.importorskip("apprise")  # the test extra brings it (tests/project/test_test_extra.py)

#: Virtual seconds per real second: a virtual day is 8.6 s.
FAST = 10000
DAY_REAL_SECONDS = 24 * 3600 / FAST

RECORDER = """\
import json, os, sys
notice = json.loads(sys.stdin.read())
with open(sys.argv[1], "a", encoding="utf-8") as out:
    out.write(json.dumps({"notice": notice, "event": os.environ["AUTODEV_EVENT"]}) + "\\n")
"""


class Receiver(BaseHTTPRequestHandler):
    got: list[dict[str, Any]]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.server.got.append(  # type: ignore[attr-defined]
            {"path": self.path, "body": json.loads(body)})
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    server.got = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


class FastRun(Daemon):
    """A team of one (ana on claude) that never posts, told by a command and a JSON webhook."""

    def __init__(self, root: Path, port: int) -> None:
        super().__init__(root, {"ana": "claude"}, {"default": {"post": ""}})
        recorder = root / "recorder.py"
        recorder.write_text(RECORDER, "utf-8")
        self.commanded = root / "commanded.jsonl"
        (self.team / "autodev.yaml").write_text(
            "notify:\n"
            f"  command: [{json.dumps(sys.executable)}, {json.dumps(str(recorder))}, "
            f"{json.dumps(str(self.commanded))}]\n"
            f"  urls: [json://127.0.0.1:{port}/hook/s3cr3t-token]\n", "utf-8")

    def start(self) -> subprocess.Popen[bytes]:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "autodev_shell.cli", "run", str(self.team), "--run",
             str(self.run_dir), "--fast", str(FAST)],
            env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, preexec_fn=operator_signals_default)
        return self.proc

    def commanded_events(self) -> list[str]:
        if not self.commanded.exists():
            return []
        return [json.loads(line)["event"] for line in self.commanded.read_text().splitlines()]


def _events(server: ThreadingHTTPServer) -> list[str]:
    """Each notice's summary, from its title `autodev <run>: <summary>[ — <reason>]`."""
    got: list[dict[str, Any]] = server.got  # type: ignore[attr-defined]
    return [item["body"]["title"].split(": ", 1)[1].split(" — ", 1)[0] for item in got]


@pytest.mark.slow  # a virtual day is 8.6 s of waiting; CI runs it
def test_every_pause_reaches_the_receiver_exactly_once_over_a_day(
    tmp_path: Path, receiver: ThreadingHTTPServer
) -> None:
    run = FastRun(tmp_path, receiver.server_address[1])
    run.start()
    try:
        for pauses in (1, 2, 3):
            wait_for(lambda n=pauses: run.commanded_events().count("empty-turns") == n  # type: ignore[misc]
                     and _events(receiver).count("paused") == n, f"pause {pauses} told")
            if pauses == 2:  # a daemon killed and started again on a paused run tells nothing
                run.kill9()
                run.start()  # the resume below waits in the store for it
            if pauses < 3:
                run.control("resume")
        time.sleep(DAY_REAL_SECONDS)  # a virtual day, left alone, paused
        assert run.commanded_events().count("empty-turns") == 3
        assert _events(receiver).count("paused") == 3
        run.control("stop")
        assert run.wait_exit() == 0
    finally:
        run.stop()
    got: list[dict[str, Any]] = receiver.got  # type: ignore[attr-defined]
    assert run.commanded_events() == ["empty-turns"] * 3 + ["stopped"]
    assert _events(receiver) == ["paused"] * 3 + ["stopped"]
    assert {item["path"] for item in got} == {"/hook/s3cr3t-token"}
    assert got[0]["body"]["message"] == (
        "ana ended 3 turns in a row without a post; run paused — resume to try again.")
    # Each pause names its reason (A31): in the title, and in the command's notice.
    assert [item["body"]["title"] for item in got[:3]] == [
        "autodev team: paused — turns ended without a post"] * 3
    assert {json.loads(line)["notice"]["paused_for"]
            for line in run.commanded.read_text().splitlines()[:3]} == {"empty"}
    # The URL's token is a secret: no line of the run writes it.
    for name in ("autodev.log", "autodev.log.jsonl"):
        assert "s3cr3t" not in (run.run_dir / name).read_text("utf-8")
