"""`project:` in autodev.yaml (docs/participants.md, Where the CLIs work): every call runs in
the project folder; a folder that is not there, or not a git repository while codex needs one,
is one line at start and nothing is made. Real processes, stand-in CLIs (the codex stand-in
prints its working folder as real codex does: `workdir: …`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from helpers.daemons import Daemon, wait_for


def _with_project(d: Daemon, project: str) -> None:
    (d.team / "autodev.yaml").write_text(f"timezone: UTC\nproject: {project}\n", "utf-8")


def test_every_call_runs_in_the_project_folder(tmp_path: Path) -> None:
    project = tmp_path / "myapp"
    (project / ".git").mkdir(parents=True)  # a git repository, as codex needs
    d = Daemon(tmp_path, {"ana": "codex", "rui": "claude"}, {"default": {"post": "ok"}})
    _with_project(d, "../myapp")  # relative to the team folder
    d.start()
    try:
        wait_for(lambda: len(d.thread()) >= 2, "a post from each")
    finally:
        d.stop()
    lane = d.cli("lane", "ana").stdout
    assert f"workdir: {project.resolve()}\n" in lane
    rui = d.cli("lane", "rui").stdout
    assert f'"cwd":"{project.resolve()}"' in rui
    log = (d.run_dir / "autodev.log").read_text(encoding="utf-8")
    assert f"; calls run in {project.resolve()}\n" in log


def _refused(tmp_path: Path, project: str, members: dict[str, str]) -> str:
    d = Daemon(tmp_path, members, {"default": {"post": "ok"}})
    _with_project(d, project)
    done = subprocess.run(
        [sys.executable, "-m", "autodev_shell.cli", "run", str(d.team), "--run", str(d.run_dir)],
        capture_output=True, text=True, timeout=60, env=d.env,
    )
    assert done.returncode == 2
    assert not d.run_dir.exists()  # nothing made
    err = done.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_a_missing_project_folder_is_one_line_at_start(tmp_path: Path) -> None:
    err = _refused(tmp_path, "../nowhere", {"ana": "claude"})
    assert err == (f"autodev: {tmp_path / 'team' / 'autodev.yaml'}:2: project: "
                   f"{(tmp_path / 'nowhere').resolve()} is not a folder (it does not exist, or is "
                   "a file); name the folder the participants work in")


def test_a_project_outside_git_is_one_line_when_codex_is_on_the_team(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    err = _refused(tmp_path, "../plain", {"ana": "codex"})
    assert "project: " in err and "is not inside a git repository" in err
    assert "codex runs only inside one" in err and ":2: " in err
