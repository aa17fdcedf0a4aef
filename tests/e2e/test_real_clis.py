"""The adapters against the REAL claude and codex CLIs, installed from npm (SPEC A32, A37, C1).

Each CLI is pointed, through its own configuration, at an unused loopback port, with a
temporary HOME, so it never reaches a provider's servers and never reads real credentials:

- claude: `ANTHROPIC_BASE_URL=http://127.0.0.1:<port>`, no key, nonessential traffic off;
  real claude 2.1 answers `Not logged in · Please run /login` (exit 1) — the adapters must read
  it as "login" (A32).
- codex: a temporary `CODEX_HOME` whose config.toml names a provider at the dead port (update
  check, analytics, feedback, apps and plugins off, so nothing else is looked up); real codex
  0.171 then prints `ERROR: Reconnecting... waiting for network` forever — the adapters must
  stop it early and report a network outage (A37), well before the call's timeout.

Skipped, with one line saying how to get them, when npm is missing or the install fails (a
failure where `AUTODEV_REQUIRE_REALCLI` is set, as .ci/run sets it). The install, at the versions
of tests/conformance/versions.py, is cached in `~/.cache/autodev-test/npm` (or
`$AUTODEV_TEST_NPM_DIR`) and reused.
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conformance import versions
from conformance.kit import claude_env, codex_env, installed_bin_dir

from autodev_core.detection import classify_output
from autodev_core.engine import Engine
from autodev_core.participant import Participant
from autodev_shell.calls import (
    CommandTemplate,
    build_argv,
    call_participant,
    run_call,
    templates_from_config,
)

FIXTURES = Path(__file__).parents[1] / "fixtures" / "realcli"
#: The versions these tests run against: pinned in one place, tests/conformance/versions.py.
CLAUDE_VERSION = versions.CLAUDE[1]
CODEX_VERSION = versions.CODEX[1]
CALL_TIMEOUT = 120.0  # generous: the early stop must come well before it (A37)


# -- recorded real output (always run) -------------------------------------------------------------


NOW = datetime(2026, 12, 1, 2, 30, tzinfo=UTC)


def test_A37_recorded_codex_0_171_dead_loopback_output_is_a_network_outage() -> None:
    stderr = (FIXTURES / "codex-dead-loopback.stderr").read_text(encoding="utf-8")
    assert "Reconnecting... waiting for network" in stderr
    seen = classify_output("codex", stderr=stderr, exit_code=None, now=NOW, local_tz=UTC)
    assert seen.kind == "network"


def test_A32_recorded_claude_2_1_not_logged_in_is_login() -> None:
    stdout = (FIXTURES / "claude-not-logged-in.stdout").read_text(encoding="utf-8")
    seen = classify_output("claude", stdout=stdout, exit_code=1, now=NOW, local_tz=UTC)
    assert seen.kind == "login"


def test_A26_recorded_claude_2_1_connection_reset_is_a_network_error() -> None:
    """An API that accepts each connection and closes it unanswered (recorded by hand: ten
    retries over three minutes, then `API Error: Unable to connect to API (ECONNRESET)`)."""
    stdout = (FIXTURES / "claude-connection-reset.stdout").read_text(encoding="utf-8")
    assert '"subtype":"api_retry"' in stdout and "ECONNRESET" in stdout
    seen = classify_output("claude", stdout=stdout, exit_code=1, now=NOW, local_tz=UTC)
    assert seen.kind == "network"
    assert "ECONNRESET" in seen.text


def test_A26_claude_2_1_request_timed_out_is_a_network_error() -> None:
    """claude with `API_TIMEOUT_MS` set, on an API that accepts and never answers, gives up by
    itself after ten retries with the result `Request timed out`, exit 1 (seen by hand with
    2.1.197; this transcript is the recorded ECONNRESET one with that result in its place). A
    request that timed out is a network error (A26); it was read as a failed call, since the
    result's line did not start with an error word."""
    stdout = (FIXTURES / "claude-request-timed-out.stdout").read_text(encoding="utf-8")
    assert '"result":"Request timed out"' in stdout
    seen = classify_output("claude", stdout=stdout, exit_code=1, now=NOW, local_tz=UTC)
    assert seen.kind == "network"
    assert seen.text == "Request timed out"


def test_A26_recorded_claude_2_1_connection_refused_is_a_network_error() -> None:
    stdout = (FIXTURES / "claude-connection-refused.stdout").read_text(encoding="utf-8")
    assert '"subtype":"api_retry"' in stdout  # ten retries over three minutes, then the result
    seen = classify_output("claude", stdout=stdout, exit_code=1, now=NOW, local_tz=UTC)
    assert seen.kind == "network"


# -- the real CLIs ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def npm_bin() -> Path:
    """The pinned CLIs (tests/conformance/versions.py), installed by the conformance kit."""
    return installed_bin_dir()


