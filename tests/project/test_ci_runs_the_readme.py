"""CI runs the README's test command verbatim (issue 38 item 5): what a newcomer types, worker
count and all, is what `.ci/run` checks, so the README's command cannot drift from a green one."""

from __future__ import annotations

from pathlib import Path

from fresh_clone import readme_test_command

ROOT = Path(__file__).resolve().parents[2]


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    command = readme_test_command(ROOT / "README.md")
    assert "pytest" in command
    lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert command in lines, f".ci/run has no line that is the README's test command: {command}"
