"""One post can never brick the run (SPEC A28, C3, C8).

The real daemon (`autodev run` in its own process) on stand-in CLIs whose posts hold a NUL
byte, a lone surrogate escape, invalid UTF-8, two 70 KB posts and a 10 MB output, and a
participant with an empty body (its prompt begins with `-`). Today's failures were
`ValueError: embedded null byte` and `Argument list too long` on the next call and on every
restart. The run must go on posting, survive a kill -9 and a restart, and keep every prompt
small: the thread window is bounded in bytes, claude and codex read the prompt on stdin, and
agy's argv prompt stays well under Linux's 128 KiB limit on one argument.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from helpers.daemons import posts_of

from autodev_shell.standins import install_standins, standin_env, write_script
from autodev_shell.store.folder import LOG_FILE, run_db
from autodev_shell.store.run_store import RunStore

#: The marker where a post longer than its bound was cut (docs/shell.md).
CUT = re.compile(r"\n?\[autodev cut (\d+) bytes of this answer here[^\]\n]*\]\n?")
#: Linux's limit on one argument (MAX_ARG_STRLEN, 32 pages of 4 KiB).
ONE_ARGUMENT_LIMIT = 128 * 1024
CLAUDE_SURROGATE = (
    '{"type":"system","subtype":"init","session_id":"s"}\n'
    '{"type":"result","subtype":"success","is_error":false,"result":"bad \\ud800 surrogate",'
    '"session_id":"s"}\n'
)


def _start(team: Path, run_dir: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "autodev_shell.cli", "run", str(team), "--run", str(run_dir)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
    )


def _wait_for_posts(run_dir: Path, count: int, daemon: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if len(posts_of(run_dir)) >= count:
            return
        if daemon.poll() is not None:
            err = daemon.stderr.read().decode(errors="replace") if daemon.stderr else ""
            raise AssertionError(f"the daemon died (exit {daemon.returncode}):\n{err[-3000:]}")
        time.sleep(0.1)
    raise AssertionError(f"only {len(posts_of(run_dir))} posts after 120 s, wanted {count}")


def _kill(daemon: subprocess.Popen[bytes]) -> None:
    os.killpg(daemon.pid, signal.SIGKILL)
    daemon.wait(timeout=30)


# One daemon's story, told in order: splitting it would hide which post came when.
def test_C3_C8_odd_posts_never_brick_the_run_and_a_restart_goes_on(tmp_path: Path) -> None:
    team = tmp_path / "team"
    team.mkdir()
    (team / "1-ana.md").write_text("---\nprovider: claude\n---\n", encoding="utf-8")  # empty body
    (team / "2-rui.md").write_text("---\nprovider: codex\n---\nImplement.\n", encoding="utf-8")
    (team / "3-eva.md").write_text("---\nprovider: agy\n---\n- review it\n", encoding="utf-8")
    bin_dir = install_standins(tmp_path / "bin")
    script = write_script(tmp_path / "script.json", {
        "claude": [{"post": "nul\x00byte"}, {"stdout": CLAUDE_SURROGATE}, {"post": "A" * 70_000},
                   {"post": "after 10 MB of events", "flood_bytes": 10_000_000}],
        "codex": [{"stdout_hex": "fffe41c3280a", "post": "after bad bytes"},
                  {"post": "B" * 70_000}, {"post": ("C" * 99 + "\n") * 100_000}],
        "default": {"post": "ok"},
    })
    calls = tmp_path / "calls.jsonl"
    env = standin_env(bin_dir, script, log=calls)
    run_dir = tmp_path / "run"

    daemon = _start(team, run_dir, env)
    try:
        _wait_for_posts(run_dir, 13, daemon)  # every odd answer, then more turns
    finally:
        _kill(daemon)
    daemon = _start(team, run_dir, env)
    try:
        _wait_for_posts(run_dir, 16, daemon)  # the restart goes on posting
    finally:
        _kill(daemon)

    texts = [text for _, text in posts_of(run_dir)]
    assert "nul\x00byte" in texts
    assert "bad \ufffd surrogate" in texts
    assert any(t.endswith("after bad bytes") and "\ufffd" in t for t in texts)
    assert "A" * 70_000 in texts and "B" * 70_000 in texts
    # A 10 MB answer: its post is its start and its end, 1 MiB in all, and a marker between
    # them saying how many bytes were cut (never no post, never 10 MB in the thread).
    ten_mb = ("C" * 99 + "\n") * 100_000
    cut_posts = [(t, m) for t in texts if (m := CUT.search(t))]
    assert len(cut_posts) == 1, [t[:80] for t in texts]
    text, marker = cut_posts[0]
    start, end, cut = text[: marker.start()], text[marker.end() :], int(marker.group(1))
    assert start.startswith("C" * 99 + "\n") and ten_mb.startswith(start)
    assert end.endswith("C" * 99) and ten_mb.rstrip("\n").endswith(end)
    assert 1024 * 1024 - 4 <= len(start) + len(end) <= 1024 * 1024
    # What was kept and what was cut add up to the answer (less the newlines a post trims).
    assert len(ten_mb) - 2 <= len(start) + cut + len(end) <= len(ten_mb)
    assert "after 10 MB of events" in texts
    store = RunStore.open(run_db(run_dir))  # integrity check on open
    store.close()

    records = [json.loads(line) for line in calls.read_text(encoding="utf-8").splitlines()]
    assert len(records) >= 16
    for record in records:
        prompt = record["prompt"]
        assert prompt, record["argv"]
        if record["cli"] == "agy":
            assert record["prompt_from"] == "argv"
            assert len(prompt.encode()) < ONE_ARGUMENT_LIMIT
        else:
            assert record["prompt_from"] == "stdin"  # never an argv item
        # Two 70 KB posts and a 10 MB one: the window keeps every prompt small.
        assert len(prompt.encode()) < 100 * 1024
    assert any(r["cli"] == "claude" and r["prompt"].startswith("---") for r in records)
    assert any("nul\x00byte" in r["prompt"] for r in records if r["cli"] != "agy")
    assert any("nul\ufffdbyte" in r["prompt"] for r in records if r["cli"] == "agy")

    log = (run_dir / LOG_FILE).read_text(encoding="utf-8")
    assert " failed on " not in log, log[-3000:]
    lane = subprocess.run(
        [sys.executable, "-m", "autodev_shell.cli", "lane", "2-rui", "--run", str(run_dir)],
        capture_output=True, timeout=60, check=False,
    )
    assert lane.returncode == 0 and b"Traceback" not in lane.stderr
