"""Running one conformance case: the real CLI, through autodev's own shell, against a loopback
stand-in of its provider's API (SPEC A2-A6, A26-A28, C1).

- `installed_bin_dir()`: the npm bin folder holding the pinned `claude` and `codex`
  (installed there if missing), or a pytest skip saying how to get them;
- `run_case(case, bin_dir=…, tmp=…)`: start the stand-in, build a fresh environment pointing the
  CLI at it, run the CLI with `call_participant`, and return a `Transcript`;
- `reading_of(transcript)`: what autodev read (`Reading`); `check(case, transcript)`: where
  that differs from `case.expect`, as a list of sentences (empty: conformant);
- `Transcript`, `Reading` and the comparison itself live in `transcripts.py` (core only, so
  the recorded checks need no shell); they are offered here too.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from autodev_core.engine import Engine
from autodev_core.participant import Participant
from autodev_shell.calls import call_participant, templates_from_config

from . import versions
from .anthropic_api import AnthropicApi
from .anthropic_api import Reply as AnthropicReply
from .cases import Case
from .openai_api import OpenAiApi
from .openai_api import Reply as OpenAiReply
from .transcripts import (
    PROBE_WINDOW,
    SERVER_RESET_TOLERANCE,
    Reading,
    Transcript,
    classify_transcript,
    mismatches,
    reading_from,
    version_number,
)

DEFAULT_TZ = "America/New_York"
#: The longest a case may run: codex's own retries of a 500 take about 25 s.
CASE_TIMEOUT = 120.0
NPM_INSTALL_TIMEOUT = 300
#: Dummy credentials: the CLIs send them to the loopback stand-in only.
CLAUDE_OAUTH_TOKEN = "sk-ant-oat01-conformance-kit-dummy-token-000000000000000000000000"
CLAUDE_API_KEY = "sk-ant-api03-conformance-kit-dummy-key-0000000000000000000000000000"
CODEX_KEY_ENV = "AUTODEV_TEST_CODEX_KEY"


# -- the CLIs -------------------------------------------------------------------------------------


def npm_prefix() -> Path:
    """Where the pinned CLIs are installed: `$AUTODEV_TEST_NPM_DIR` or
    ~/.cache/autodev-test/npm."""
    configured = os.environ.get("AUTODEV_TEST_NPM_DIR")
    return Path(configured) if configured else Path.home() / ".cache" / "autodev-test" / "npm"


def _installed_version(prefix: Path, package: str) -> str | None:
    manifest = prefix / "node_modules" / package / "package.json"
    try:
        return str(json.loads(manifest.read_text(encoding="utf-8"))["version"])
    except (OSError, ValueError, KeyError):
        return None


#: Set (by .ci/run) where the real CLIs must run: a missing CLI then fails, never skips.
REQUIRE_ENV = "AUTODEV_REQUIRE_REALCLI"


def _skip(why: str) -> None:
    import pytest

    line = f"{why}; to get the CLIs: {versions.INSTALL_HINT}"
    if os.environ.get(REQUIRE_ENV):
        pytest.fail(f"{REQUIRE_ENV} is set and the real CLIs are missing: {line}")
    pytest.skip(line)


class CliInstallError(Exception):
    """The CLIs could not be installed: the message says why, in one line."""


def installed_bin_dir() -> Path:
    """The npm bin folder with the pinned `claude` and `codex`, installing them there when npm
    can; else a pytest skip with one line saying how to get them (a failure where
    `AUTODEV_REQUIRE_REALCLI` is set)."""
    try:
        return install_clis(npm_prefix(), dict((versions.CLAUDE, versions.CODEX)))
    except CliInstallError as exc:
        _skip(str(exc))
        raise  # (not reached: a skip or a failure raises)


def install_clis(prefix: Path, wanted: Mapping[str, str]) -> Path:
    """The bin folder of `prefix` with each npm package of `wanted` at its version, installed
    there when missing. Test workers share the folder: one installs at a time (an exclusive
    lock on a file beside it)."""
    prefix.mkdir(parents=True, exist_ok=True)
    with open(prefix / ".install.lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if any(_installed_version(prefix, p) != v for p, v in wanted.items()):
            npm = shutil.which("npm")
            if npm is None or shutil.which("node") is None:
                raise CliInstallError("npm/node not found")
            try:
                done = subprocess.run(
                    [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund",
                     "--loglevel=error", *(f"{p}@{v}" for p, v in wanted.items())],
                    capture_output=True, text=True, timeout=NPM_INSTALL_TIMEOUT,
                    stdin=subprocess.DEVNULL, check=False)
            except subprocess.TimeoutExpired:
                raise CliInstallError(
                    f"npm install took longer than {NPM_INSTALL_TIMEOUT} s") from None
            if done.returncode != 0:
                last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
                raise CliInstallError(f"npm install failed (exit {done.returncode}): {last}")
    bin_dir = prefix / "node_modules" / ".bin"
    for name in ("claude", "codex"):
        if not (bin_dir / name).exists():
            raise CliInstallError(f"no {name} executable in {bin_dir}")
    return bin_dir


_VERSIONS: dict[Path, str] = {}


def cli_version(binary: Path, env: Mapping[str, str]) -> str:
    """The binary's `--version` output (cached per binary)."""
    if binary not in _VERSIONS:
        done = subprocess.run([str(binary), "--version"], capture_output=True, text=True,
                              timeout=60, stdin=subprocess.DEVNULL, env=dict(env), check=False)
        _VERSIONS[binary] = done.stdout.strip() or done.stderr.strip()
    return _VERSIONS[binary]


