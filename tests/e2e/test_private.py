"""Private by default (docs/store.md, "Permissions"): the run folder is 0700 and every run file 0600
whatever the umask — run.db and its -wal/-shm, lanes, the log, the checkpoint, the shadow copy, the
lock, prompt files — and lane headers never show secrets passed in command templates."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.clock import T0
from helpers.daemons import write_team

from autodev_shell.calls.lanes import Lanes
from autodev_shell.durability.files import atomic_write_text
from autodev_shell.store.run_store import RunStore


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _cli(*args: str, env: dict[str, str], umask: int = 0o022) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "autodev_shell.cli", *args], env=env, umask=umask,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
    )


def _posts(db: Path) -> int:
    if not db.exists():
        return 0
    store = RunStore.open(db, check=False)
    try:
        return len(store.thread())
    finally:
        store.close()


def _run_until_posts(
    team: Path, run_dir: Path, env: dict[str, str], umask: int, count: int
) -> None:
    daemon = _cli("run", str(team), "--run", str(run_dir), env=env, umask=umask)
    deadline = time.monotonic() + 60
    try:
        while _posts(run_dir / "run.db") < count:
            assert daemon.poll() is None, daemon.stderr.read() if daemon.stderr else b""
            assert time.monotonic() < deadline, "the daemon never posted"
            time.sleep(0.1)
        stop = _cli("stop", "--run", str(run_dir), env=env)
        assert stop.wait(timeout=60) == 0
        assert daemon.wait(timeout=60) == 0
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait(timeout=30)


def _run_files(run_dir: Path) -> dict[Path, int]:
    return {path: _mode(path) for path in [run_dir, *run_dir.rglob("*")]}


@pytest.mark.parametrize("umask", [0o022, 0o000], ids=["umask-022", "umask-000"])
def test_private_by_default_a_run_folder_is_0700_and_its_files_0600_whatever_the_umask(
    tmp_path: Path, umask: int, standins: Callable[..., dict[str, str]]
) -> None:
    team = write_team(tmp_path, {"ana": ("claude", "Review."), "rui": ("codex", "Fix.")})
    env = standins({"default": {"post": "ok", "sleep": 0.05}})
    run_dir = tmp_path / "deep" / "run"  # both folders made by autodev
    _run_until_posts(team, run_dir, env, umask, 3)

    modes = _run_files(run_dir)
    names = {path.name for path in modes}
    # Everything a run writes is there to be checked (the shadow copy: below).
    assert {"run.db", "run.db.lock", "autodev.log", "lanes", "ana.log", "rui.log",
            "run.db.checkpoint.json"} <= names, sorted(names)
    for path, mode in modes.items():
        assert mode == (0o700 if path.is_dir() else 0o600), f"{path} is {oct(mode)}"
    assert _mode(tmp_path / "deep") == 0o700

    # A live store's -wal and -shm (the daemon above removed them when it closed).
    store = RunStore.open(run_dir / "run.db", check=False)
    try:
        store.enqueue_control("say", "hello", now=T0)
        for side in ("run.db-wal", "run.db-shm"):
            assert _mode(run_dir / side) == 0o600, side
    finally:
        store.close()


def test_private_by_default_an_old_run_folder_is_tightened_when_its_daemon_starts(
    tmp_path: Path, standins: Callable[..., dict[str, str]]
) -> None:
    team = write_team(tmp_path, {"ana": ("claude", "Review.")})
    env = standins({"default": {"post": "ok", "sleep": 0.05}})
    run_dir = tmp_path / "run"
    _run_until_posts(team, run_dir, env, 0o022, 1)
    mine = tmp_path / "run" / "notes.txt"  # not autodev's: left as it is
    mine.write_text("mine", encoding="utf-8")
    for path in [*run_dir.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)  # as an older autodev left them
    mine.chmod(0o644)
    _run_until_posts(team, run_dir, env, 0o022, 2)
    for path in run_dir.rglob("*"):
        if path != mine:
            assert _mode(path) == (0o700 if path.is_dir() else 0o600), path
    assert _mode(mine) == 0o644


def test_private_by_default_checkpoint_and_shadow_writes_are_0600_whatever_the_umask(
    tmp_path: Path,
) -> None:
    old = os.umask(0)
    try:
        for name in ("run.db.checkpoint.json", "run.db.shadow.json"):
            atomic_write_text(tmp_path / name, "{}")
            assert _mode(tmp_path / name) == 0o600
        lanes = Lanes(tmp_path / "lanes")
        lanes.append("ana", "x")
        assert (_mode(tmp_path / "lanes"), _mode(lanes.path("ana"))) == (0o700, 0o600)
    finally:
        os.umask(old)


# -- secrets in lane headers --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "secret", "shown"),
    [
        (["env", "OPENAI_API_KEY=sk-proj-abcdefghijklmnop", "codex", "exec"],
         "sk-proj-abcdefghijklmnop", "OPENAI_API_KEY=***"),
        (["claude", "-p", "--api-key", "hunter2-not-a-pattern"], "hunter2", "--api-key ***"),
        (["claude", "-p", "--auth-token=abc123xyz"], "abc123xyz", "--auth-token=***"),
        (["codex", "exec", "-c", 'model_providers.x.api_key="k-123456"'], "k-123456",
         "model_providers.x.api_key=***"),
        (["agy", "-p", "hi", "--header", "Authorization: Bearer abcdefghij123"], "abcdefghij123",
         "Bearer ***"),
        (["mycli", "--x", "ghp_abcdefghijklmnopqrstuvwxyz0123"], "ghp_abcdefghij", "--x ***"),
        (["env", "DB_PASSWORD=pw-plain", "agy", "-p", "{prompt}"], "pw-plain", "DB_PASSWORD=***"),
    ],
)
def test_private_by_default_lane_headers_redact_secrets_in_command_templates(
    tmp_path: Path, argv: list[str], secret: str, shown: str
) -> None:
    lanes = Lanes(tmp_path / "lanes")
    lanes.begin_call("ana", engine="codex", argv=argv, at=T0)
    header = lanes.read("ana")
    assert secret not in header
    assert shown in header


def test_private_by_default_redaction_leaves_ordinary_arguments_alone(tmp_path: Path) -> None:
    argv = ["codex", "exec", "--dangerously-bypass-approvals-and-sandbox",
            "--skip-git-repo-check", "-m", "gpt-5", "--api-key", "--verbose"]
    lanes = Lanes(tmp_path / "lanes")
    lanes.begin_call("ana", engine="codex", argv=argv, at=T0)
    header = lanes.read("ana")
    assert ("codex exec --dangerously-bypass-approvals-and-sandbox --skip-git-repo-check "
            "-m gpt-5 --api-key --verbose") in header
