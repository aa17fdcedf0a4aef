"""A long answer is never silently lost (SPEC A5, A17, A28, A31, C1, C8).

A model may answer with one enormous line (a generated file, a minified blob): codex and agy
print it as plain text, claude as one stream-json `result` event. Such an answer is a post —
whole up to the bound of one post (1 MiB of the CLI's output), else cut with a marker saying how
many bytes were cut — never "ended the turn without a post" (A31). Memory stays bounded
whatever the CLI prints, and detection keeps its rules (A5: model text over 300 characters is
never read as a notice).

The rules are stated here on their own: these tests import none of the bounds they check.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.daemons import posts_of

from autodev_core.scheduler.state import SchedulerState
from autodev_core.serialization import from_json
from autodev_shell.calls import CallResult, build_argv, run_call
from autodev_shell.calls.capture import _Capture
from autodev_shell.standins import install_standins, standin_env, write_script
from autodev_shell.store.folder import LOG_FILE, run_db
from autodev_shell.store.run_store import RunStore

#: One post keeps at most this many bytes of the CLI's output (the rule under test).
ONE_POST = 1024 * 1024
#: What the capture may hold at once, whatever the CLI prints: a few posts' worth.
RETAINED_MAX = 4 * ONE_POST
KIB = 1024
MIB = 1024 * KIB
_MARKER = re.compile(r"\n?\[autodev cut (\d+) bytes of this answer here[^\]\n]*\]\n?")


def _run(env: dict[str, str], provider: str) -> CallResult:
    return run_call(build_argv(provider, "do it"), provider=provider, env=env, timeout=120)


def _one_line(size: int, seed: str) -> str:
    """An answer of `size` ASCII characters on one line, its start and end recognisable."""
    body = (seed * (size // len(seed) + 1))[: size - len("BEGIN") - len("END")]
    return "BEGIN" + body + "END"


def _split(post: str) -> tuple[str, int, str]:
    """The kept start, the number of bytes cut, the kept end (the marker is there exactly once)."""
    found = list(_MARKER.finditer(post))
    assert len(found) == 1, f"{len(found)} markers in a post of {len(post)} characters"
    marker = found[0]
    return post[: marker.start()], int(marker.group(1)), post[marker.end() :]


# -- plain text: codex exec and agy -p print the answer as it is ---------------------------------


@pytest.mark.parametrize("provider", ["codex", "agy"])
def test_A31_a_plain_one_line_answer_of_300_KiB_is_a_post_whole(
    standins: Callable[..., dict[str, str]], provider: str
) -> None:
    answer = _one_line(300 * KIB, "abc def ")
    result = _run(standins({provider: [{"post": answer}]}), provider)
    assert (result.exit_code, result.killed) == (0, False)
    assert result.post == answer
    assert result.classification.kind == "other"


@pytest.mark.parametrize("provider", ["codex", "agy"])
def test_A31_a_plain_one_line_answer_of_5_MB_is_a_post_cut_with_a_marker(
    standins: Callable[..., dict[str, str]], provider: str
) -> None:
    answer = _one_line(5 * 1000 * 1000, "0123456789 ")
    result = _run(standins({provider: [{"post": answer}]}), provider)
    assert result.post is not None, "a 5 MB answer gave no post"
    start, cut, end = _split(result.post)
    # The start and the end of the answer are kept, exactly; the marker stands for the middle.
    assert start.startswith("BEGIN") and answer.startswith(start)
    assert end.endswith("END") and answer.endswith(end)
    # Kept and cut bytes add up to the whole answer.
    assert len(start) + cut + len(end) == len(answer)
    assert ONE_POST - 8 <= len(start) + len(end) <= ONE_POST
    assert len(result.post.encode()) <= ONE_POST + 200
    assert result.post_cut_bytes == cut


def test_A5_a_long_plain_answer_ending_with_a_quoted_notice_is_a_post_not_a_limit(
    standins: Callable[..., dict[str, str]],
) -> None:
    # The notice is the last line of a 400 KiB answer: model text over 300 characters (A5).
    notice = "Individual quota reached. Your quota will refresh automatically. Resets in 2h31m33s."
    answer = _one_line(400 * KIB, "generated code ") + "\n" + notice
    result = _run(standins({"agy": [{"post": answer}]}), "agy")
    assert result.post == answer
    assert result.classification.kind == "other", result.classification


# -- claude stream-json: the answer is one `result` event ---------------------------------------


def test_A31_a_claude_result_event_of_2_MiB_is_a_post_cut_with_a_marker(
    standins: Callable[..., dict[str, str]],
) -> None:
    # Escapes and two-byte characters all along, so the cut must fall between whole ones.
    line = 'line \u00e9 with a "quote", a \\ backslash and a tab\t ' + "x" * 60
    answer = "START\n" + "\n".join(f"{i:06d} {line}" for i in range(2 * MIB // 100))
    assert len(answer.encode()) > 2 * MIB
    result = _run(standins({"claude": [{"post": answer}]}), "claude")
    assert (result.exit_code, result.killed) == (0, False)
    assert result.post is not None, "a 2 MiB result event gave no post"
    start, cut, end = _split(result.post)
    assert end == ""  # the start of the result is kept, the marker closes it
    assert start.startswith("START\n000000 line \u00e9") and answer.startswith(start)
    # The bytes cut are the result's bytes as the CLI wrote them (JSON-escaped) not kept.
    written = len(json.dumps(answer, ensure_ascii=False)[1:-1].encode())
    kept = len(json.dumps(start, ensure_ascii=False)[1:-1].encode())
    assert kept + cut == written
    assert ONE_POST - 64 * KIB <= kept <= ONE_POST
    assert result.post_cut_bytes == cut
    assert result.classification.kind == "other"


def test_C1_a_codex_json_agent_message_of_2_MiB_is_a_post_cut_with_a_marker(
    standins: Callable[..., dict[str, str]],
) -> None:
    answer = _one_line(2 * MIB, "minified();")
    event = {"type": "item.completed", "item": {"id": "item_1", "type": "agent_message",
                                                "text": answer}}
    stdout = (json.dumps({"type": "thread.started", "thread_id": "t"}) + "\n"
              + json.dumps(event) + "\n" + json.dumps({"type": "turn.completed"}) + "\n")
    result = _run(standins({"codex": [{"stdout": stdout}]}), "codex")
    assert result.post is not None
    start, cut, end = _split(result.post)
    assert end == "" and answer.startswith(start) and len(start) + cut == len(answer)
    assert ONE_POST - 64 * KIB <= len(start) <= ONE_POST


# -- memory stays bounded whatever is printed -----------------------------------------------------


def _feed(capture: _Capture, total: int, chunk: bytes) -> None:
    fed = 0
    while fed < total:
        capture.feed("stdout", chunk)
        fed += len(chunk)
        assert capture.retained_bytes() <= RETAINED_MAX, f"{capture.retained_bytes()} at {fed}"


@pytest.mark.parametrize("shape", ["plain line", "result event", "many events", "many lines"])
def test_C1_50_MB_through_the_capture_retain_a_bounded_number_of_bytes(shape: str) -> None:
    total = 50 * 1000 * 1000
    capture = _Capture(None)
    if shape == "plain line":
        _feed(capture, total, b"0123456789abcdef" * 4096)
        capture.feed("stdout", b"END\n")
    elif shape == "result event":
        capture.feed("stdout", b'{"type":"result","subtype":"success","is_error":false,"result":"')
        _feed(capture, total, b'chunk \\"of\\" \xc3\xa9 text\\n' * 4096)
        capture.feed("stdout", b'END","session_id":"s"}\n')
    elif shape == "many events":
        line = json.dumps({"type": "result", "subtype": "success", "is_error": False,
                           "result": "r" * (3 * MIB)}).encode() + b"\n"
        _feed(capture, total, line)
    else:
        _feed(capture, total, b"a line of chatter\n" * 4096)
    capture.finish()
    assert capture.retained_bytes() <= RETAINED_MAX
    text = capture.stdout_text()
    assert len(text.encode()) <= RETAINED_MAX
    if shape != "many lines":
        assert _MARKER.search(text), "a cut answer says so"


# -- the real daemon -------------------------------------------------------------------------------


def test_A31_the_daemon_posts_long_one_line_answers_and_goes_on(tmp_path: Path) -> None:
    team = tmp_path / "team"
    team.mkdir()
    (team / "1-rui.md").write_text("---\nprovider: codex\n---\nImplement.\n", encoding="utf-8")
    (team / "2-ana.md").write_text("---\nprovider: claude\n---\nReview.\n", encoding="utf-8")
    (team / "3-eva.md").write_text("---\nprovider: agy\n---\nTest.\n", encoding="utf-8")
    codex_answer = _one_line(300 * KIB, "codex wrote this ")
    claude_answer = "ANA " + "y" * (2 * MIB)
    agy_answer = _one_line(5 * 1000 * 1000, "agy blob;")
    bin_dir = install_standins(tmp_path / "bin")
    script = write_script(tmp_path / "script.json", {
        "codex": [{"post": codex_answer}], "claude": [{"post": claude_answer}],
        "agy": [{"post": agy_answer}], "default": {"post": "ok"},
    })
    run_dir = tmp_path / "run"
    daemon = subprocess.Popen(
        [sys.executable, "-m", "autodev_shell.cli", "run", str(team), "--run", str(run_dir)],
        env=standin_env(bin_dir, script), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 180
        while len(posts_of(run_dir)) < 5:  # the three long answers, then the run goes on
            if daemon.poll() is not None:
                err = daemon.stderr.read().decode(errors="replace") if daemon.stderr else ""
                raise AssertionError(f"the daemon ended (exit {daemon.returncode}): {err[-3000:]}")
            assert time.monotonic() < deadline, f"{len(posts_of(run_dir))} posts after 180 s"
            time.sleep(0.2)
    finally:
        os.killpg(daemon.pid, signal.SIGKILL)
        daemon.wait(timeout=30)

    posts = posts_of(run_dir)
    assert posts[0] == ("1-rui", codex_answer)
    assert posts[1][0] == "2-ana" and posts[1][1].startswith("ANA yyy")
    start, cut, _ = _split(posts[1][1])
    assert len(start) + cut == len(claude_answer)
    assert posts[2][0] == "3-eva"
    start, cut, end = _split(posts[2][1])
    assert start.startswith("BEGIN") and end.endswith("END")
    assert [who for who, _ in posts[3:5]] == ["1-rui", "2-ana"]

    log = (run_dir / LOG_FILE).read_text(encoding="utf-8")
    assert "without a post" not in log and " failed on " not in log, log[-3000:]
    store = RunStore.open(run_db(run_dir))
    try:
        state = from_json(store.snapshot().scheduler_state_json, SchedulerState)
    finally:
        store.close()
    assert set(state.empties) == {0}  # no turn ended without a post (A31)
    lane = subprocess.run(
        [sys.executable, "-m", "autodev_shell.cli", "lane", "3-eva", "--run", str(run_dir)],
        capture_output=True, timeout=60, check=False,
    )
    assert lane.returncode == 0
    # C8: the lane records that the post was cut, and by how much.
    assert f"posted, cut by {cut} bytes".encode() in lane.stdout
