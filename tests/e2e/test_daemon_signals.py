"""An operator's signals to the daemon during a call (SPEC C1, C2, B14): the terminal it was
started from closes (SIGHUP), Ctrl-C (SIGINT), SIGTERM. Each is a clean end: the call in flight
has its process group stopped, the checkpoint is brought level with the store, one line says
what ended the run, and the exit code is the signal's (128 + its number: 129, 130, 143). A
SIGHUP the daemon was started ignoring (`nohup autodev run`, a service manager) stays ignored."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.daemons import WAIT, Daemon, alive, killed_behind, operator_signals_default, wait_for


def _daemon(tmp_path: Path) -> Daemon:
    """One quick post, then a call that lasts (the one the signal lands in)."""
    d = Daemon(tmp_path, {"ana": "claude", "rui": "codex"}, {
        "claude": {"answers": [{"post": "first", "sleep": 0.1}],
                   "default": {"post": "slow", "sleep": 60}},
        "codex": {"answers": [], "default": {"post": "slow", "sleep": 60}},
    })
    d.env = dict(d.env, PYTHONFAULTHANDLER="1")  # a daemon that hangs shows where (`_ended`)
    return d


def _start(d: Daemon, errors: Path, *, ignore_hangup: bool = False) -> None:
    def ignore() -> None:
        operator_signals_default()
        signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as `nohup` leaves it across exec

    with errors.open("wb") as sink:
        d.proc = subprocess.Popen(
            [sys.executable, "-m", "autodev_shell.cli", "run", str(d.team), "--run",
             str(d.run_dir)],
            env=d.env, stdout=subprocess.DEVNULL, stderr=sink, start_new_session=True,
            preexec_fn=ignore if ignore_hangup else operator_signals_default)


def _ended(proc: subprocess.Popen[bytes]) -> int | None:
    """The daemon's exit code; if it did not end, its threads' stacks in the failure (it runs
    with faulthandler on: SIGABRT makes it print them to its stderr)."""
    try:
        return proc.wait(timeout=WAIT)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
        proc.wait(timeout=WAIT)
        return None


def _in_a_call(d: Daemon) -> int:
    """Wait for the second call (after the first post) and return its pid."""
    wait_for(lambda: len(d.calls()) >= 2, "a call in flight")
    pid = int(d.calls()[-1]["pid"])
    assert alive(pid)
    return pid


@pytest.mark.parametrize(("name", "code"), [("SIGHUP", 129), ("SIGINT", 130), ("SIGTERM", 143)])
def test_C1_B14_a_signal_during_a_call_ends_the_run_cleanly(
        tmp_path: Path, name: str, code: int) -> None:
    d = _daemon(tmp_path)
    errors = tmp_path / "daemon.err"
    _start(d, errors)
    try:
        call = _in_a_call(d)
        assert d.proc is not None
        d.proc.send_signal(getattr(signal, name))
        assert _ended(d.proc) == code, errors.read_text(errors="replace")
    finally:
        if d.proc is not None and d.proc.poll() is None:
            d.proc.kill()
            d.proc.wait()
    wait_for(lambda: not alive(call), "the call's process to be stopped")
    said = errors.read_text(encoding="utf-8", errors="replace")
    assert "Traceback" not in said, said
    if name != "SIGINT":
        assert f"ended by {name}" in said, said
    status = d.cli("status", "--json")
    assert status.returncode == 0, status.stderr
    facts = json.loads(status.stdout)
    assert facts["replicas"]["status"] == "in-sync", facts
    assert facts["replicas"]["checkpoint"]["revision"] == facts["persistence"]["revision"]


def test_C2_a_hangup_ignored_at_start_stays_ignored(tmp_path: Path) -> None:
    d = _daemon(tmp_path)
    errors = tmp_path / "daemon.err"
    _start(d, errors, ignore_hangup=True)
    try:
        call = _in_a_call(d)
        assert d.proc is not None
        d.proc.send_signal(signal.SIGHUP)
        d.control("say", "still there?")
        wait_for(lambda: any(who == "user" for _, who, _ in d.thread()), "the message posted")
        assert d.proc.poll() is None and alive(call)
        d.control("stop")
        assert d.wait_exit() == 0, errors.read_text(errors="replace")
    finally:
        if d.proc is not None and d.proc.poll() is None:
            d.proc.kill()
            d.proc.wait()




@pytest.mark.parametrize("signal_name", ["SIGINT", "SIGTERM"])
def test_B14_a_signal_while_the_daemon_starts_leaves_the_checkpoint_level(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, signal_name: str) -> None:
    """Ctrl-C or SIGTERM after the daemon opened its store, before its loop: the moment is
    pinned by raising what the signal raises from a step of the start (connecting to the
    shared registry, which every start passes)."""
    from autodev_shell.cli import commands
    from autodev_shell.clock import SystemClock
    from autodev_shell.team import load_team

    d = killed_behind(tmp_path)
    interrupt: BaseException = (KeyboardInterrupt() if signal_name == "SIGINT"
                                else commands.Terminated(signal_name))

    def signalled(*_args: object) -> None:
        raise interrupt

    monkeypatch.setattr(commands, "_open_sharing", signalled)
    with (tmp_path / "log.txt").open("w") as stream, pytest.raises(type(interrupt)):
        commands.start_run(load_team(d.team), d.run_dir, run_id="team", clock=SystemClock(),
                           env=d.env, stream=stream)
    status = d.cli("status", "--json")
    assert status.returncode == 0, status.stderr
    facts = json.loads(status.stdout)
    assert facts["replicas"]["status"] == "in-sync", facts["replicas"]
