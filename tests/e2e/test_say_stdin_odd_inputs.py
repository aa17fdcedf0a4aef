"""`autodev say -` with a standard input that is odd in the ways an operator meets (C6's
exactly-once: once the command returns 0 the whole message is queued; any mistake is one
sentence, exit 2, nothing queued, no traceback).

- A non-blocking standard input: a descriptor shared with a program that set O_NONBLOCK on it
  (node does this to its stdio; the flag belongs to the open file, so every process sharing it
  sees it). Python's buffered `read()` then returns what has arrived so far — the start of a
  pasted log, queued as if whole and acknowledged — or None when nothing has (a traceback).
- A standard input open for writing only (`autodev say - 0>notes.txt`, a typo for `<`): the read
  fails with EBADF, which said only "Bad file descriptor", not which.
- A socket (an orchestrator's socketpair) reads as a pipe does.
- A directory (`autodev say - < somedir`): the Python interpreter itself refuses to start
  (`Fatal Python error: init_sys_streams: <stdin> is a directory`) before any of autodev's code
  or `site` runs, so autodev cannot word it; what is held here is that nothing is queued and
  the message names the directory (docs/cli.md).
A FIFO with no writer blocks, as `cat` does: not tested.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from helpers.daemons import empty_run, queued_says

WAIT = 120.0  # generous: the machine is loaded


def _argv(run_dir: Path) -> list[str]:
    return [sys.executable, "-m", "autodev_shell.cli", "say", "-", "--run", str(run_dir)]


def _waiting_for_input(proc: subprocess.Popen[bytes]) -> None:
    """Until `proc` ended, or sleeps in a poll/select (it waits for input that has not come).
    Without a readable wchan it gives up after a while: the test then holds less sharply, but
    never fails for it."""
    deadline = time.monotonic() + 30
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            wchan = Path(f"/proc/{proc.pid}/wchan").read_text()
        except OSError:
            wchan = ""
        if "poll" in wchan or "select" in wchan:
            return
        time.sleep(0.02)


def _drained(read_end: int) -> None:
    """Until the pipe holds nothing: the reader took what was written."""
    import fcntl
    import struct
    import termios

    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        left = struct.unpack("i", fcntl.ioctl(read_end, termios.FIONREAD, b"\0\0\0\0"))[0]
        if left == 0:
            return
        time.sleep(0.01)


def _say_through_nonblocking_pipe(run_dir: Path, first: bytes, rest: bytes) -> tuple[int, bytes]:
    read_end, write_end = os.pipe()
    try:
        os.set_blocking(read_end, False)  # as another program sharing the descriptor left it
        if first:
            os.write(write_end, first)
        proc = subprocess.Popen(_argv(run_dir), stdin=read_end, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        try:
            if first:
                _drained(read_end)  # it read the first part; the rest has not come yet
            else:
                _waiting_for_input(proc)
            if proc.poll() is None:
                os.write(write_end, rest)
        finally:
            os.close(write_end)
            write_end = -1
        _, err = proc.communicate(timeout=WAIT)
        return proc.returncode, err
    finally:
        os.close(read_end)
        if write_end != -1:
            os.close(write_end)


def test_C6_say_dash_on_a_nonblocking_input_with_nothing_yet_waits_for_the_message(
    tmp_path: Path,
) -> None:
    run_dir = empty_run(tmp_path)
    code, err = _say_through_nonblocking_pipe(run_dir, b"", b"the whole message\n")
    assert code == 0, err.decode(errors="replace")
    assert queued_says(run_dir) == ["the whole message\n"]


def test_C6_say_dash_on_a_nonblocking_input_queues_the_whole_message_not_its_start(
    tmp_path: Path,
) -> None:
    run_dir = empty_run(tmp_path)
    first = b"".join(b"log line %05d\n" % i for i in range(2_000))
    rest = b"".join(b"log line %05d\n" % i for i in range(2_000, 4_000)) + b"END"
    code, err = _say_through_nonblocking_pipe(run_dir, first, rest)
    assert code == 0, err.decode(errors="replace")
    assert queued_says(run_dir) == [(first + rest).decode()]


def test_C6_say_dash_on_an_input_open_for_writing_only_is_one_sentence(tmp_path: Path) -> None:
    run_dir = empty_run(tmp_path)
    target = tmp_path / "notes.txt"
    target.write_text("the operator meant < notes.txt\n")
    with target.open("ab") as write_only:  # `autodev say - 0>>notes.txt`
        done = subprocess.run(_argv(run_dir), stdin=write_only, capture_output=True,
                              timeout=WAIT)
    err = done.stderr.decode(errors="replace")
    assert done.returncode == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert "standard input" in err and "not open for reading" in err, err
    assert queued_says(run_dir) == []
    assert target.read_text() == "the operator meant < notes.txt\n"


def test_C6_say_dash_reads_a_socket_as_a_pipe(tmp_path: Path) -> None:
    run_dir = empty_run(tmp_path)
    ours, theirs = socket.socketpair()
    with ours, theirs:
        ours.sendall("from an orchestrator é\n".encode())
        ours.shutdown(socket.SHUT_WR)
        done = subprocess.run(_argv(run_dir), stdin=theirs.fileno(), capture_output=True,
                              timeout=WAIT)
    assert done.returncode == 0, done.stderr
    assert queued_says(run_dir) == ["from an orchestrator é\n"]


def test_C6_say_dash_from_a_directory_queues_nothing_and_names_it(tmp_path: Path) -> None:
    run_dir = empty_run(tmp_path)
    folder = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        done = subprocess.run(_argv(run_dir), stdin=folder, capture_output=True, timeout=WAIT)
    finally:
        os.close(folder)
    err = done.stderr.decode(errors="replace")
    assert done.returncode != 0, err
    assert "Traceback" not in err and "is a directory" in err, err
    assert queued_says(run_dir) == []
