"""`autodev say -` reads the message from standard input (C6's exactly-once holds for
it as for an argument): a message longer than a command line may be (the kernel refuses one
argument over 128 KiB) still reaches the queue whole, and a mistake is one sentence."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers.daemons import empty_run, queued_says

ARG_MAX_ONE = 128 * 1024  # MAX_ARG_STRLEN on Linux: one argument's bytes


def _say(run_dir: Path, *args: str, stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "autodev_shell.cli", "say", *args, "--run",
                           str(run_dir)], input=stdin, capture_output=True, timeout=120)


@pytest.mark.parametrize(
    ("stdin", "expected"),
    [
        (b"line 000000 of a pasted log\n", "line 000000 of a pasted log\n"),
        ("".join(f"line {i:06d} é\n" for i in range(20_000)).encode(),
         "".join(f"line {i:06d} é\n" for i in range(20_000))),
        (b"two\n\nparagraphs\r\n\n\n", "two\n\nparagraphs\r\n\n\n"),
        (b"not utf-8: \xff\xfe end", "not utf-8: \ufffd\ufffd end"),
    ],
    ids=["one-line", "over-arg-max", "newlines-kept", "undecodable"],
)
def test_C6_say_dash_queues_standard_input_whole(tmp_path: Path, stdin: bytes,
                                                 expected: str) -> None:
    run_dir = empty_run(tmp_path)
    done = _say(run_dir, "-", stdin=stdin)
    assert done.returncode == 0, done.stderr
    assert queued_says(run_dir) == [expected]


def test_C6_a_message_over_one_argument_s_limit_needs_say_dash(tmp_path: Path) -> None:
    # The reason `say -` exists: the kernel refuses such an argument before autodev runs.
    run_dir = empty_run(tmp_path)
    with pytest.raises(OSError):
        _say(run_dir, "y" * (ARG_MAX_ONE + 1), stdin=b"")
    assert _say(run_dir, "-", stdin=b"y" * (ARG_MAX_ONE + 1)).returncode == 0
    assert queued_says(run_dir) == ["y" * (ARG_MAX_ONE + 1)]


@pytest.mark.parametrize("stdin", [b"", b"\n\n", b"   \n"])
def test_C6_an_empty_standard_input_is_one_sentence_and_queues_nothing(
    tmp_path: Path, stdin: bytes
) -> None:
    run_dir = empty_run(tmp_path)
    done = _say(run_dir, "-", stdin=stdin)
    assert done.returncode == 2
    assert b"Traceback" not in done.stderr and b"needs a message" in done.stderr
    assert queued_says(run_dir) == []


def test_C6_a_dash_among_words_is_a_word(tmp_path: Path) -> None:
    run_dir = empty_run(tmp_path)
    assert _say(run_dir, "a", "-", "b", stdin=b"ignored").returncode == 0
    assert queued_says(run_dir) == ["a - b"]