def _dead_port() -> int:
    """A loopback port nobody listens on: connections to it are refused."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _version(binary: Path) -> str:
    done = subprocess.run([str(binary), "--version"], capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL, check=False)
    return done.stdout.strip()


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _claude_env(home: Path, base_url: str) -> dict[str, str]:
    """claude at `base_url` with no credential (the conformance kit's environment)."""
    return claude_env(home, base_url, "none", None)


def _codex_env(home: Path, base_url: str) -> dict[str, str]:
    """A temporary CODEX_HOME whose only provider is at `base_url`, nothing else looked up."""
    return codex_env(home, base_url, None)


@pytest.mark.realcli
def test_A32_real_claude_not_logged_in_is_login(npm_bin: Path, tmp_path: Path) -> None:
    binary = npm_bin / "claude"
    assert CLAUDE_VERSION in _version(binary)
    env = _claude_env(tmp_path / "home", f"http://127.0.0.1:{_dead_port()}")
    templates = templates_from_config({"claude": {"binary": str(binary)}})
    result = run_call(
        build_argv("claude", "Say hello.", None, templates),
        provider="claude", env=env, cwd=tmp_path, timeout=CALL_TIMEOUT, input="Say hello.",
    )
    assert result.classification.kind == "login", result.stdout[-2000:]
    assert "Not logged in" in result.classification.text
    assert result.exit_code == 1
    assert result.post is None
    assert not result.killed


@pytest.mark.realcli
def test_A37_real_codex_without_network_is_stopped_early_as_an_outage(
    npm_bin: Path, tmp_path: Path
) -> None:
    binary = npm_bin / "codex"
    assert CODEX_VERSION in _version(binary)
    env = _codex_env(tmp_path / "home", f"http://127.0.0.1:{_dead_port()}/v1")
    # The command line is configurable (C1): outside a git repository codex needs this flag.
    templates = templates_from_config(
        {"codex": [str(binary), "exec", "--skip-git-repo-check", "{model_args}"]}
    )
    started = time.monotonic()
    result = run_call(
        build_argv("codex", "Say hello.", None, templates),
        provider="codex", env=env, cwd=tmp_path, timeout=CALL_TIMEOUT, input="Say hello.",
    )
    elapsed = time.monotonic() - started
    assert result.stopped_early, result.stderr[-2000:]
    assert not result.timed_out
    assert result.classification.kind == "network"
    assert "waiting for network" in result.classification.text
    assert result.post is None
    assert result.pid is not None
    deadline = time.monotonic() + 10
    while _alive(result.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(result.pid)
    print(f"codex stopped early after {elapsed:.1f} s (timeout {CALL_TIMEOUT:.0f} s)")


# -- the prompt reaches the real CLIs whole (issue 9 items 3, 4) -----------------------------------


class _Recorder:
    """A loopback HTTP server standing for the provider's API: it records every request body
    and answers 401, so the CLI never gets a reply and the test reads what it sent."""

    def __init__(self) -> None:
        import http.server
        import threading

        bodies: list[bytes] = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                bodies.append(self.rfile.read(length))
                payload = b'{"type":"error","error":{"type":"authentication_error",' \
                          b'"message":"invalid x-api-key"}}'
                self.send_response(401)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self) -> None:
                self.send_response(404)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *_args: object) -> None:
                pass

        self.bodies = bodies
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = int(self.server.server_address[1])
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def texts(self) -> list[str]:
        """Every string inside every JSON body received so far."""
        found: list[str] = []

        def walk(value: object) -> None:
            if isinstance(value, str):
                found.append(value)
            elif isinstance(value, dict):
                for item in value.values():
                    walk(item)
            elif isinstance(value, list):
                for item in value:
                    walk(item)

        for body in list(self.bodies):
            try:
                walk(json.loads(body))
            except ValueError:
                continue
        return found

    def saw(self, text: str) -> bool:
        return any(text in found for found in self.texts())

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def recorder() -> Iterator[_Recorder]:
    server = _Recorder()
    try:
        yield server
    finally:
        server.close()


#: A prompt as the runner builds it for a participant with an empty body: it begins with `-`
#: (real claude 2.1 took it for an unknown option, real codex 0.171 for an unexpected argument)
#: and, at 150 KB, is over Linux's 128 KiB limit on one argument.
BIG_DASH_PROMPT = (
    "--- the thread so far (oldest first) ---\n"
    + "".join(f"@rui: note {i} about the change\n" for i in range(6_000))
    + "---\nYou are @ana. It is your turn. Post your reply. END-OF-PROMPT"
)


