"""Driving the real daemon (`autodev run` in its own process) on stand-in CLIs, for the tests of
its controls, messages and kills (C2-C6). Nothing here decides what a test expects."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from autodev_core.scheduler import SchedulerState
from autodev_core.serialization import from_json
from autodev_shell.standins import install_standins, standin_env, write_script
from autodev_shell.store.folder import run_db
from autodev_shell.store.run_store import RunStore
from autodev_shell.store.runlock import lock_path, path_lock

#: Generous: the machine is shared and loaded; tests poll, never assert on timings.
WAIT = 60.0


#: The stand-ins' script where claude's first call takes 600 s (the daemon is caught in it)
#: and every other call posts "ok" at once.
SLOW_FIRST_CLAUDE: dict[str, Any] = {
    "claude": [{"post": "slow", "sleep": 600}], "default": {"post": "ok"}}


def make_team(root: Path, members: dict[str, str]) -> Path:
    """A team folder: one participant file per (id, provider)."""
    return write_team(root, {pid: (provider, "Work.") for pid, provider in members.items()})


def write_team(root: Path, members: dict[str, tuple[str, str]]) -> Path:
    """The team folder `root/team`: a participant file `<id>.md` per member, its provider and
    its prompt (C1)."""
    team = root / "team"
    team.mkdir()
    for pid, (provider, prompt) in members.items():
        (team / f"{pid}.md").write_text(f"---\nprovider: {provider}\n---\n{prompt}\n", "utf-8")
    return team


#: The signals an operator sends a daemon. A test suite started under `nohup`, or as a
#: background job of a shell without job control, hands its children SIGHUP or SIGINT ignored,
#: and an ignored signal stays ignored across exec: a daemon started from it would never see
#: the signal a test sends. Each daemon a test starts gets them at their defaults, as from a
#: terminal; a test of `nohup` ignores SIGHUP on purpose after this.
OPERATOR_SIGNALS = (signal.SIGHUP, signal.SIGINT, signal.SIGTERM)


def operator_signals_default() -> None:
    """A `preexec_fn`: the operator's signals at their defaults in the child (see above)."""
    for signum in OPERATOR_SIGNALS:
        signal.signal(signum, signal.SIG_DFL)


class RunCommands:
    """The short commands (`autodev status`, `stop`, `say`, …) on a run folder, as an operator
    types them: `cli` runs one and returns what it did, `control` one that must succeed. The class
    using it has `run_dir` and the stand-ins' `env`."""

    run_dir: Path
    env: dict[str, str]

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "autodev_shell.cli", *args, "--run", str(self.run_dir)],
            capture_output=True, text=True, timeout=120, env=self.env,
        )

    def control(self, *args: str) -> None:
        done = self.cli(*args)
        assert done.returncode == 0, done.stderr


