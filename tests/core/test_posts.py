"""`extract_post`: the text a call posted, per provider output shape (SPEC C1, A31, A32)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autodev_core import classify_output
from autodev_core.detection.posts import extract_post
from autodev_core.testing.notices import NOTICE_CASES

_NOW = datetime(2026, 7, 1, 9, tzinfo=UTC)

FIXTURES = Path(__file__).parents[1] / "fixtures" / "realcli"


def _lines(*events: Mapping[str, object]) -> str:
    return "\n".join(json.dumps(e, ensure_ascii=False) for e in events) + "\n"


INIT = {"type": "system", "subtype": "init", "session_id": "s", "model": "claude-opus"}


def _assistant(text: str) -> dict[str, object]:
    return {"type": "assistant", "message": {"content": [{"type": "text", "text": text}]}}


def test_C1_claude_stream_json_success_result_is_the_post() -> None:
    out = _lines(
        INIT,
        _assistant("thinking out loud"),
        {"type": "result", "subtype": "success", "is_error": False, "result": "review done"},
    )
    assert extract_post("claude", out) == "review done"


def test_A32_claude_error_result_is_not_a_post() -> None:
    out = _lines(
        INIT,
        _assistant("Not logged in · Please run /login"),
        {
            "type": "result",
            "subtype": "success",
            "is_error": True,
            "result": "Not logged in · Please run /login",
        },
    )
    assert extract_post("claude", out) is None


def test_A32_real_claude_2_1_not_logged_in_output_is_not_a_post() -> None:
    out = (FIXTURES / "claude-not-logged-in.stdout").read_text(encoding="utf-8")
    assert '"is_error":true' in out  # the fixture is the real thing
    assert extract_post("claude", out) is None


def test_C1_claude_limit_result_is_not_a_post() -> None:
    out = _lines(
        INIT,
        {"type": "rate_limit_event", "rate_limit_info": {"status": "rejected", "resetsAt": 1}},
        {
            "type": "result",
            "subtype": "success",
            "is_error": True,
            "result": "You've hit your limit · resets 2:30pm (Europe/Lisbon)",
        },
    )
    assert extract_post("claude", out) is None


def test_C1_claude_without_a_result_posted_nothing() -> None:
    assert extract_post("claude", _lines(INIT, _assistant("half an answer"))) is None


def test_C1_claude_error_subtype_is_not_a_post() -> None:
    out = _lines(
        INIT, {"type": "result", "subtype": "error_max_turns", "is_error": False, "result": "x"}
    )
    assert extract_post("claude", out) is None


def test_C1_claude_last_result_decides() -> None:
    out = _lines(
        {"type": "result", "subtype": "success", "is_error": False, "result": "first"},
        {"type": "result", "subtype": "success", "is_error": False, "result": "second"},
    )
    assert extract_post("claude", out) == "second"


def test_C1_claude_plain_text_template_reads_plain_stdout() -> None:
    assert extract_post("claude", "  all good\n") == "all good"


def test_C1_codex_plain_stdout_is_the_final_message() -> None:
    assert extract_post("codex", "Done: tests pass.\n") == "Done: tests pass."
    assert extract_post("codex", "  \n") is None


def test_C1_codex_json_last_agent_message_is_the_post() -> None:
    out = _lines(
        {"type": "thread.started", "thread_id": "t"},
        {"type": "turn.started"},
        {"type": "item.completed", "item": {"id": "i0", "type": "reasoning", "text": "hmm"}},
        {"type": "item.completed", "item": {"id": "i1", "type": "agent_message", "text": "one"}},
        {"type": "item.completed", "item": {"id": "i2", "type": "command_execution"}},
        {"type": "item.completed", "item": {"id": "i3", "type": "agent_message", "text": "two"}},
        {"type": "turn.completed", "usage": {"input_tokens": 1}},
    )
    assert extract_post("codex", out) == "two"


def test_C1_codex_json_older_shapes() -> None:
    old_item = _lines(
        {"type": "item.completed", "item": {"item_type": "assistant_message", "text": "old"}}
    )
    assert extract_post("codex", old_item) == "old"
    old_msg = _lines({"msg": {"type": "agent_message", "message": "older"}})
    assert extract_post("codex", old_msg) == "older"


def test_C1_codex_json_without_message_posted_nothing() -> None:
    out = _lines(
        {"type": "thread.started", "thread_id": "t"},
        {"type": "turn.failed", "error": {"message": "stream disconnected"}},
    )
    assert extract_post("codex", out) is None


def test_C1_agy_plain_stdout() -> None:
    assert extract_post("agy", "answer\n") == "answer"
    assert extract_post("agy", "") is None


def test_C1_unknown_provider_is_no_post() -> None:
    assert extract_post("gemini", "text") is None


@given(provider=st.sampled_from(["claude", "codex", "agy"]), text=st.text())
def test_C1_extract_post_never_raises(provider: str, text: str) -> None:
    post = extract_post(provider, text)
    assert post is None or (isinstance(post, str) and post == post.strip() and post)


@given(
    text=st.text(min_size=1).filter(lambda t: t.strip() != ""),
    noise=st.lists(st.sampled_from(["{", "{}", '{"type": 1}', "not json", '{"type":"x"'])),
)
def test_C1_claude_result_survives_noise(text: str, noise: list[str]) -> None:
    result = json.dumps({"type": "result", "subtype": "success", "is_error": False, "result": text})
    out = "\n".join([*noise, result])
    # issue 39: a result that reads as a notice (drawn text may be one) is no post.
    notice = classify_output("claude", stdout=out, exit_code=None, now=_NOW,
                             local_tz=UTC).kind != "other"
    assert extract_post("claude", out) == (None if notice else text.strip())


@pytest.mark.parametrize("case", NOTICE_CASES, ids=[c[0] for c in NOTICE_CASES])
def test_issue_39_a_notice_is_never_a_post(case: tuple[Any, ...]) -> None:
    """Every limit, network and login notice of the corpus, on stdout: no post, whatever the
    exit code (before, claude's plain-text limit notice was returned as a post)."""
    assert extract_post(case[1], case[4]) is None


def test_issue_39_a_report_quoting_a_notice_is_still_a_post() -> None:
    """A5: model text over 300 characters that quotes a notice is a post."""
    report = ("Summary. The CLI once printed: Claude AI usage limit reached|1762952400. "
              + "All tests pass. " * 20).strip()
    assert extract_post("claude", report) == report
