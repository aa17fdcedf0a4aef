"""A long model message in codex's stderr transcript is never read as codex's words (SPEC A3, A5).

`codex exec` writes a human transcript to stderr: the prompt under a `user` header, the model's
reasoning and messages under `thinking` and `codex` headers, commands under `exec`, and its own
lines (`ERROR: …`, `warning: …`, `tokens used`). The shell keeps only the end of stderr. With a
long model message the `codex` header is cut away; a notice the model quoted at the end of its
message must still be model text (over 300 characters: never a notice), while a notice codex
itself prints after the cut is still a limit.

The shell says where its kept tail begins on the tail's first line, a marker of the form
`[autodev: N bytes of stderr before this line were not kept; codex was in its "codex" block]`
(or `…; codex was writing its own lines]`, or no `; …` part when that is not known). The rules
are stated here on their own: these tests import none of the bounds they check.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
import yaml
from helpers.clock import T0 as NOW
from hypothesis import given
from hypothesis import strategies as st

from autodev_core.detection import classify_output, detect_limit
from autodev_shell.calls import CallResult, build_argv, run_call
from autodev_shell.calls.capture import _Capture

KIB = 1024
#: The shell keeps the last 64 KiB of a call's stderr (docs/shell.md, C1).
STDERR_KEPT = 64 * KIB
FIXTURES = Path(__file__).parents[1] / "fixtures" / "notices"
QUOTED = (
    "You've hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit "
    "https://chatgpt.com/codex/settings/usage to purchase more credits or try again in 3 hours."
)
INSIDE_MESSAGE = (
    '[autodev: 150000 bytes of stderr before this line were not kept; codex was in its "codex" '
    "block]\n"
)
OWN_LINES = (
    "[autodev: 150000 bytes of stderr before this line were not kept; codex was writing its own "
    "lines]\n"
)
UNKNOWN = "[autodev: 150000 bytes of stderr before this line were not kept]\n"
_MARKER = re.compile(r"\[autodev: (\d+) bytes of stderr before this line were not kept(;[^\]]*)?\]")


def _message(size: int) -> str:
    """A model's report of about `size` characters, in paragraphs, quoting a notice at its end."""
    paragraph = (
        "I went through the retry wrapper module by module and checked how each caller "
        "handles a failed call, what it logs and when it gives up.\n"
    )
    body = paragraph * (size // len(paragraph) + 1)
    return body[:size] + "\nThe CLI answered exactly this when the quota ran out:\n" + QUOTED


def _kind(stderr: str, stdout: str = "", exit_code: int | None = 0) -> str:
    return classify_output(
        "codex", stdout=stdout, stderr=stderr, exit_code=exit_code, now=NOW, local_tz=UTC
    ).kind


# -- the detector, given a tail that starts past the `codex` header --------------------------


@pytest.mark.parametrize("marker", [INSIDE_MESSAGE, UNKNOWN], ids=["inside-codex", "unknown"])
def test_A5_a_cut_tail_that_starts_inside_the_models_message_is_not_a_limit(marker: str) -> None:
    # What the shell keeps of a 100 KiB message: its last lines, then codex's closing lines.
    tail = _message(100 * KIB)[-60 * KIB :].split("\n", 1)[1]
    stderr = marker + tail + "\ntokens used\n48,210\n"
    assert _kind(stderr) == "other"
    assert detect_limit("codex", stderr=stderr, now=NOW, local_tz=UTC) is None
    # Nor while the call is still streaming (A37 asks the detector with no exit code).
    assert _kind(marker + tail + "\n", exit_code=None) == "other"


@pytest.mark.parametrize("marker", [INSIDE_MESSAGE, UNKNOWN], ids=["inside-codex", "unknown"])
def test_A3_codex_own_notice_after_a_cut_tail_is_still_a_limit(marker: str) -> None:
    tail = _message(100 * KIB)[-60 * KIB :].split("\n", 1)[1]
    own = "ERROR: You've hit your usage limit. Try again in 3 hours 2 minutes.\n"
    for stderr in (marker + tail + "\ntokens used\n48,210\n" + own, marker + tail + "\n" + own):
        notice = detect_limit("codex", stderr=stderr, now=NOW, local_tz=UTC)
        assert notice is not None
        assert notice.reset_at == NOW + timedelta(hours=3, minutes=2)
    # A short notice of unknown provenance is short text: examined (A5), so still found.
    short = UNKNOWN + "You've hit your usage limit. Try again later.\n"
    assert _kind(short, exit_code=1) == "limit"


def test_A5_a_tail_known_to_start_in_codex_own_lines_reads_them_as_codex_words() -> None:
    long_own = "warning: " + "a long configuration warning " * 20 + "\n"
    notice = "You've hit your usage limit. Try again in 3 hours 2 minutes.\n"
    assert _kind(OWN_LINES + long_own + notice, exit_code=1) == "limit"
    # Unknown provenance: the same 600 characters are not read as a notice (A5).
    assert _kind(UNKNOWN + "a long configuration warning " * 20 + "\n" + notice) == "other"


def _codex_stderr_fixtures() -> list[dict[str, Any]]:
    cases = yaml.safe_load((FIXTURES / "codex.yaml").read_text(encoding="utf-8"))
    return [case for case in cases if case.get("stderr")]


@pytest.mark.parametrize("case", _codex_stderr_fixtures(), ids=lambda case: case["name"])
def test_A3_every_codex_stderr_fixture_reads_the_same_behind_an_own_lines_marker(
    case: dict[str, Any],
) -> None:
    now = datetime.fromisoformat(case["now"])
    zone = ZoneInfo(case["local_tz"])

    def kind(stderr: str) -> str:
        return classify_output(
            "codex", stdout=case.get("stdout") or "", stderr=stderr, exit_code=case.get("exit"),
            now=now, local_tz=zone,
        ).kind

    assert kind(OWN_LINES + case["stderr"]) == case["expect"] == kind(case["stderr"])


# -- the shell: a real-shaped transcript through the capture ---------------------------------


def _transcript(message: str, ending: str = "tokens used\n48,210\n") -> str:
    return (
        "Reading additional input from stdin...\n"
        "OpenAI Codex v0.171.0 (research preview)\n--------\nworkdir: /work\nmodel: gpt-5\n"
        "provider: openai\napproval: never\nsandbox: workspace-write\n"
        "session id: 01a22f6b-4f6d-7593-878e-0d13d0422f36\n--------\n"
        "user\nReview the retry wrapper and report.\n"
        "thinking\n**Reading the wrapper**\n"
        "exec\nbash -lc 'pytest -q tests/test_retry.py' in /work\n succeeded in 2.1s:\n"
        "42 passed in 1.93s\n"
        "codex\n" + message + "\n" + ending
    )


def test_A5_the_capture_marks_where_its_stderr_tail_starts() -> None:
    capture = _Capture(None, "codex")
    data = _transcript(_message(100 * KIB)).encode()
    for at in range(0, len(data), 4093):  # odd chunk sizes: lines cut across chunks
        capture.feed("stderr", data[at : at + 4093])
    capture.finish()
    kept = capture.stderr_text()
    first, rest = kept.split("\n", 1)
    found = _MARKER.fullmatch(first)
    assert found is not None, first[:200]
    assert found.group(2) == '; codex was in its "codex" block'
    # What the marker counts and what is kept add up to all that codex wrote, from a full line.
    assert int(found.group(1)) + len(rest.encode()) == len(data)
    assert data.decode().endswith(rest) and data.decode()[: -len(rest)].endswith("\n")
    assert _kind(kept) == "other"


def test_A5_a_short_stderr_is_kept_whole_without_a_marker() -> None:
    capture = _Capture(None, "codex")
    data = _transcript("Done.").encode()
    capture.feed("stderr", data)
    capture.finish()
    assert capture.stderr_text() == data.decode()


def _run(env: dict[str, str]) -> CallResult:
    return run_call(build_argv("codex", "do it"), provider="codex", env=env, timeout=120)


def test_A5_codex_posting_a_100_KiB_message_that_quotes_a_notice_is_a_post_not_a_limit(
    standins: Callable[..., dict[str, str]],
) -> None:
    message = _message(100 * KIB)
    env = standins({"codex": [{"stdout": message + "\n", "stderr": _transcript(message),
                               "exit": 0}]})
    result = _run(env)
    assert result.stderr_bytes > 100 * KIB  # the `codex` header was cut away
    assert "\ncodex\n" not in result.stderr
    assert result.classification.kind == "other", result.classification
    assert result.post == message


def test_A3_codex_limit_after_a_100_KiB_message_is_still_a_limit(
    standins: Callable[..., dict[str, str]],
) -> None:
    message = _message(100 * KIB)
    ending = "ERROR: You've hit your usage limit. Try again in 3 hours 2 minutes.\n"
    env = standins({"codex": [{"stdout": "", "stderr": _transcript(message, ending),
                               "exit": 1}]})
    result = _run(env)
    assert result.classification.kind == "limit", result.classification
    notice = result.classification.limit
    assert notice is not None and notice.reset_at is not None
    assert notice.reset_at - result.ended_at == timedelta(hours=3, minutes=2)


@pytest.mark.parametrize("provider", ["claude", "agy"])
def test_A5_other_clis_cut_stderr_says_so_and_the_line_is_nobodys_words(provider: str) -> None:
    capture = _Capture(None, provider)
    data = b"".join(b"progress %06d: still working\n" % i for i in range(5000))
    capture.feed("stderr", data)
    kept = capture.stderr_text()
    first, rest = kept.split("\n", 1)
    found = _MARKER.fullmatch(first)
    assert found is not None and found.group(2) is None  # only codex writes a transcript
    assert int(found.group(1)) + len(rest.encode()) == len(data)
    assert classify_output(
        provider, stderr=kept, exit_code=1, now=NOW, local_tz=UTC
    ).kind == "other"


# -- property: the line before the tail names the block the kept lines begin in --------------

_HEADS = ("user", "thinking", "codex", "exec")
_CODEX_OWN = ("ERROR: stream error", "tokens used", "warning: sandbox")
_LINE = st.one_of(
    st.sampled_from(_HEADS).map(lambda head: ("head", head)),
    st.sampled_from(_CODEX_OWN).map(lambda text: ("own", text)),
    st.one_of(st.integers(0, 90), st.integers(0, 9000)).map(
        lambda n: ("text", "report text " * (n // 12) + "é" * (n % 12))
    ),
)


def _expected_block(lines: list[str]) -> str | None:
    """Where codex's transcript is after `lines`: a header opens its block, and codex's own line
    closes it (None); other lines change nothing."""
    block: str | None = None
    for line in lines:
        if line in _HEADS:
            block = line
        elif block is not None and line.startswith(_CODEX_OWN):
            block = None
    return block


@given(
    lines=st.lists(_LINE, min_size=1, max_size=40),
    at=st.integers(0, 39),
    back=st.integers(0, 400),
    chunk=st.integers(1, 70_000),
)
def test_A5_the_tail_line_names_the_block_the_kept_lines_begin_in(
    lines: list[tuple[str, str]], at: int, back: int, chunk: int
) -> None:
    texts = [text for _, text in lines]
    # Text after the lines, so that the tail's cut falls `back` bytes before line `at`.
    gen = "".join(text + "\n" for text in texts).encode()
    start_of = sum(len(t.encode()) + 1 for t in texts[: at % len(texts)])
    after = max(0, STDERR_KEPT - (len(gen) - start_of) - back) + 1
    filler = ("report text " * 80 + "\n") * (after // 961 + 1)
    data = b"report text\n" * 6000 + gen + filler.encode()
    capture = _Capture(None, "codex")
    for pos in range(0, len(data), chunk):
        capture.feed("stderr", data[pos : pos + chunk])
    kept = capture.stderr_text()
    first, rest = kept.split("\n", 1)
    found = _MARKER.fullmatch(first)
    assert found is not None
    before = data[: int(found.group(1))].decode()
    assert before.endswith("\n") and before + rest == data.decode()
    block = _expected_block(before.splitlines())
    said = found.group(2)
    if block is None:
        assert said == "; codex was writing its own lines"
    else:
        assert said == f'; codex was in its "{block}" block'
