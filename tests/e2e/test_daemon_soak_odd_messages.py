"""An operator's soak of the real daemon (`autodev run` on stand-in CLIs): at random moments —
during a call, a failure backoff, a pause — it says odd texts (NUL bytes, bytes that are not
UTF-8, white space around, other scripts, 200 KB through `say -`), pauses and resumes, reads
`autodev status` and `status --json`, stops and continues the daemon (SIGSTOP, SIGCONT) and
ends it every way an operator can: `autodev stop`, SIGTERM, Ctrl-C (SIGINT), a closed terminal
(SIGHUP) and kill -9; then starts it again. tests/e2e/test_daemon_soak.py holds calls that never
overlap under kill -9 with plain texts; this one holds what the operator sees:

- every acknowledged message (its command exited 0) is in the thread exactly once, as said
  (the text without the white space around it; a byte that is not UTF-8 as U+FFFD);
- `autodev status` and `status --json` never end in a traceback and always exit 0, except while
  the daemon is stopped holding the store's lock: then "busy" with exit 75, never "corrupt";
- the daemon never ends on its own while it is paused and resumed;
- a daemon ended cleanly (stop, SIGTERM, SIGINT, SIGHUP) leaves the checkpoint level with the
  store (B14) and exits with its documented code (0, 143, 130, 129); a kill -9 leaves it at most
  25 revisions behind (the cadence docs/store.md states);
- at the end, with `run.db` lost, `autodev restore` brings back the whole thread.

CI runs a short version (a few endings, well under a minute); HYPOTHESIS_PROFILE=thorough or
AUTODEV_OPERATOR_SOAK=N runs N endings (the `slow` test)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from helpers.daemons import WAIT, Daemon, alive, operator_signals_default, wait_for

from autodev_shell.store.run_store import RunStore

THOROUGH = os.environ.get("HYPOTHESIS_PROFILE") == "thorough"
LONG_ENDINGS = int(os.environ.get("AUTODEV_OPERATOR_SOAK", "30" if THOROUGH else "12"))

#: How each ending ends the daemon, and the exit code docs/cli.md gives it (None: kill -9).
ENDINGS: dict[str, int | None] = {"stop": 0, "SIGTERM": 143, "SIGINT": 130, "SIGHUP": 129,
                                  "kill -9": None}


KINDS = ("padded", "nul", "not-utf8", "scripts", "big", "lines", "plain")


def _odd_text(chance: random.Random, n: int) -> tuple[bytes, str, bool]:
    """(what is said, the post it must become, whether it goes through `say -`); the n-th
    message is of the n-th kind, round and round."""
    kind = KINDS[n % len(KINDS)]
    mark = f"m{n}"
    if kind == "plain":
        return f"{mark} plain".encode(), f"{mark} plain", chance.random() < 0.5
    if kind == "padded":
        return f"  \t{mark} padded \n\n".encode(), f"{mark} padded", chance.random() < 0.5
    if kind == "nul":
        return f"{mark} nul a\0b".encode(), f"{mark} nul a\0b", True
    if kind == "not-utf8":
        return f"{mark} bytes ".encode() + b"\xff x \xfe", f"{mark} bytes \ufffd x \ufffd", True
    if kind == "scripts":
        text = f"{mark} 🧪 עברית ‮rtl‬ 中文 e\u0301"
        return text.encode(), text, chance.random() < 0.5
    if kind == "lines":
        text = f"{mark} lines\r\none\n\ntwo"
        return text.encode(), text, True
    text = f"{mark} big " + "x" * 200_000
    return text.encode(), text, True


class Operator:
    """The daemon and what the operator did to it, acknowledged or not."""

    def __init__(self, d: Daemon, chance: random.Random) -> None:
        self.d = d
        self.chance = chance
        self.said: list[str] = []
        self.attempts = 0
        self.started_at = datetime.now(UTC)
        self.errors = d.root / "daemon.err"

    def start(self) -> None:
        d = self.d
        self.started_at = datetime.now(UTC)
        with self.errors.open("ab") as sink:  # a file: an unread pipe would block the daemon
            d.proc = subprocess.Popen(
                [sys.executable, "-m", "autodev_shell.cli", "run", str(d.team), "--run",
                 str(d.run_dir)],
                env=d.env, stdout=subprocess.DEVNULL, stderr=sink, start_new_session=True,
                preexec_fn=operator_signals_default)
        wait_for(lambda: (d.run_dir / "run.db").exists(), "the daemon's store")

    def cli(self, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [sys.executable, "-m", "autodev_shell.cli", *args, "--run", str(self.d.run_dir)],
            input=stdin, capture_output=True, timeout=120, env=self.d.env)

    def say(self) -> None:
        self.attempts += 1
        raw, expected, piped = _odd_text(self.chance, self.attempts)
        done = self.cli("say", "-", stdin=raw) if piped else self.cli("say", raw.decode())
        assert b"Traceback" not in done.stderr, done.stderr.decode(errors="replace")
        if done.returncode == 0:
            self.said.append(expected)

    def status(self) -> dict[str, Any]:
        text = self.cli("status")
        assert text.returncode == 0 and b"Traceback" not in text.stderr, text.stderr
        as_json = self.cli("status", "--json")
        assert as_json.returncode == 0 and b"Traceback" not in as_json.stderr, as_json.stderr
        facts: dict[str, Any] = json.loads(as_json.stdout)
        return facts

    def status_while_stopped(self) -> None:
        """Status of a stopped daemon: its facts, or, when it was stopped holding the store's
        lock (the WAL's recovery after a kill -9), "busy" with exit 75 once the busy
        timeout ran out; never "corrupt", never a restore (a fresh clone's soak once got
        both, tests/shell/test_store_busy.py)."""
        for extra in ((), ("--json",)):
            said = self.cli("status", *extra)
            assert b"Traceback" not in said.stderr, said.stderr
            if said.returncode == 75:
                assert said.stderr.startswith(b"autodev: The run store ") and (
                    b" is busy (" in said.stderr), said.stderr
                assert b"restore" not in said.stderr and said.stderr.count(b"\n") == 1
            else:
                assert said.returncode == 0, said.stderr

    def control(self, name: str) -> None:
        done = self.cli(name)
        assert done.returncode == 0, done.stderr.decode(errors="replace")

    def freeze(self) -> None:
        """SIGSTOP, a message and a status while the daemon is stopped, then SIGCONT."""
        assert self.d.proc is not None
        os.kill(self.d.proc.pid, signal.SIGSTOP)
        try:
            time.sleep(self.chance.uniform(0.0, 0.5))
            if self.chance.random() < 0.5:
                self.say()
            else:
                self.status_while_stopped()
        finally:
            os.kill(self.d.proc.pid, signal.SIGCONT)

    def end(self, how: str) -> None:
        d = self.d
        assert d.proc is not None
        assert alive(d.proc.pid), self.tail()  # it never ended on its own
        if how == "SIGINT":
            # Ctrl-C while Python still imports ends in its own traceback: press it once the
            # daemon is in its loop (its heartbeat), as an operator watching it would.
            wait_for(self.beating, "the new daemon's heartbeat")
        if how == "stop":
            self.control("stop")
        elif how == "kill -9":
            d.proc.send_signal(signal.SIGKILL)
        else:
            d.proc.send_signal(getattr(signal, how))
        try:
            code = d.proc.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            d.proc.kill()
            d.proc.wait()
            raise AssertionError(f"the daemon did not end after {how}: {self.tail()}") from None
        facts = self.status()
        replicas = facts["replicas"]
        revision = facts["persistence"]["revision"]
        if how == "kill -9":
            assert code == -signal.SIGKILL
            assert replicas["checkpoint"]["revision"] is None or (
                revision - replicas["checkpoint"]["revision"] <= 25), facts
        elif how != "stop" and code == -getattr(signal, how):
            pass  # the signal came before Python could take it (at its start): as a kill
        else:
            assert code == ENDINGS[how], f"{how}: exit {code}; {self.tail()}"
            assert replicas["status"] in ("in-sync", "empty"), (how, facts)
            assert replicas["checkpoint"]["revision"] in (revision, None), (how, facts)

    def beating(self) -> bool:
        """The daemon started last has written its heartbeat."""
        beat = self.status()["daemon"]["last_heartbeat"]
        return beat is not None and datetime.fromisoformat(beat) > self.started_at

    def tail(self) -> str:
        return self.errors.read_text(encoding="utf-8", errors="replace")[-3000:]


def _soak(tmp_path: Path, endings: int, seed: int) -> None:
    chance = random.Random(seed)
    codex = ([{"post": "patch", "sleep": 0.3}] * 3 + [{"kind": "crash"}]) * 200
    d = Daemon(tmp_path, {"ana": "claude", "rui": "codex"}, {
        "claude": {"answers": [], "default": {"post": "review", "sleep": 0.3}},
        "codex": {"answers": codex, "default": {"post": "patch", "sleep": 0.3}},
    })
    op = Operator(d, chance)
    op.start()
    order = list(ENDINGS) * (endings // len(ENDINGS) + 1)
    chance.shuffle(order)
    try:
        for how in order[:endings]:
            for _ in range(chance.randint(1, 3)):
                action = chance.choice(("say", "say", "pause", "resume", "status", "freeze"))
                if action == "say":
                    op.say()
                elif action == "status":
                    op.status()
                elif action == "freeze":
                    op.freeze()
                else:
                    op.control(action)
                time.sleep(chance.uniform(0.0, 0.4))
            op.end(how)
            op.start()
            time.sleep(chance.uniform(0.0, 0.3))
        for _ in KINDS:  # every kind of text at least once (paused or not)
            op.say()
        op.control("resume")
        wait_for(lambda: all(any(text == body for _, who, body in d.thread() if who == "user")
                             for text in op.said), "every acknowledged message in the thread")
        op.end("stop")
    finally:
        if d.proc is not None and d.proc.poll() is None:
            d.proc.kill()
            d.proc.wait()
    assert "Traceback" not in op.tail(), op.tail()
    with RunStore.open(d.run_dir / "run.db") as store:  # the integrity check runs as it opens
        thread = [(p.key, p.participant, p.text) for p in store.thread()]
    assert len({key for key, _, _ in thread}) == len(thread), "a post is in the thread twice"
    user = [text for _, who, text in thread if who == "user"]
    for text in op.said:
        assert user.count(text) == 1, f"{text[:60]!r} is in the thread {user.count(text)} times"
    assert sorted(user) == sorted(op.said)
    # run.db lost after a clean stop: the checkpoint holds the whole thread.
    for name in ("run.db", "run.db-wal", "run.db-shm"):
        (d.run_dir / name).unlink(missing_ok=True)
    restored = op.cli("restore")
    assert restored.returncode == 0, restored.stdout + restored.stderr
    with RunStore.open(d.run_dir / "run.db") as store:
        assert [(p.key, p.participant, p.text) for p in store.thread()] == thread


def test_C2_C6_B14_operator_soak_short(tmp_path: Path) -> None:
    _soak(tmp_path, endings=len(ENDINGS), seed=2026_12_02)


@pytest.mark.slow
def test_C2_C6_B14_operator_soak_long(tmp_path: Path) -> None:
    _soak(tmp_path, endings=LONG_ENDINGS, seed=2026_12_02 + LONG_ENDINGS)
