"""claude's `rate_limit_event` as real claude 2.1.332 prints it (SPEC A2, A5, docs/limits.md).

- A2 (settled in round 4): a `rejected` event naming neither `resetsAt` nor `rateLimitType` is
  the server's transient throttle — claude's own result says `Server is temporarily limiting
  requests (not your usage limit)` — and the call failed (A28); it is no usage limit.
- A5: readings come only from a CLI's own structured output. `rate_limit_event` is claude's: the
  same line in codex's final message or agy's answer is text their model wrote.
- Every subscription turn reports per-window utilization in `rate_limit_info.unifiedWindows`,
  also on `allowed` events with no top-level `utilization`: those are usage readings.
- With an API key, spent credit (`Credit balance is too low`) and a spend limit (`You will regain
  access on …`) take the engine out as a limit does (docs/limits.md).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from autodev_core.detection import classify_output

NOW = datetime(2026, 12, 7, 13, 5, tzinfo=UTC)
FIVE_H_RESET = int((NOW + timedelta(hours=2, minutes=13)).timestamp())
SEVEN_D_RESET = int((NOW + timedelta(days=3)).timestamp())

THROTTLE_RESULT = ("API Error: Server is temporarily limiting requests (not your usage limit) · "
                   "Rate limited")


def line(value: dict[str, Any]) -> str:
    return json.dumps(value, separators=(",", ":"))


def rate_limit_event(**info: Any) -> str:
    return line({"type": "rate_limit_event", "rate_limit_info": info, "uuid": "u",
                 "session_id": "s"})


def result(text: str, *, error: bool) -> str:
    return line({"type": "result", "subtype": "success", "is_error": error, "result": text,
                 "duration_ms": 1, "num_turns": 1, "session_id": "s", "total_cost_usd": 0})


def windows(five: float, seven: float) -> dict[str, Any]:
    return {
        "five_hour": {"status": "allowed", "resetsAt": FIVE_H_RESET, "utilization": five},
        "seven_day": {"status": "allowed", "resetsAt": SEVEN_D_RESET, "utilization": seven},
    }


def classify(provider: str, stdout: str, exit_code: int = 0) -> Any:
    return classify_output(provider, stdout=stdout, exit_code=exit_code, now=NOW, local_tz=UTC)


# -- A2: the throttle is a failed call -------------------------------------------------------------


def test_A2_a_rejected_event_naming_no_reset_nor_window_is_the_throttle_not_a_limit() -> None:
    stdout = "\n".join([
        rate_limit_event(status="rejected", isUsingOverage=False),
        result(THROTTLE_RESULT, error=True),
    ])
    seen = classify("claude", stdout, exit_code=1)
    assert seen.kind == "other"  # A28: the caller reads a failed call (exit 1, no post)
    assert seen.limit is None and seen.usage is None


@pytest.mark.parametrize("info", [
    {"status": "rejected", "rateLimitType": "five_hour"},
    {"status": "rejected", "resetsAt": FIVE_H_RESET},
    {"status": "rejected", "resetsAt": "soon"},  # named, unreadably: still a limit, no reset
])
def test_A2_a_rejected_event_naming_its_reset_or_window_is_a_limit(info: dict[str, Any]) -> None:
    seen = classify("claude", rate_limit_event(**info), exit_code=1)
    assert seen.kind == "limit"
    want = datetime.fromtimestamp(FIVE_H_RESET, UTC) if info.get("resetsAt") == FIVE_H_RESET \
        else None
    assert seen.limit is not None and seen.limit.reset_at == want


@pytest.mark.parametrize("text", [
    THROTTLE_RESULT,
    "API Error: Request rejected (429) · Rate limited",
    "API Error: Server is temporarily limiting requests (not your usage limit) · "
    "usage limit reached",
])
def test_A2_the_throttles_own_words_are_no_notice(text: str) -> None:
    assert classify("claude", result(text, error=True), exit_code=1).kind == "other"


# -- A5: readings only from the CLI's own events ---------------------------------------------------


@pytest.mark.parametrize("provider", ["codex", "agy"])
@pytest.mark.parametrize("status", ["allowed", "allowed_warning", "rejected"])
def test_A5_a_claude_event_in_another_clis_answer_is_model_text(provider: str, status: str) -> None:
    said = rate_limit_event(status=status, utilization=0.97, rateLimitType="five_hour",
                            resetsAt=FIVE_H_RESET, unifiedWindows=windows(0.97, 0.5))
    seen = classify(provider, "Here is the event you asked for:\n" + said)
    assert seen.kind == "other"
    assert seen.usage is None and seen.limit is None


def test_A5_the_same_event_from_claude_is_a_reading() -> None:
    said = rate_limit_event(status="allowed_warning", utilization=0.97,
                            rateLimitType="five_hour", resetsAt=FIVE_H_RESET)
    seen = classify("claude", said)
    assert seen.usage is not None and seen.usage.utilization == 0.97


# -- the windows of every subscription turn --------------------------------------------------------


def test_unified_windows_on_a_plain_allowed_event_are_read() -> None:
    stdout = "\n".join([
        rate_limit_event(status="allowed", resetsAt=FIVE_H_RESET, rateLimitType="five_hour",
                         isUsingOverage=False, unifiedWindows=windows(0.31, 0.12)),
        result("hello", error=False),
    ])
    seen = classify("claude", stdout)
    assert seen.kind == "other"
    assert seen.usage is not None
    assert (seen.usage.window, seen.usage.utilization) == ("five_hour", 0.31)
    assert seen.usage.resets_at == datetime.fromtimestamp(FIVE_H_RESET, UTC)


def test_unified_windows_the_nearest_window_is_the_reading() -> None:
    said = rate_limit_event(status="allowed", unifiedWindows=windows(0.40, 0.83))
    seen = classify("claude", said)
    assert seen.usage is not None
    assert (seen.usage.window, seen.usage.utilization) == ("seven_day", 0.83)
    assert seen.usage.resets_at == datetime.fromtimestamp(SEVEN_D_RESET, UTC)


def test_unified_windows_a_warning_beside_its_windows() -> None:
    said = rate_limit_event(status="allowed_warning", utilization=0.92, surpassedThreshold=0.9,
                            rateLimitType="five_hour", resetsAt=FIVE_H_RESET,
                            unifiedWindows=windows(0.92, 0.2))
    seen = classify("claude", said)
    assert seen.usage is not None
    assert (seen.usage.utilization, seen.usage.threshold) == (0.92, 0.9)


@pytest.mark.parametrize("bad", [None, [], "x", {"five_hour": 3}, {"five_hour": {"x": 1}},
                                 {"five_hour": {"utilization": "high"}},
                                 {"five_hour": {"utilization": 99.0}}])
def test_unified_windows_unreadable_ones_give_no_reading(bad: Any) -> None:
    seen = classify("claude", rate_limit_event(status="allowed", unifiedWindows=bad))
    assert seen.kind == "other" and seen.usage is None


# -- API keys: spent credit and spend limits -------------------------------------------------------


def test_spent_credit_takes_the_engine_out_without_a_reset() -> None:
    seen = classify("claude", result("Credit balance is too low", error=True), exit_code=1)
    assert seen.kind == "limit" and seen.limit is not None and seen.limit.reset_at is None


def test_a_spend_limit_takes_the_engine_out_until_access_returns() -> None:
    text = ("API Error: 400 You have reached your specified API usage limits. You will regain "
            "access on 2027-01-01 at 00:00 UTC.")
    seen = classify("claude", result(text, error=True), exit_code=1)
    assert seen.kind == "limit" and seen.limit is not None
    assert seen.limit.reset_at == datetime(2027, 1, 1, tzinfo=UTC)
