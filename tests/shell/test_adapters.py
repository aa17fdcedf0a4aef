"""Provider adapters: argv (C1, A13), templates, detection of installed CLIs (A12), and calls run
through stand-in CLIs: capture bounds, timeouts that kill the process group, early stop (A37)."""

from __future__ import annotations

import os
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from autodev_core.engine import Engine
from autodev_core.errors import ConfigError
from autodev_core.participant import Participant
from autodev_shell.calls import (
    DEFAULT_TEMPLATES,
    EXIT_NOT_FOUND,
    STDERR_TAIL_BYTES,
    STDOUT_TAIL_BYTES,
    CallResult,
    argv_for,
    build_argv,
    call_participant,
    installed_providers,
    prompt_on_stdin,
    run_call,
    templates_from_config,
)
from autodev_shell.standins import install_standins, standin_env, write_script

ANA = Participant(
    id="ana",
    provider="claude",
    model="opus",
    failover=(Engine("codex"), Engine("claude", "sonnet"), Engine("agy")),
)
PROMPT = "Review the change in {model} and say {prompt}."  # braces must pass through untouched


# -- argv (C1, A13) ------------------------------------------------------------------------------


def test_C1_claude_argv_with_its_pin_and_the_prompt_on_stdin() -> None:
    # C1: claude `-p` reads the prompt from stdin when no prompt argument is given.
    assert argv_for(ANA, Engine("claude"), PROMPT) == (
        "claude", "-p", "--output-format", "stream-json", "--verbose", "--model", "opus",
    )
    assert prompt_on_stdin("claude") and prompt_on_stdin("codex")
    assert not prompt_on_stdin("agy")  # agy documents its prompt only as `-p <prompt>`


def test_C1_claude_argv_without_a_pin_names_no_model() -> None:
    rui = Participant(id="rui", provider="claude")
    assert argv_for(rui, Engine("claude"), "hi") == (
        "claude", "-p", "--output-format", "stream-json", "--verbose",
    )


def test_A13_a_hop_does_not_carry_the_pin() -> None:
    assert argv_for(ANA, Engine("codex"), PROMPT) == ("codex", "exec")
    assert argv_for(ANA, Engine("agy"), PROMPT) == ("agy", "-p", PROMPT)


def test_A13_a_hop_entry_naming_a_model_uses_it() -> None:
    assert argv_for(ANA, Engine("claude", "sonnet"), "x")[-2:] == ("--model", "sonnet")
    eva = Participant(id="eva", provider="claude", failover=(Engine("codex", "gpt-5"),))
    assert argv_for(eva, Engine("codex", "gpt-5"), "x") == ("codex", "exec", "-m", "gpt-5")
    assert argv_for(eva, Engine("agy", "g3"), "x") == ("agy", "-p", "x", "--model", "g3")


def test_C1_build_argv_refuses_an_unknown_provider() -> None:
    with pytest.raises(ValueError):
        build_argv("gemini", "x")


# -- templates from the run's config (C1) ----------------------------------------------------------


def test_C1_command_lines_are_configurable() -> None:
    templates = templates_from_config(
        {
            "codex": ["/opt/bin/codex", "exec", "--skip-git-repo-check", "{model_args}",
                      "{prompt}"],
            "claude": {"binary": "/usr/local/bin/claude", "timeout": 900},
        },
        source="run.yaml",
    )
    assert build_argv("codex", "go", "o3", templates) == (
        "/opt/bin/codex", "exec", "--skip-git-repo-check", "-m", "o3", "go",
    )
    assert build_argv("claude", "go", None, templates)[0] == "/usr/local/bin/claude"
    assert templates["claude"].timeout_seconds == 900
    assert templates["agy"] == DEFAULT_TEMPLATES["agy"]