# -- environments ---------------------------------------------------------------------------------


def clean_env(home: Path, tz: str | None) -> dict[str, str]:
    """A fresh environment: no inherited keys or tokens, a temporary HOME, the zone `tz` (None:
    the machine's)."""
    node = shutil.which("node")
    dirs = [os.path.dirname(node)] if node else []
    home.mkdir(parents=True, exist_ok=True)
    env = {"PATH": os.pathsep.join([*dirs, "/usr/local/bin", "/usr/bin", "/bin"]),
           "HOME": str(home), "LANG": "C.UTF-8", "TMPDIR": str(home)}
    if tz is not None:
        env["TZ"] = tz
    return env


def claude_env(home: Path, base_url: str, credential: str, tz: str | None) -> dict[str, str]:
    """claude pointed at `base_url`, nonessential traffic off, one dummy credential: an OAuth
    token (the subscription path, A2's unified headers), an API key, or `none` (not logged
    in, A32)."""
    env = clean_env(home, tz)
    env.update({
        "ANTHROPIC_BASE_URL": base_url,
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
    })
    if credential == "oauth":
        env["CLAUDE_CODE_OAUTH_TOKEN"] = CLAUDE_OAUTH_TOKEN
    elif credential == "apikey":
        env["ANTHROPIC_API_KEY"] = CLAUDE_API_KEY
    elif credential != "none":
        raise ValueError(f"claude has no credential {credential!r} (oauth, apikey, none)")
    return env


def codex_env(home: Path, base_url: str, tz: str | None) -> dict[str, str]:
    """codex with a temporary CODEX_HOME whose only provider is the stand-in at `base_url`
    (`…/v1`, Responses wire API), with update check, analytics, feedback, apps and plugins off."""
    env = clean_env(home, tz)
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(
        f"""model_provider = "conformance"
model = "gpt-5"
check_for_update_on_startup = false

[analytics]
enabled = false

[feedback]
enabled = false

[features]
apps = false
plugins = false
remote_plugin = false
plugin_sharing = false

[model_providers.conformance]
name = "autodev conformance kit: a loopback stand-in"
base_url = "{base_url}"
env_key = "{CODEX_KEY_ENV}"
wire_api = "responses"
""",
        encoding="utf-8",
    )
    env.update({"CODEX_HOME": str(codex_home), CODEX_KEY_ENV: "sk-conformance-kit-dummy-key"})
    return env


def _templates(case: Case, binary: Path) -> Any:
    if case.cli == "claude":
        return templates_from_config({"claude": {"binary": str(binary)}})
    head = [str(binary), "exec", "--skip-git-repo-check"]
    return templates_from_config(
        {"codex": [*head, *(["--json"] if case.json else []), "{model_args}"]})


def run_case(
    case: Case,
    *,
    bin_dir: Path,
    tmp: Path,
    tz: str = DEFAULT_TZ,
    timeout: float = CASE_TIMEOUT,
) -> Transcript:
    """Run `case`'s CLI through autodev's shell (`call_participant`, autodev's own retries
    setting for claude) against its stand-in, and return the transcript."""
    binary = bin_dir / case.cli
    home = tmp / "home"
    started = datetime.now(UTC)
    reply = case.reply(started)
    api: AnthropicApi | OpenAiApi
    if case.cli == "claude":
        assert isinstance(reply, AnthropicReply)
        api = AnthropicApi(reply)
    else:
        assert isinstance(reply, OpenAiReply)
        api = OpenAiApi(reply)
    with api:
        if case.cli == "claude":
            env = claude_env(home, api.base_url, case.credential, tz)
        else:
            env = codex_env(home, f"{api.base_url}/v1", tz)
        version = cli_version(binary, env)
        clock = time.monotonic()
        result = call_participant(
            Participant(id="ana", provider=case.cli), Engine(case.cli), "hello",
            templates=_templates(case, binary), env=env, cwd=tmp, timeout=timeout,
            local_tz=ZoneInfo(tz),
        )
        elapsed = time.monotonic() - clock
        seen = api.seen()
    return Transcript(
        case=case.name, cli=case.cli, json=case.json, version=version, tz=tz,
        true_reset=reply.true_reset, started=result.started_at, now=result.ended_at,
        stdout=result.stdout, stderr=result.stderr, exit_code=result.exit_code,
        killed=result.killed, elapsed=elapsed, requests=len(seen),
        request_lines=tuple(
            f"{r.method} {r.path}{'?' + r.query if r.query else ''}" for r in seen),
        result=result,
    )


# -- readings -------------------------------------------------------------------------------------


def reading_of(transcript: Transcript) -> Reading:
    """What autodev read: the `CallResult`'s, or for a recorded transcript, read again."""
    if transcript.result is not None:
        return reading_from(transcript.result.classification, transcript.result.post)
    return classify_transcript(transcript)


def check(case: Case, transcript: Transcript) -> list[str]:
    """Where autodev's reading of `transcript` differs from `case.expect`."""
    return mismatches(case, transcript, reading_of(transcript))


__all__ = [
    "CASE_TIMEOUT",
    "DEFAULT_TZ",
    "PROBE_WINDOW",
    "SERVER_RESET_TOLERANCE",
    "CliInstallError",
    "Reading",
    "Transcript",
    "check",
    "classify_transcript",
    "claude_env",
    "clean_env",
    "cli_version",
    "codex_env",
    "install_clis",
    "installed_bin_dir",
    "mismatches",
    "npm_prefix",
    "reading_from",
    "reading_of",
    "run_case",
    "version_number",
]
