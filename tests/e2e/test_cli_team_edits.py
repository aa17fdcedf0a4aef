"""Edits apply at the next turn start (docs/participants.md, Editing a running team): the daemon
reads a participant's file again when it changed, before the next turn is decided (the provider
is chosen when a turn starts); a bad edit is the loader's one line in the log, said once, and
the run goes on with the last good team; the run records its team folder, so `autodev panel
--run DIR` needs no `--team`. Real processes, stand-in CLIs."""

from __future__ import annotations

import os
from pathlib import Path

from helpers.daemons import Daemon, wait_for

from autodev_shell.team import recorded_team


def _edit(path: Path, text: str) -> None:
    """Write a file whole at once, as an editor saving it does (a half-written file is read as
    it is: a refusal, then the edit when it is whole)."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text, "utf-8")
    os.replace(tmp, path)


def _log(d: Daemon) -> list[str]:
    path = d.run_dir / "autodev.log"
    if not path.exists():
        return []
    return [line.split(" ", 1)[1] for line in path.read_text(encoding="utf-8").splitlines()]


def test_an_edit_applies_at_the_next_turn_and_a_bad_one_is_refused_once(tmp_path: Path) -> None:
    d = Daemon(tmp_path, {"ana": "claude"}, {"default": {"post": "ok"}})
    d.start()
    try:
        wait_for(lambda: len(d.calls()) >= 2, "ana's calls on claude")
        assert recorded_team(d.run_dir) == d.team.resolve()
        _edit(d.team / "ana.md", "---\nprovider: gemini\n---\nWork.\n")
        wait_for(lambda: any(line.startswith("team edit refused: ") for line in _log(d)),
                 "the refusal")
        calls = len(d.calls())
        wait_for(lambda: len(d.calls()) >= calls + 3, "the run going on")
        status = d.cli("status").stdout
        assert (f"team edit refused: {d.team / 'ana.md'}:2: unknown provider 'gemini'") in status
        assert "; the run goes on with the last good team" in status
        assert {c["cli"] for c in d.calls()} == {"claude"}  # the last good team
        _edit(d.team / "ana.md", "---\nprovider: codex\n---\nWork on.\n")
        wait_for(lambda: any(c["cli"] == "codex" for c in d.calls()), "ana's turn on codex")
        assert "team edit refused" not in d.cli("status").stdout  # taken: the line is gone
    finally:
        d.stop()
    lines = _log(d)
    refused = [line for line in lines if line.startswith("team edit refused: ")]
    assert refused == [
        f"team edit refused: {d.team / 'ana.md'}:2: unknown provider 'gemini' (known: claude, "
        "codex, agy, each with an optional @account); the run goes on with the last good team"]
    assert "team edit applied from this turn: ana" in lines
    assert "ana posted via codex" in lines
    after = d.calls()[[c["cli"] for c in d.calls()].index("codex"):]
    assert {c["cli"] for c in after} == {"codex"}
    assert any("Work on." in c["prompt"] for c in after)  # the new prompt too