@pytest.mark.parametrize(
    ("config", "words"),
    [
        ({"gemini": ["gemini", "{prompt}"]}, ["commands.gemini", "unknown provider"]),
        ({"codex": {"model_args": ["-m", "{model}", "{prompt}"]}},
         ["commands.codex", "{prompt} belongs in argv"]),
        ({"codex": {"timeout": float("inf")}}, ["commands.codex.timeout", "inf"]),
        ({"codex": {"timeout": float("nan")}}, ["commands.codex.timeout", "nan"]),
        ({"codex": {"timeout": 0}}, ["commands.codex.timeout", "positive"]),
        ({"codex": {"timeout": "soon"}}, ["commands.codex.timeout", "seconds"]),
        ({"codex": {"timout": 5}}, ["commands.codex", "'timout'"]),
        ({"codex": {"argv": ["codex", 3]}}, ["commands.codex.argv", "list of strings"]),
        ({"codex": {"argv": ["codex", "{model}", "{prompt}"]}}, ["commands.codex", "model_args"]),
        ({"codex": []}, ["commands.codex", "empty"]),
    ],
)
def test_C1_bad_command_config_is_a_clear_error(config: dict[str, Any], words: list[str]) -> None:
    with pytest.raises(ConfigError) as caught:
        templates_from_config(config, source="run.yaml")
    message = str(caught.value)
    assert message.startswith("run.yaml")
    for word in words:
        assert word in message


# -- stand-ins and installed CLIs (A12) ------------------------------------------------------------


@pytest.fixture
def standins(tmp_path: Path) -> Callable[..., dict[str, str]]:
    """Install the stand-ins; return a function that writes a script and gives the env."""
    bin_dir = install_standins(tmp_path / "bin")

    def make(script: Mapping[str, Any], **kwargs: Any) -> dict[str, str]:
        path = write_script(tmp_path / "script.json", script)
        return standin_env(bin_dir, path, log=tmp_path / "calls.jsonl", **kwargs)

    return make


def test_A12_installed_providers_found_on_path(tmp_path: Path) -> None:
    bin_dir = install_standins(tmp_path / "bin")
    assert installed_providers(path=str(bin_dir)) == {"claude", "codex", "agy"}
    only = tmp_path / "only"
    only.mkdir()
    (only / "codex").symlink_to(bin_dir / "codex")
    assert installed_providers(path=str(only)) == {"codex"}
    assert installed_providers(path=str(tmp_path / "empty")) == frozenset()


def test_A12_a_configured_binary_path_is_detected(tmp_path: Path) -> None:
    bin_dir = install_standins(tmp_path / "bin")
    templates = templates_from_config({"agy": {"binary": str(bin_dir / "agy")}})
    assert installed_providers(templates, path=str(tmp_path / "nothing")) == {"agy"}


def _run(env: dict[str, str], provider: str, **kwargs: Any) -> CallResult:
    kwargs.setdefault("timeout", 60)
    return run_call(build_argv(provider, "do it", kwargs.pop("model", None)), provider=provider,
                    env=env, **kwargs)


def test_C1_claude_post_through_stream_json(standins: Callable[..., dict[str, str]]) -> None:
    env = standins({"claude": [{"post": "review done"}]})
    result = _run(env, "claude", model="opus")
    assert (result.exit_code, result.post) == (0, "review done")
    assert result.classification.kind == "other"
    assert not result.killed
    assert result.started_at <= result.ended_at
    assert result.argv[-2:] == ("--model", "opus")


def test_A2_claude_rejected_rate_limit_event_is_a_limit(
    standins: Callable[..., dict[str, str]],
) -> None:
    reset = int(time.time()) + 2 * 3600
    env = standins({"claude": [{"kind": "limit", "resets_at": reset}]})
    result = _run(env, "claude")
    assert result.exit_code == 1
    assert result.post is None
    assert result.classification.kind == "limit"
    assert result.classification.limit is not None
    assert result.classification.limit.reset_at is not None
    assert result.classification.limit.reset_at.timestamp() == reset


def test_A32_claude_not_logged_in(standins: Callable[..., dict[str, str]]) -> None:
    result = _run(standins({"claude": [{"kind": "login"}]}), "claude")
    assert (result.classification.kind, result.exit_code, result.post) == ("login", 1, None)


