"""Edit prompt from the panel (docs/panel.md, A14, C5): the loader's own validation with its one
line, a stale edit refused with 409 and the current text, an atomic write keeping `.bak`, and
nothing written on any refusal."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")

from helpers.panels import Panel, make_run, make_team

from autodev_core.errors import ConfigError
from autodev_shell.panel import prompts
from autodev_shell.team import load_team

GOOD = "---\nprovider: claude\nfailover: [codex]\n---\nYou are Ana. Review carefully.\n"
BAD = {
    "bad yaml": "---\nprovider: [claude\n---\nBody.\n",
    "unknown key": "---\nprovider: claude\ncolour: blue\n---\nBody.\n",
    "duplicate key": "---\nprovider: claude\nprovider: codex\n---\nBody.\n",
    "unknown provider": "---\nprovider: gemini\n---\nBody.\n",
    "no front matter": "Just a body.\n",
}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("prompt")
    run = make_run(root, posts=1)
    team = make_team(root)
    panel = Panel(run, "--team", str(team))
    panel.team = team  # type: ignore[attr-defined]
    yield panel
    assert panel.stop() == 0


def _put(panel: Panel, participant: str, text: str, etag: str | None) -> Any:
    headers = {"Content-Type": "application/json"}
    if etag is not None:
        headers["If-Match"] = etag
    return panel.request("PUT", f"/api/prompt/{participant}", body=json.dumps({"text": text}),
                         headers=headers)


def _loader_line(team: Path, name: str, text: str, scratch: Path) -> str:
    """What `load_team` says of the team with `text` in `name`, naming the real file."""
    copy = scratch / team.name
    shutil.copytree(team, copy)
    (copy / name).write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_team(copy)
    return str(caught.value).replace(str(copy), str(team))


def test_opening_a_prompt_gives_its_text_and_etag(served: Panel) -> None:
    answer = served.request("GET", "/api/prompt/rui")
    body = answer.json()
    data = (served.team / "rui.md").read_bytes()  # type: ignore[attr-defined]
    assert body["text"] == data.decode()
    assert body["etag"] == answer.headers["ETag"] == prompts.etag_of(data)
    assert body["path"] == str(served.team / "rui.md")  # type: ignore[attr-defined]


@pytest.mark.parametrize("case", sorted(BAD))
def test_an_invalid_file_is_refused_with_the_loaders_line_and_nothing_written(
        served: Panel, case: str, tmp_path: Path) -> None:
    team: Path = served.team  # type: ignore[attr-defined]
    before = {p.name: p.read_bytes() for p in team.iterdir()}
    etag = served.request("GET", "/api/prompt/ana").json()["etag"]
    answer = _put(served, "ana", BAD[case], etag)
    assert answer.status == 422, answer
    error = answer.json()["error"]
    assert error == _loader_line(team, "ana.md", BAD[case], tmp_path)
    assert "\n" not in error and str(team / "ana.md") in error
    assert {p.name: p.read_bytes() for p in team.iterdir()} == before  # no .bak, no temp


def test_a_valid_edit_is_written_atomically_keeping_a_bak(served: Panel) -> None:
    team: Path = served.team  # type: ignore[attr-defined]
    path = team / "ana.md"
    os.chmod(path, 0o640)
    old = path.read_bytes()
    etag = served.request("GET", "/api/prompt/ana").json()["etag"]
    answer = _put(served, "ana", GOOD, etag)
    assert answer.status == 200, answer
    body = answer.json()
    assert path.read_text() == GOOD
    assert (team / "ana.md.bak").read_bytes() == old
    assert stat.S_IMODE(path.stat().st_mode) == 0o640  # the file keeps its mode
    assert body["etag"] == prompts.etag_of(GOOD.encode())
    # No daemon serves this run: the edit applies when `autodev run` starts it again.
    assert "autodev run" in body["applies_from"] and "ana" in body["applies_from"]
    assert load_team(team).members[0].prompt.strip() == "You are Ana. Review carefully."
    assert not [p for p in team.iterdir() if p.name.startswith(".")]  # no temp left
    # the new ETag saves again; the old one is now stale
    assert _put(served, "ana", GOOD + "More.\n", body["etag"]).status == 200
    assert (team / "ana.md.bak").read_text() == GOOD


def test_a_stale_edit_gets_409_with_the_current_text(served: Panel) -> None:
    team: Path = served.team  # type: ignore[attr-defined]
    etag = served.request("GET", "/api/prompt/rui").json()["etag"]
    changed = "---\nprovider: codex\n---\nChanged in an editor meanwhile.\n"
    (team / "rui.md").write_text(changed, encoding="utf-8")
    answer = _put(served, "rui", "---\nprovider: codex\n---\nMine.\n", etag)
    assert answer.status == 409
    body = answer.json()
    assert body["text"] == changed and body["etag"] == prompts.etag_of(changed.encode())
    assert (team / "rui.md").read_text() == changed
    assert _put(served, "rui", "---\nprovider: codex\n---\nMine.\n", None).status == 428
    assert (team / "rui.md").read_text() == changed


@pytest.mark.parametrize("who", ["nobody", "..", "ana.md", "../team/ana", "%2e%2e%2fetc"])
def test_only_a_participant_of_the_team_can_be_opened_or_saved(served: Panel, who: str) -> None:
    team: Path = served.team  # type: ignore[attr-defined]
    before = {p.name: p.read_bytes() for p in team.iterdir()}
    assert served.request("GET", f"/api/prompt/{who}").status == 404
    assert _put(served, who, GOOD, '"x"').status == 404
    assert {p.name: p.read_bytes() for p in team.iterdir()} == before


def test_without_a_team_folder_prompt_editing_is_off_with_a_reason(tmp_path: Path) -> None:
    run = make_run(tmp_path, posts=1)
    panel = Panel(run)
    try:
        answer = panel.request("GET", "/api/prompt/ana")
        assert answer.status == 404 and "--team" in answer.json()["error"]
        page = panel.request("GET", "/").text
        assert "Prompt editing is off" in page and "--team" in page
    finally:
        assert panel.stop() == 0


def test_a_failed_write_leaves_the_file_whole(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    team = make_team(tmp_path)
    path = team / "ana.md"
    old = path.read_bytes()
    real = os.replace
    calls: list[str] = []

    def failing(src: Any, dst: Any) -> None:
        calls.append(str(dst))
        if str(dst) == str(path):
            raise OSError(28, "No space left on device")
        real(src, dst)

    monkeypatch.setattr(os, "replace", failing)
    with pytest.raises(OSError):
        prompts.save_prompt(team, "ana", GOOD, prompts.etag_of(old))
    assert path.read_bytes() == old
    assert calls[-1] == str(path)
    assert not [p for p in team.iterdir() if p.name.startswith(".")]  # the temp file went


def test_the_write_is_fsynced_before_the_rename(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    team = make_team(tmp_path)
    order: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: (order.append("fsync"), real_fsync(fd)))
    monkeypatch.setattr(os, "replace",
                        lambda a, b: (order.append(f"replace {Path(b).name}"), real_replace(a, b)))
    prompts.save_prompt(team, "ana", GOOD, prompts.etag_of((team / "ana.md").read_bytes()))
    assert order == ["fsync", "replace ana.md.bak", "fsync", "fsync", "replace ana.md", "fsync"]


def test_a_file_broken_by_hand_can_be_repaired_from_the_panel(tmp_path: Path) -> None:
    """The team loads when the panel starts; then rui.md is broken in an editor. Each file
    still opens; a save of another file is refused with the loader's line about the broken
    one; the broken file itself is repaired."""
    run = make_run(tmp_path, posts=1)
    team = make_team(tmp_path)
    panel = Panel(run, "--team", str(team))
    try:
        broken = "---\nprovider: [codex\n---\nBody.\n"
        (team / "rui.md").write_text(broken, encoding="utf-8")
        opened = panel.request("GET", "/api/prompt/rui").json()
        assert opened["text"] == broken
        ana = panel.request("GET", "/api/prompt/ana").json()
        refused = _put(panel, "ana", GOOD, ana["etag"])
        assert refused.status == 422 and "rui.md" in refused.json()["error"]
        assert panel.request("GET", "/api/prompt/nobody").status == 404
        fixed = "---\nprovider: codex\n---\nRepaired.\n"
        assert _put(panel, "rui", fixed, opened["etag"]).status == 200
        assert (team / "rui.md").read_text() == fixed
        assert (team / "rui.md.bak").read_text() == broken
    finally:
        assert panel.stop() == 0


def test_a_team_broken_before_the_panel_starts_is_said_and_can_be_repaired(
        tmp_path: Path) -> None:
    run = make_run(tmp_path, posts=1)
    team = make_team(tmp_path)
    broken = "---\nprovider: codex\nprovider: claude\n---\nBody.\n"
    (team / "rui.md").write_text(broken, encoding="utf-8")
    panel = Panel(run, "--team", str(team))
    try:
        opened = panel.request("GET", "/api/prompt/rui").json()
        assert _put(panel, "rui", "---\nprovider: codex\n---\nOk.\n", opened["etag"]).status == 200
        assert load_team(team).members[1].prompt.strip() == "Ok."
    finally:
        assert panel.stop() == 0
    err = panel.stderr()
    assert "the team does not load" in err and "duplicate key" in err and err.count("\n") == 1
    missing = subprocess.run([sys.executable, "-m", "autodev_shell.cli", "panel", "--run",
                              str(run), "--team", str(tmp_path / "nowhere")],
                             capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2 and "not a team directory" in missing.stderr
    assert missing.stdout == ""
