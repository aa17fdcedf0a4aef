"""An operator's command run with a standard stream closed (C6: one clear line, never a
traceback; C2: the daemon runs): a service manager or a script that starts `autodev run 2>&-`,
`autodev stop >&-` from a job with no output, `autodev say - 0<&-`. Python then has no
`sys.stdin`/`sys.stdout`/`sys.stderr` at all (None), and the descriptor is free for the next
file the process opens. What must hold: the command does what it was asked and exits as it
would with that stream on /dev/null; `say -` with nothing to read is the "needs a message"
sentence (exit 2) and queues nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers.daemons import Daemon, alive, empty_run, wait_for

from autodev_shell.store.run_store import RunStore

#: `sh -c` closes the named descriptor, then runs the command as itself (no shell left over).
CLOSE = {"stdin": "0<&-", "stdout": "1>&-", "stderr": "2>&-"}


def _cli(run_dir: Path, closed: str, *args: str, env: dict[str, str] | None = None,
         ) -> subprocess.CompletedProcess[bytes]:
    """`autodev ARGS --run RUN_DIR` with the stream `closed` closed; the other streams are
    captured (stdout and stderr) or empty (stdin)."""
    command = [sys.executable, "-m", "autodev_shell.cli", *args, "--run", str(run_dir)]
    script = f'exec "$@" {CLOSE[closed]}'
    return subprocess.run(["sh", "-c", script, "sh", *command], capture_output=True,
                          stdin=subprocess.DEVNULL if closed != "stdin" else None,
                          timeout=120, env=env)


def _queued(run_dir: Path) -> list[tuple[str, str]]:
    with RunStore.open(run_dir / "run.db", check=False) as store:
        return [(c.command, c.arg) for c in store.pending_controls()]


def test_C6_say_dash_with_stdin_closed_is_one_sentence_and_queues_nothing(
        tmp_path: Path) -> None:
    run_dir = empty_run(tmp_path)
    done = _cli(run_dir, "stdin", "say", "-")
    assert b"Traceback" not in done.stderr, done.stderr.decode(errors="replace")
    assert done.returncode == 2
    assert b"needs a message" in done.stderr
    assert _queued(run_dir) == []


@pytest.mark.parametrize("closed", ["stdout", "stderr"])
@pytest.mark.parametrize("command", [("pause",), ("stop",), ("say", "hello")])
def test_C6_a_control_with_an_output_closed_is_queued_and_exits_0(
        tmp_path: Path, closed: str, command: tuple[str, ...]) -> None:
    run_dir = empty_run(tmp_path)
    done = _cli(run_dir, closed, *command)
    assert b"Traceback" not in done.stderr + done.stdout
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    name, *words = command
    assert _queued(run_dir) == [(name, " ".join(words))]


@pytest.mark.parametrize("closed", ["stdin", "stdout", "stderr"])
def test_C6_status_with_a_stream_closed_exits_0(tmp_path: Path, closed: str) -> None:
    run_dir = empty_run(tmp_path)
    done = _cli(run_dir, closed, "status")
    assert b"Traceback" not in done.stderr + done.stdout
    assert done.returncode == 0, done.stderr.decode(errors="replace")


@pytest.mark.parametrize("closed", ["stdin", "stdout", "stderr"])
def test_C2_a_daemon_started_with_a_stream_closed_runs_and_stops_cleanly(
        tmp_path: Path, closed: str) -> None:
    d = Daemon(tmp_path, {"ana": "claude", "rui": "codex"},
               {"default": {"post": "ok", "sleep": 0.1}})
    command = [sys.executable, "-m", "autodev_shell.cli", "run", str(d.team), "--run",
               str(d.run_dir)]
    errors = tmp_path / "daemon.err"
    with errors.open("wb") as sink:
        streams = {"stdin": subprocess.DEVNULL, "stdout": sink, "stderr": sink}
        streams[closed] = None  # inherited, then closed by the shell before autodev starts
        d.proc = subprocess.Popen(
            ["sh", "-c", f'exec "$@" {CLOSE[closed]}', "sh", *command], env=d.env,
            start_new_session=True, **streams)  # type: ignore[call-overload]
    try:
        wait_for(lambda: len([p for p in d.thread() if p[1] != "user"]) >= 2
                 or not alive(d.proc.pid), "two posts")  # type: ignore[union-attr]
        assert alive(d.proc.pid), errors.read_text(errors="replace")[-3000:]
        d.control("stop")
        assert d.wait_exit() == 0, errors.read_text(errors="replace")[-3000:]
    finally:
        if d.proc.poll() is None:
            d.proc.kill()
            d.proc.wait()
    assert "Traceback" not in errors.read_text(errors="replace")
    assert d.status() == "stopped"
    # The log file still has every line (the stream that was closed had nowhere to go).
    assert " posted via " in (d.run_dir / "autodev.log").read_text(encoding="utf-8")