class Daemon(RunCommands):
    """One run folder, its stand-ins and the `autodev run` processes started on it."""

    def __init__(self, root: Path, members: dict[str, str], script: dict[str, Any]) -> None:
        self.root = root
        self.team = make_team(root, members)
        self.run_dir = root / "run"
        self.calls_log = root / "calls.jsonl"
        bin_dir = install_standins(root / "bin")
        self.script = write_script(root / "script.json", script)
        self.env = standin_env(bin_dir, self.script, log=self.calls_log)
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> subprocess.Popen[bytes]:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "autodev_shell.cli", "run", str(self.team), "--run",
             str(self.run_dir)],
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
            preexec_fn=operator_signals_default,
        )
        return self.proc

    def kill9(self) -> None:
        """kill -9 of the daemon alone (its CLI, in its own session, is not signalled), and the
        run free again: the kernel drops the run's locks when their last descriptor closes, and
        a CLI the daemon was forking at that instant holds a copy until it exits a moment later
        (`die_with_parent`), so a daemon started at once could be refused (C4, a fresh clone's
        run saw it once on a loaded machine)."""
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=WAIT)
        wait_for(self._run_free, "the run's locks free after kill -9")

    def _run_free(self) -> bool:
        """Neither of the run's locks is held, asked as `daemon_holding` asks (a shared,
        non-blocking `flock` let go at once), so the lock files keep the dead daemon's pid."""
        db = self.run_dir / "run.db"
        for path in (lock_path(db), path_lock(db)):
            try:
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            except FileNotFoundError:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            finally:
                os.close(fd)
        return True

    def wait_exit(self) -> int:
        assert self.proc is not None
        return self.proc.wait(timeout=WAIT)

    def stop(self) -> None:
        """Ask the daemon to stop and wait for it (kill it if it does not)."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.control("stop")
        try:
            self.proc.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    # --- what the run shows ------------------------------------------------------------

    def calls(self) -> list[dict[str, Any]]:
        """The stand-ins' calls, in start order (one JSON line each, written as they start)."""
        if not self.calls_log.exists():
            return []
        lines = self.calls_log.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    def state(self) -> SchedulerState | None:
        db = self.run_dir / "run.db"
        if not db.exists():
            return None
        store = RunStore.open(db, check=False)
        try:
            text = store.snapshot().scheduler_state_json
        finally:
            store.close()
        if not text or text == "{}":
            return None
        state: SchedulerState = from_json(text, SchedulerState)
        return state

    def status(self) -> str | None:
        state = self.state()
        return None if state is None else state.status

    def thread(self) -> list[tuple[str, str, str]]:
        """(key, participant, text) of every post; empty before the store exists."""
        if not (self.run_dir / "run.db").exists():
            return []
        store = RunStore.open(self.run_dir / "run.db", check=False)
        try:
            return [(p.key, p.participant, p.text) for p in store.thread()]
        finally:
            store.close()


def wait_for(predicate: Callable[[], object], what: str, seconds: float = WAIT) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def posts_of(run_dir: Path) -> list[tuple[str, str]]:
    """(participant, text) of every post of the run in `run_dir`; empty before its store exists."""
    if not run_db(run_dir).exists():
        return []
    store = RunStore.open(run_db(run_dir), check=False)
    try:
        return [(p.participant, p.text) for p in store.thread()]
    finally:
        store.close()


def queued_says(run_dir: Path) -> list[str]:
    """The messages `autodev say` queued in the run's store, not yet taken (C6)."""
    store = RunStore.open(run_dir / "run.db", check=False)
    try:
        return [c.arg for c in store.pending_controls() if c.command == "say"]
    finally:
        store.close()


class Stoppable(Protocol):
    def finish(self) -> None: ...  # waits for the daemon to stop by itself, else fails
    def kill(self) -> None: ...  # kills it if it still runs


@contextmanager
def all_finish(*daemons: Stoppable) -> Iterator[None]:
    """Each of `daemons` must stop by itself once the block ends (`finish`, in order); whatever
    happens, none is left running (`kill`, on the way out)."""
    try:
        yield
        for daemon in daemons:
            daemon.finish()
    finally:
        for daemon in daemons:
            daemon.kill()


def alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return fields[0] != "Z"


def empty_run(tmp_path: Path) -> Path:
    """A run folder whose store holds no revision yet (run id `t`): what `autodev say` and the
    other short commands find before a daemon's first turn."""
    from datetime import UTC, datetime

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    RunStore.open(run_dir / "run.db", create=True, run_id="t",
                  now=datetime(2026, 12, 1, tzinfo=UTC)).close()
    return run_dir


def killed_behind(tmp_path: Path) -> Daemon:
    """A run whose daemon was killed with -9 while its checkpoint was behind the store (B14)."""
    d = Daemon(tmp_path, {"ana": "claude", "rui": "codex"},
               {"default": {"post": "ok", "sleep": 0.1}})
    d.start()
    try:
        def behind() -> bool:
            done = d.cli("status", "--json")
            return done.returncode == 0 and bool(json.loads(done.stdout)["replicas"]["behind"])
        wait_for(behind, "the checkpoint behind the store")
    finally:
        d.kill9()
    return d