@pytest.mark.realcli
def test_item3_real_claude_reads_the_whole_prompt_on_stdin(
    npm_bin: Path, tmp_path: Path, recorder: _Recorder
) -> None:
    assert len(BIG_DASH_PROMPT.encode()) > 128 * 1024
    env = _claude_env(tmp_path / "home", f"http://127.0.0.1:{recorder.port}")
    env["ANTHROPIC_API_KEY"] = "sk-ant-not-a-real-key"  # past the login check, to the API
    templates = templates_from_config({"claude": {"binary": str(npm_bin / "claude")}})
    ana = Participant(id="ana", provider="claude")
    result = call_participant(
        ana, Engine("claude"), BIG_DASH_PROMPT, templates=templates, env=env, cwd=tmp_path,
        timeout=CALL_TIMEOUT, cancel=lambda: recorder.saw("END-OF-PROMPT"),
    )
    assert BIG_DASH_PROMPT in recorder.texts(), result.stderr[-2000:] + result.stdout[-2000:]
    assert "unknown option" not in result.stderr
    assert result.cancelled  # stopped by the test once the API saw the prompt


@pytest.mark.realcli
def test_item3_real_codex_reads_the_whole_prompt_on_stdin(
    npm_bin: Path, tmp_path: Path, recorder: _Recorder
) -> None:
    env = _codex_env(tmp_path / "home", f"http://127.0.0.1:{recorder.port}/v1")
    # The default argv (`codex exec [-m <m>]`) plus the flag codex needs outside a git repo.
    templates = templates_from_config(
        {"codex": [str(npm_bin / "codex"), "exec", "--skip-git-repo-check", "{model_args}"]}
    )
    rui = Participant(id="rui", provider="codex", model="gpt-5")
    result = call_participant(
        rui, Engine("codex"), BIG_DASH_PROMPT, templates=templates, env=env, cwd=tmp_path,
        timeout=CALL_TIMEOUT, cancel=lambda: recorder.saw("END-OF-PROMPT"),
    )
    assert BIG_DASH_PROMPT in recorder.texts(), result.stderr[-2000:]
    assert "unexpected argument" not in result.stderr
    assert result.cancelled


@pytest.mark.realcli
@pytest.mark.parametrize("cli", ["claude", "codex"])
def test_item4_a_positional_prompt_after_double_dash_is_never_an_option(
    npm_bin: Path, tmp_path: Path, recorder: _Recorder, cli: str
) -> None:
    """docs/shell.md: a template that keeps a positional `{prompt}` puts `--` before it."""
    prompt = "--- the thread so far --- -m o3 --help DASH-PROMPT-END"
    if cli == "claude":
        env = _claude_env(tmp_path / "home", f"http://127.0.0.1:{recorder.port}")
        env["ANTHROPIC_API_KEY"] = "sk-ant-not-a-real-key"
        head = [str(npm_bin / "claude"), "-p", "--output-format", "stream-json", "--verbose"]
    else:
        env = _codex_env(tmp_path / "home", f"http://127.0.0.1:{recorder.port}/v1")
        head = [str(npm_bin / "codex"), "exec", "--skip-git-repo-check"]
    bare = run_call(
        build_argv(cli, prompt, None, templates_from_config({cli: [*head, "{prompt}"]})),
        provider=cli, env=env, cwd=tmp_path, timeout=CALL_TIMEOUT,
    )
    # Without `--` the real CLI reads the prompt as options and refuses it.
    assert bare.exit_code in (1, 2) and not bare.killed
    assert "unknown option" in bare.stderr or "unexpected argument" in bare.stderr
    guarded = run_call(
        build_argv(cli, prompt, None, templates_from_config({cli: [*head, "--", "{prompt}"]})),
        provider=cli, env=env, cwd=tmp_path, timeout=CALL_TIMEOUT,
        cancel=lambda: recorder.saw("DASH-PROMPT-END"),
    )
    assert prompt in recorder.texts(), guarded.stderr[-2000:]
    assert guarded.cancelled


# -- an API that fails in the ways a real one does (A3, A26, C1) -----------------------------------


class _FailingApi:
    """A loopback port standing for the provider's API, failing in one way for every request:
    `close` reads the request and closes the connection unanswered, `hang` reads it and never
    answers, `429` answers `429 Too Many Requests` with a JSON body. It records the first line
    of each request, so a test knows the CLI reached it."""

    def __init__(self, mode: str, body: bytes = b"") -> None:
        import threading

        self.mode, self.body = mode, body
        self.requests: list[bytes] = []
        self._held: list[socket.socket] = []
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self.port = int(self._sock.getsockname()[1])
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        import threading

        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(30)
        try:
            head = conn.recv(65536)
        except OSError:
            head = b""
        self.requests.append(head.split(b"\r\n", 1)[0])
        if self.mode == "hang":
            self._held.append(conn)
            return
        if self.mode == "429":
            with contextlib.suppress(OSError):
                conn.sendall(
                    b"HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\n"
                    b"content-length: %d\r\nconnection: close\r\n\r\n" % len(self.body)
                    + self.body
                )
        conn.close()

    def posted(self) -> bool:
        return any(line.startswith(b"POST ") for line in self.requests)

    def close(self) -> None:
        self._sock.close()
        for conn in self._held:
            conn.close()