@pytest.mark.parametrize(
    ("provider", "kind", "expected"),
    [("codex", "limit", "limit"), ("agy", "limit", "limit"), ("codex", "network", "network"),
     ("agy", "network", "network"), ("claude", "network", "network")],
)
def test_A3_A4_A26_notices_in_real_formats(
    standins: Callable[..., dict[str, str]], provider: str, kind: str, expected: str
) -> None:
    result = _run(standins({provider: [{"kind": kind}]}), provider)
    assert result.classification.kind == expected
    assert result.post is None
    assert result.exit_code != 0


@pytest.mark.parametrize(("provider", "code"), [("claude", 1), ("codex", 101), ("agy", 2)])
def test_C1_a_crash_keeps_its_exit_code(
    standins: Callable[..., dict[str, str]], provider: str, code: int
) -> None:
    result = _run(standins({provider: [{"kind": "crash"}]}), provider)
    assert result.exit_code == code
    assert result.classification.kind == "other"
    assert result.post is None
    assert result.stderr.strip() != ""


def test_C1_plain_output_with_a_failing_exit_is_not_a_post(
    standins: Callable[..., dict[str, str]],
) -> None:
    result = _run(standins({"agy": [{"post": "half", "exit": 1}]}), "agy")
    assert (result.exit_code, result.post) == (1, None)


def test_C6_standin_queue_then_default(standins: Callable[..., dict[str, str]]) -> None:
    env = standins({"codex": {"answers": [{"kind": "limit"}], "default": {"post": "later"}}})
    first, second, third = (_run(env, "codex") for _ in range(3))
    assert first.classification.kind == "limit"
    assert (second.post, third.post) == ("later", "later")


def test_C1_a_cli_that_is_not_there_exits_127() -> None:
    result = run_call(("/nonexistent/claude", "-p", "x"), provider="claude", timeout=5)
    assert result.exit_code == EXIT_NOT_FOUND
    assert "command not found" in result.stderr
    assert result.classification.kind == "other"
    assert result.post is None


def test_C1_stdin_is_dev_null_and_the_call_has_its_own_process_group() -> None:
    code = (
        "import os, sys\n"
        "print(repr(sys.stdin.read()), os.getpgid(0) == os.getpid(), os.getsid(0) == os.getpid())"
    )
    result = run_call((sys.executable, "-c", code), provider="agy", timeout=30)
    assert result.post == "'' True True"


# -- process group, timeouts, bounds, early stop ---------------------------------------------------


