"""docs/first-run.md, run as an operator would: every `sh` block of the page, in order, with
the REAL claude and codex, their providers replaced by loopback stand-ins of the Anthropic and
OpenAI APIs (tests/conformance/). The page's logins are the stand-ins' dummy credentials in the
environment, and the test adds one thing to the page's `autodev.yaml`: each claude account's
`ANTHROPIC_BASE_URL`, its own loopback server, so the work account can be limited while the
home account answers (A8: a limit belongs to the account's engine).

What it shows: a team of real CLIs works on a git project from that page alone (`project:`, the
codex call in the repository); two accounts of one provider fail over to each other (work
limited → home, A11; work's reset passes → back on work, A23); `autodev status`, `limits`,
`lane`, `say`, `limits clear` and `stop` do what the page says. Skipped with one line when the
real CLIs are missing (a failure where AUTODEV_REQUIRE_REALCLI is set, as in CI)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from conformance import anthropic_api as anthropic
from conformance import openai_api as openai
from conformance.anthropic_api import Unified, Window
from conformance.kit import claude_env, codex_env, installed_bin_dir
from helpers.daemons import wait_for

pytestmark = [pytest.mark.realcli, pytest.mark.slow]

PAGE = Path(__file__).resolve().parents[2] / "docs" / "first-run.md"
FENCE = re.compile(r"(<!--[^\n]*-->\n)?```sh\n(.*?)^```", re.MULTILINE | re.DOTALL)
#: How long the work account stays limited from its first refusal.
WORK_LIMIT = timedelta(seconds=15)
PHASE = 150.0


def page_blocks() -> list[tuple[str, str]]:
    """Every `sh` block of the page, in order, with its marker (empty when none)."""
    return [(m.group(1) or "", m.group(2)) for m in FENCE.finditer(PAGE.read_text("utf-8"))]


class _Work(anthropic.AnthropicApi):
    """The work subscription: a five-hour limit from the first request until `WORK_LIMIT`
    after it, then answers."""

    def __init__(self) -> None:
        super().__init__(anthropic.Reply(text="ana's review, on the work account"))
        self.lock = threading.Lock()
        self.until: datetime | None = None

    def respond(self, request: anthropic.Request) -> anthropic.Answer:
        if request.method == "POST" and request.path == "/v1/messages":
            with self.lock:
                now = datetime.now(UTC)
                if self.until is None:
                    self.until = now + WORK_LIMIT
                if now < self.until:
                    reset = int(self.until.timestamp()) + 1
                    self.reply = anthropic.Reply(
                        status=429, error_type="rate_limit_error",
                        error_message="This request would exceed your account's rate limit.",
                        unified=Unified(status="rejected", reset=reset, claim="five_hour",
                                        windows=(("5h", Window(status="rejected", reset=reset,
                                                               utilization=1.0)),)))
                else:
                    self.reply = anthropic.Reply(text="ana's review, on the work account")
                return super().respond(request)
        return super().respond(request)


def test_the_first_run_page_runs_a_team_of_real_clis_on_a_git_project(tmp_path: Path) -> None:
    bin_dir = installed_bin_dir()
    venv_bin = Path(sys.executable).parent
    with _Work() as work, anthropic.AnthropicApi(
            anthropic.Reply(text="ana's review, on the home account")) as home, \
            openai.OpenAiApi(openai.Reply(text="rui's change, from codex")) as codex:
        home_dir = tmp_path / "home"
        env = claude_env(home_dir, home.base_url, "oauth", None)
        env.update(codex_env(home_dir, codex.base_url + "/v1", None))
        env["PATH"] = os.pathsep.join([str(venv_bin), str(bin_dir), env["PATH"]])
        env["PYTHONPATH"] = str(PAGE.parents[1])
        blocks = page_blocks()
        run = [code for marker, code in blocks if "not run" not in marker or "first_run" in marker]
        workspace = tmp_path / "work"
        workspace.mkdir()

        def sh(code: str, cwd: Path, background: bool = False
               ) -> subprocess.CompletedProcess[str]:
            # A block that starts the daemon in the background leaves it holding the shell's
            # output: nothing is captured there, else the call waits for the daemon's end.
            out = subprocess.DEVNULL if background else subprocess.PIPE
            done = subprocess.run(["bash", "-euo", "pipefail", "-c", code], cwd=cwd, env=env,
                                  stdout=out, stderr=out, text=True, timeout=120)
            assert done.returncode == 0, f"{code}\n{done.stdout}\n{done.stderr}"
            return done

        project, setup, start, watch, steer = run
        sh(project, workspace)
        myapp = workspace / "myapp"
        sh(setup, myapp)
        settings = myapp / "team" / "autodev.yaml"
        text = settings.read_text("utf-8")
        for account, server in (("work", work), ("home", home)):
            text = text.replace(
                f'claude@{account}: {{CLAUDE_CONFIG_DIR: "${{HOME}}/.claude-{account}"}}',
                f'claude@{account}: {{CLAUDE_CONFIG_DIR: "${{HOME}}/.claude-{account}", '
                f'ANTHROPIC_BASE_URL: "{server.base_url}"}}')
        assert text.count("ANTHROPIC_BASE_URL") == 2, text
        settings.write_text(text, "utf-8")
        log = myapp / ".autodev" / "run" / "autodev.log"

        def lines() -> list[str]:
            if not log.exists():
                return []
            return [line.split(" ", 1)[1] for line in log.read_text("utf-8").splitlines()]

        sh(start, myapp, background=True)
        try:
            wait_for(lambda: "ana posted via claude@home" in lines(), "ana on the home account",
                     PHASE)
            limits = sh("autodev limits --run .autodev/run", myapp).stdout
            assert re.search(r"^claude@work +limited until .*; from the notice", limits, re.M), (
                limits)
            wait_for(lambda: "rui posted via codex" in lines(), "rui's post via codex", PHASE)
            wait_for(lambda: "ana posted via claude@work" in lines(), "ana back on work",
                     PHASE)
            shown = sh(watch, myapp).stdout
            assert "status: " in shown and "=== " in shown  # status, then ana's lane
            sh(steer, myapp)
            wait_for(lambda: any(line.startswith("daemon stopped") for line in lines()),
                     "the stop", PHASE)
        finally:
            subprocess.run([str(venv_bin / "autodev"), "stop", "--run", ".autodev/run"],
                           cwd=myapp, env=env, capture_output=True, timeout=60, check=False)
        said = lines()
        assert said.index("ana: claude@work limited → claude@home") < said.index(
            "ana posted via claude@home")
        assert "ana: limit lifted — back on its primary provider" in said
        assert f"; calls run in {myapp.resolve()}" in said[0]
        assert "claude@work limit cleared by hand — it had none" in said
        assert not (myapp / "autodev.err").read_text("utf-8").count("Traceback")
        # codex ran in the repository (its requests reached the stand-in: no trust refusal).
        assert any(r.path == "/v1/responses" for r in codex.seen())