def _codex_templates(npm_bin: Path) -> Mapping[str, CommandTemplate]:
    # The default argv (`codex exec [-m <m>]`) plus the flag codex needs outside a git repo.
    return templates_from_config(
        {"codex": [str(npm_bin / "codex"), "exec", "--skip-git-repo-check", "{model_args}"]}
    )


@pytest.mark.realcli
def test_A3_real_codex_told_429_usage_limit_is_limited_until_its_reset(
    npm_bin: Path, tmp_path: Path
) -> None:
    """The body of a ChatGPT plan's usage limit: real codex 0.171 prints `You’ve hit your usage
    limit. … try again at <h:mm AM>.` (the clock time of `resets_at`, to the minute)."""
    resets_at = int(time.time()) + 2 * 3600
    body = json.dumps({"error": {"type": "usage_limit_reached",
                                 "message": "The usage limit has been reached",
                                 "plan_type": "plus", "resets_at": resets_at}}).encode()
    api = _FailingApi("429", body)
    try:
        env = _codex_env(tmp_path / "home", f"http://127.0.0.1:{api.port}/v1")
        env["TZ"] = "UTC"  # codex writes the clock time in its zone; the reading is told the same
        result = run_call(
            build_argv("codex", "Say hello.", None, _codex_templates(npm_bin)),
            provider="codex", env=env, cwd=tmp_path, timeout=CALL_TIMEOUT, input="Say hello.",
            local_tz=UTC,
        )
    finally:
        api.close()
    assert api.posted()
    assert result.classification.kind == "limit", result.stderr[-2000:]
    assert "hit your usage limit" in result.classification.text
    limit = result.classification.limit
    assert limit is not None and limit.reset_at is not None, result.classification.text
    assert resets_at - 120 <= limit.reset_at.timestamp() <= resets_at + 60
    assert not result.killed


@pytest.mark.realcli
def test_A26_real_codex_whose_api_closes_every_connection_is_an_outage(
    npm_bin: Path, tmp_path: Path
) -> None:
    """Real codex 0.171 prints `Reconnecting... 1/5` … `5/5`, then `stream disconnected before
    completion: error sending request`, and goes on retrying: stopped early, an outage."""
    api = _FailingApi("close")
    try:
        env = _codex_env(tmp_path / "home", f"http://127.0.0.1:{api.port}/v1")
        result = run_call(
            build_argv("codex", "Say hello.", None, _codex_templates(npm_bin)),
            provider="codex", env=env, cwd=tmp_path, timeout=CALL_TIMEOUT, input="Say hello.",
        )
    finally:
        api.close()
    assert api.posted()
    assert result.classification.kind == "network", result.stderr[-2000:]
    assert not result.timed_out
    assert result.post is None


#: Long enough for either CLI to start and send its request on a loaded machine, short enough
#: for the suite; the call's own timeout (C1) is what ends a hung call.
HUNG_CALL_TIMEOUT = 30.0


@pytest.mark.realcli
@pytest.mark.parametrize("cli", ["claude", "codex"])
def test_C1_a_real_cli_whose_api_never_answers_times_out(
    npm_bin: Path, tmp_path: Path, cli: str
) -> None:
    """Neither CLI gives up on an API that accepts the request and never answers within the
    call's timeout: the shell stops it and the call is a timeout (A28; SPEC D `timeout: true`:
    `<cli> timed out`), not an outage."""
    api = _FailingApi("hang")
    try:
        if cli == "claude":
            env = _claude_env(tmp_path / "home", f"http://127.0.0.1:{api.port}")
            env["ANTHROPIC_API_KEY"] = "sk-ant-not-a-real-key"  # past the login check
            templates = templates_from_config({"claude": {"binary": str(npm_bin / "claude")}})
        else:
            env = _codex_env(tmp_path / "home", f"http://127.0.0.1:{api.port}/v1")
            templates = _codex_templates(npm_bin)
        result = run_call(
            build_argv(cli, "Say hello.", None, templates),
            provider=cli, env=env, cwd=tmp_path, timeout=HUNG_CALL_TIMEOUT, input="Say hello.",
        )
    finally:
        api.close()
    assert api.posted(), result.stderr[-2000:]
    assert result.timed_out and not result.stopped_early
    # not a limit, an outage or a login failure: what the call was is its timeout (A28)
    assert result.classification.kind == "other", result.classification.text
    assert result.post is None