def _alive(pid: int) -> bool:
    """Running (a zombie is dead: nobody may reap orphans in a container)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _gone(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return not _alive(pid)


def _pid_from(path: Path, within: float = 10.0) -> int:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return int(path.read_text())
        time.sleep(0.05)
    raise AssertionError(f"{path} was never written")


def test_C1_timeout_kills_the_whole_process_group(
    standins: Callable[..., dict[str, str]], tmp_path: Path
) -> None:
    pidfile = tmp_path / "grandchild.pid"
    env = standins({"agy": [{"kind": "hang", "grandchild_pidfile": str(pidfile)}]})
    result = _run(env, "agy", timeout=1.5, kill_grace=1.0)
    grandchild = _pid_from(pidfile)
    assert result.timed_out and not result.stopped_early
    assert result.exit_code < 0, "killed by a signal"
    assert result.post is None
    assert result.pid is not None and _gone(result.pid)
    assert _gone(grandchild), "the grandchild was killed with its group"


def test_C1_a_child_left_holding_the_pipes_does_not_hold_the_call(
    standins: Callable[..., dict[str, str]], tmp_path: Path
) -> None:
    pidfile = tmp_path / "grandchild.pid"
    env = standins({"codex": [{"post": "done", "grandchild_pidfile": str(pidfile)}]})
    result = _run(env, "codex", timeout=60)
    assert (result.exit_code, result.post, result.timed_out) == (0, "done", False)
    assert _gone(_pid_from(pidfile))


def test_C1_memory_stays_bounded_with_a_chatty_cli(
    standins: Callable[..., dict[str, str]],
) -> None:
    flood = 12 * 1024 * 1024
    env = standins({"claude": [{"kind": "limit", "flood_bytes": flood}],
                    "codex": [{"post": "final answer", "flood_bytes": flood}]})
    tracemalloc.start()
    try:
        claude = _run(env, "claude")
        codex = _run(env, "codex")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert claude.stdout_bytes > flood and codex.stderr_bytes > flood
    assert peak < 8 * 1024 * 1024, f"peak {peak} bytes while {2 * flood} bytes streamed"
    assert len(claude.stdout.encode()) <= STDOUT_TAIL_BYTES + 64 * 1024  # tail + kept events
    assert len(codex.stderr.encode()) <= STDERR_TAIL_BYTES
    # The rejected rate_limit_event came first, 12 MiB ago: it was kept whole (A2).
    assert claude.classification.kind == "limit"
    assert codex.post == "final answer"


def test_C1_a_result_far_behind_the_tail_still_gives_the_post(
    standins: Callable[..., dict[str, str]],
) -> None:
    big = "x" * (STDOUT_TAIL_BYTES * 2)  # a post larger than the tail itself
    env = standins({"claude": [{"post": big}]})
    result = _run(env, "claude")
    assert result.post == big


def test_A37_endless_reconnect_is_stopped_early_as_a_network_outage(
    standins: Callable[..., dict[str, str]],
) -> None:
    env = standins({"codex": [{"kind": "reconnecting", "interval": 0.2}]})
    result = _run(env, "codex", timeout=120)
    assert result.stopped_early
    assert not result.timed_out
    assert result.classification.kind == "network"
    assert "waiting for network" in result.classification.text or (
        "failed to lookup address" in result.classification.text
    )
    assert result.post is None
    assert result.pid is not None and _gone(result.pid)


def test_C1_cancel_stops_a_call(standins: Callable[..., dict[str, str]]) -> None:
    env = standins({"claude": [{"kind": "hang"}]})
    stop = threading.Event()
    timer = threading.Timer(0.3, stop.set)
    timer.start()
    result = _run(env, "claude", timeout=120, cancel=stop, kill_grace=1.0)
    timer.cancel()
    assert result.cancelled and not result.timed_out and not result.stopped_early
    assert result.post is None


def test_C8_sink_sees_every_byte(standins: Callable[..., dict[str, str]]) -> None:
    env = standins({"codex": [{"post": "ok", "flood_bytes": 500_000}]})
    seen: dict[str, int] = {"stdout": 0, "stderr": 0}

    def sink(stream: str, chunk: bytes) -> None:
        seen[stream] += len(chunk)

    result = _run(env, "codex", sink=sink)
    assert seen == {"stdout": result.stdout_bytes, "stderr": result.stderr_bytes}
    assert result.stderr_bytes > 500_000


def test_C1_call_participant_uses_the_template_timeout_and_the_pin(
    standins: Callable[..., dict[str, str]], tmp_path: Path
) -> None:
    env = standins({"claude": [{"post": "hi"}]})
    templates = templates_from_config({"claude": {"timeout": 30}})
    result = call_participant(ANA, Engine("claude"), "go", templates=templates, env=env)
    assert result.post == "hi"
    log = (tmp_path / "calls.jsonl").read_text().splitlines()
    assert '"--model","opus"' in log[-1]
    assert os.path.basename(result.argv[0]) == "claude"


def test_C8_a_failing_sink_does_not_fail_the_call(standins: Callable[..., dict[str, str]]) -> None:
    def sink(_stream: str, _chunk: bytes) -> None:
        raise OSError(28, "No space left on device")

    result = _run(standins({"codex": [{"post": "fine"}]}), "codex", sink=sink)
    assert result.post == "fine"
    assert result.sink_error is not None and "No space left" in result.sink_error


def test_C1_a_cli_that_closes_its_pipes_is_still_waited_for() -> None:
    code = "import os, time\nos.close(1)\nos.close(2)\ntime.sleep(0.5)\nraise SystemExit(3)\n"
    result = run_call((sys.executable, "-c", code), provider="agy", timeout=30)
    assert (result.exit_code, result.timed_out) == (3, False)


# -- the prompt's way in, and calls that cannot start (A28, C1, C8) ------------------------------


def _calls(tmp_path: Path) -> list[dict[str, Any]]:
    import json

    log = tmp_path / "calls.jsonl"
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("provider", ["claude", "codex"])
def test_C1_a_huge_prompt_with_a_nul_and_a_leading_dash_goes_whole_on_stdin(
    standins: Callable[..., dict[str, str]], tmp_path: Path, provider: str
) -> None:
    # Linux refuses one argument over 128 KiB and any argument holding a NUL byte; a prompt that
    # begins with `-` is read as an option by real claude and codex. On stdin none of it matters.
    prompt = "--- the thread so far ---\n@rui: a\x00b\n" + "é" * 200_000
    env = standins({provider: [{"post": "read it"}]})
    participant = Participant(id="ana", provider=provider)
    result = call_participant(participant, Engine(provider), prompt, env=env, timeout=60)
    assert (result.exit_code, result.post) == (0, "read it"), result.stderr
    (call,) = _calls(tmp_path)
    assert call["prompt_from"] == "stdin"
    assert call["prompt"] == prompt
    assert all(len(arg) < 1000 for arg in call["argv"])


def test_C1_a_stdin_prompt_the_cli_never_reads_does_not_hold_the_call(tmp_path: Path) -> None:
    # A CLI that exits without reading its stdin: the unwritten rest of the prompt is dropped.
    code = "import sys\nprint('bye')\n"
    result = run_call((sys.executable, "-c", code), provider="agy", timeout=30,
                      input="x" * 5_000_000)
    assert (result.exit_code, result.post, result.timed_out) == (0, "bye", False)


def test_C1_an_argv_prompt_too_long_for_one_argument_goes_through_a_private_file(
    tmp_path: Path,
) -> None:
    # agy takes its prompt as `-p <prompt>`; Linux refuses one argument over 128 KiB (E2BIG).
    # The prompt then goes into a 0600 file for the call and the argv prompt points to it.
    reader = (
        "import os, re, stat, sys\n"
        "path = re.search(r'in the file (\\S+?)\\. Read', sys.argv[2]).group(1)\n"
        "data = open(path, 'rb').read()\n"
        "mode = stat.S_IMODE(os.stat(path).st_mode)\n"
        "print(len(sys.argv[2]), len(data), oct(mode))\n"
    )
    templates = templates_from_config(
        {"agy": [sys.executable, "-c", reader, "-p", "{prompt}"]}
    )
    prompt = "-" + "long instructions " * 20_000  # 360 KB, leading dash
    eva = Participant(id="eva", provider="agy")
    result = call_participant(eva, Engine("agy"), prompt, templates=templates, timeout=60,
                              prompt_dir=tmp_path)
    assert result.exit_code == 0, result.stderr
    assert result.post is not None
    argv_len, file_len, mode = result.post.split()
    assert int(argv_len) < 1000  # one short line points to the file
    assert int(file_len) == len(prompt.encode())
    assert mode == "0o600"
    assert list(tmp_path.glob("prompt-*")) == []  # removed after the call


def test_C1_a_short_argv_prompt_stays_in_argv_and_a_nul_becomes_u_fffd(
    standins: Callable[..., dict[str, str]], tmp_path: Path
) -> None:
    env = standins({"agy": [{"post": "ok"}]})
    eva = Participant(id="eva", provider="agy")
    result = call_participant(eva, Engine("agy"), "-review\x00this", env=env, timeout=60)
    assert (result.exit_code, result.post) == (0, "ok"), result.stderr
    (call,) = _calls(tmp_path)
    assert (call["prompt_from"], call["prompt"]) == ("argv", "-review\ufffdthis")


@pytest.mark.parametrize(
    ("make", "code", "words"),
    [
        (lambda d: (str(d / "missing-cli"), "x"), 127, ["command not found"]),
        (lambda d: ("/bin/true", "x" * 200_000), 126, ["cannot start", "Argument list too long"]),
        (lambda d: ("/bin/true", "a\x00b"), 126, ["cannot start", "null"]),
        (lambda d: (str(d / "not-executable"), "x"), 126, ["cannot start", "Permission denied"]),
    ],
    ids=["ENOENT", "E2BIG", "NUL", "EACCES"],
)
def test_A28_a_call_that_cannot_start_is_a_failed_call_with_its_reason_in_the_lane(
    tmp_path: Path, make: Callable[[Path], tuple[str, ...]], code: int, words: list[str]
) -> None:
    (tmp_path / "not-executable").write_text("#!/bin/sh\necho hi\n", encoding="utf-8")
    lane: list[bytes] = []
    result = run_call(make(tmp_path), provider="claude", timeout=30,
                      sink=lambda _stream, chunk: lane.append(chunk))
    assert result.exit_code == code
    assert result.classification.kind == "other"  # A28: a plain failed call
    assert result.post is None and not result.killed
    shown = b"".join(lane).decode()
    for word in words:
        assert word in result.stderr
        assert word in shown


def test_A28_a_nul_byte_in_the_environment_is_a_failed_call() -> None:
    env = dict(os.environ, AUTODEV_BAD="a\x00b")
    result = run_call(("/bin/true",), provider="codex", timeout=30, env=env)
    assert result.exit_code == 126 and "cannot start" in result.stderr


# --- issue 39: the adapter helpers of an orchestrator's own loop ---------------------------------


def test_issue_39_only_a_clean_exit_posts_and_a_notice_never_does() -> None:
    import json

    from autodev_shell.adapters import post_of

    def post(stdout: str, exit_code: int | None, timed_out: bool = False) -> str | None:
        return post_of("claude", stdout, exit_code, timed_out)

    assert post("Reviewed the diff.\n", 0) == "Reviewed the diff."
    assert post("Reviewed the diff.\n", 1) is None  # a failed call posts nothing
    assert post("Reviewed the diff.\n", None, timed_out=True) is None
    assert post("", 0) is None  # an empty turn (A31)
    assert post("Claude AI usage limit reached|1762952400", 0) is None  # a notice (A2)
    assert post("5-hour limit reached ∙ resets 3pm", 0) is None
    # A17: an answer, then a notice: the post stays (the call is a limit after a post).
    answer = json.dumps({"type": "result", "subtype": "success", "is_error": False,
                         "result": "Merged #12."})
    assert post(answer + "\nClaude AI usage limit reached|1762952400\n", 0) == "Merged #12."


def test_issue_39_restoring_json_text_says_call_from_json_first() -> None:
    from autodev_core import initial_state, parse_participant
    from autodev_core.scheduler.state import SchedulerConfig
    from autodev_core.serialization import to_json
    from autodev_shell.adapters import NotASavedState, restored

    config = SchedulerConfig(team=[parse_participant("---\nprovider: claude\n---\n", id="ana")])
    text = to_json(initial_state(config))
    with pytest.raises(NotASavedState, match=r"not JSON text: call from_json\(text, "
                                             r"SchedulerState\) first$"):
        restored(config, text)  # type: ignore[arg-type]
    with pytest.raises(NotASavedState, match="not dict"):
        restored(config, {"status": "stopped"})  # type: ignore[arg-type]
    assert restored(config, None) == initial_state(config)


def test_issue_39_resume_or_start_after_a_restart() -> None:
    from datetime import UTC, datetime

    import attrs

    from autodev_core import (
        ResumeRequested,
        RunStarted,
        initial_state,
        parse_participant,
        restore_state,
    )
    from autodev_core.scheduler.state import SchedulerConfig
    from autodev_shell.adapters import resume_or_start

    now = datetime(2026, 7, 1, 9, tzinfo=UTC)
    config = SchedulerConfig(team=[parse_participant("---\nprovider: claude\n---\n", id="ana")])
    running = attrs.evolve(initial_state(config), status="running")
    state, first = resume_or_start(config, running, now)
    assert state == restore_state(config, running) and first == RunStarted(now=now)
    assert resume_or_start(config, None, now)[1] == RunStarted(now=now)
    paused = attrs.evolve(initial_state(config), status="paused")
    assert resume_or_start(config, paused, now)[1] is None  # a pause waits for a person
    assert resume_or_start(config, paused, now, resume_paused=True)[1] == ResumeRequested(now=now)
