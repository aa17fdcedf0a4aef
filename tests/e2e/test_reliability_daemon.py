"""Kill -9 of the real daemon at random moments (SPEC C3, C4, B4-B9): after each restart every
post the log acknowledged is in the thread exactly once, the database passes
`PRAGMA integrity_check`, and the run continues.

The daemon is `autodev run` in its own process, on stand-in CLIs, on the real clock. A post is
acknowledged when its `<id> posted via <engine>` line reaches the log, which the loop writes only
after the revision holding the post was committed. CI runs 5 trials; HYPOTHESIS_PROFILE=thorough
runs 20.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autodev_shell.standins import install_standins, standin_env, write_script
from autodev_shell.store.folder import LOG_FILE, run_db
from autodev_shell.store.run_store import RunStore

TRIALS = 20 if os.environ.get("HYPOTHESIS_PROFILE") == "thorough" else 5


def _acknowledged(log: Path) -> int:
    if not log.exists():
        return 0
    return sum(1 for line in log.read_text(encoding="utf-8").splitlines() if " posted via " in line)


def _thread(run_dir: Path) -> list[tuple[str, str]]:
    store = RunStore.open(run_db(run_dir))  # integrity check on open
    try:
        assert store.integrity_check() in ((), ("ok",))
        return [(p.key, p.participant) for p in store.thread()]
    finally:
        store.close()


def _start(team: Path, run_dir: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "autodev_shell.cli", "run", str(team), "--run", str(run_dir)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def _wait_for(predicate: object, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


@pytest.mark.slow
def test_C3_kill_9_of_the_daemon_loses_no_acknowledged_post(tmp_path: Path) -> None:
    team = tmp_path / "team"
    team.mkdir()
    (team / "ana.md").write_text("---\nprovider: claude\n---\nReview.\n", encoding="utf-8")
    (team / "rui.md").write_text("---\nprovider: codex\n---\nImplement.\n", encoding="utf-8")
    bin_dir = install_standins(tmp_path / "bin")
    script = write_script(tmp_path / "script.json", {"default": {"post": "ok", "sleep": 0.02}})
    env = standin_env(bin_dir, script)
    run_dir = tmp_path / "run"
    log = run_dir / LOG_FILE
    chance = random.Random(20261201)
    unacknowledged = 0  # posts committed just as a kill came, before their log line
    for trial in range(TRIALS):
        acked_before = _acknowledged(log)
        daemon = _start(team, run_dir, env)
        try:
            # The run continues after each restart: it posts again before we kill it.
            assert _wait_for(lambda n=acked_before: _acknowledged(log) > n, 30), (
                f"trial {trial}: the daemon never posted"
            )
            time.sleep(chance.uniform(0.0, 0.6))
        finally:
            os.killpg(daemon.pid, signal.SIGKILL)
            daemon.wait(timeout=30)
        posts = _thread(run_dir)
        keys = [key for key, _ in posts]
        assert len(keys) == len(set(keys)), f"trial {trial}: a post is in the thread twice"
        acked = _acknowledged(log)
        # Every acknowledged post is there; at most the one committed as this kill came is not
        # acknowledged yet.
        extra = len(posts) - acked
        assert unacknowledged <= extra <= unacknowledged + 1, (
            f"trial {trial}: {acked} acknowledged, {len(posts)} in the thread"
        )
        unacknowledged = extra
