"""One retry loop (docs/limits.md, "Whose retries"): claude may retry a failed request
`CLI_OWN_RETRIES` times inside one of autodev's calls, so a handover (A15, A36) or the outage
schedule (A27) starts in seconds, not after claude's own ten retries over about three minutes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from autodev_core.engine import Engine
from autodev_core.participant import Participant
from autodev_core.scheduler.policy import CLI_OWN_RETRIES
from autodev_shell.calls import RETRY_ENV, call_environment, call_participant, templates_from_config

REPORTER = """#!{python}
import json, os, sys
sys.stdin.read()
value = os.environ.get("CLAUDE_CODE_MAX_RETRIES", "unset")
print(json.dumps({{"type": "result", "subtype": "success", "is_error": False,
                  "result": "retries=" + value}}))
"""


def test_claude_retries_are_set_for_each_call_unless_the_environment_sets_them() -> None:
    assert call_environment("claude", {"PATH": "/bin"}) == {
        "PATH": "/bin", "CLAUDE_CODE_MAX_RETRIES": str(CLI_OWN_RETRIES)}
    assert call_environment("claude", {"CLAUDE_CODE_MAX_RETRIES": "7"}) == {
        "CLAUDE_CODE_MAX_RETRIES": "7"}  # the operator's own choice wins


@pytest.mark.parametrize("provider", ["codex", "agy"])
def test_other_clis_environment_is_passed_as_it_is(provider: str) -> None:
    assert provider not in RETRY_ENV
    assert call_environment(provider, {"PATH": "/bin"}) == {"PATH": "/bin"}
    assert call_environment(provider, None) is None  # the daemon's own, inherited


def test_the_daemons_environment_is_the_base_when_none_is_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AUTODEV_TEST_MARK", "kept")
    monkeypatch.delenv("CLAUDE_CODE_MAX_RETRIES", raising=False)
    env = call_environment("claude", None)
    assert env is not None
    assert env["AUTODEV_TEST_MARK"] == "kept"
    assert env["CLAUDE_CODE_MAX_RETRIES"] == str(CLI_OWN_RETRIES)


@pytest.mark.parametrize(("given", "seen"), [
    ({}, str(CLI_OWN_RETRIES)),
    ({"CLAUDE_CODE_MAX_RETRIES": "0"}, "0"),
])
def test_a_claude_call_runs_with_the_retries_set(
    tmp_path: Path, given: dict[str, str], seen: str
) -> None:
    script = tmp_path / "claude"
    script.write_text(REPORTER.format(python=sys.executable), encoding="utf-8")
    script.chmod(0o755)
    templates = templates_from_config({"claude": {"binary": str(script)}})
    result = call_participant(
        Participant(id="ana", provider="claude"), Engine("claude"), "hello",
        templates=templates, env={"PATH": "/usr/bin:/bin", **given}, timeout=60,
    )
    assert result.post == f"retries={seen}", result.stdout
