"""Which limit an output reports when it holds several (SPEC D, A2, A6; docs/limits.md).

The rule, stated here on its own: the first structured limit whose reset resolves wins; else
the first notice whose reset can be read, reported in the words of the last structured limit
when there is one; else the last structured limit's words, else the first notice's, without a
reset. A stream's later structured event is the provider's newer word on the same limit, so
with no reset anywhere it is the one reported.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from helpers.clock import T0 as NOW

from autodev_core.detection import classify_output, prepare_classification


def _event(status: str, resets_at: int | None = None, kind: str = "five_hour") -> str:
    info: dict[str, object] = {"status": status, "rateLimitType": kind}
    if resets_at is not None:
        info["resetsAt"] = resets_at
    return json.dumps({"type": "rate_limit_event", "rate_limit_info": info})


def _read(stdout: str) -> tuple[datetime | None, str]:
    """classify_output and the read-once path must agree; return what both say."""
    fresh = classify_output("claude", stdout=stdout, exit_code=1, now=NOW, local_tz=UTC)
    once = prepare_classification("claude", stdout=stdout, exit_code=1).at(NOW, UTC)
    assert fresh == once
    assert fresh.kind == "limit" and fresh.limit is not None
    return fresh.limit.reset_at, fresh.limit.text


IN_AN_HOUR = int((NOW + timedelta(hours=1)).timestamp())
IN_TWO_HOURS = int((NOW + timedelta(hours=2)).timestamp())


def test_D_A2_several_structured_limits_without_a_reset_report_the_last() -> None:
    reset, text = _read(_event("rejected", kind="five_hour") + "\n"
                        + _event("blocked", kind="seven_day") + "\n")
    assert reset is None
    assert "status blocked" in text and "seven_day" in text


@pytest.mark.parametrize("order", ["reset-first", "reset-second"])
def test_D_A6_the_first_structured_limit_with_a_reset_wins(order: str) -> None:
    with_reset = _event("rejected", IN_AN_HOUR, kind="five_hour")
    without = _event("blocked", kind="seven_day")
    lines = [with_reset, without] if order == "reset-first" else [without, with_reset]
    reset, text = _read("\n".join(lines) + "\n")
    assert reset == NOW + timedelta(hours=1)
    assert "five_hour" in text


def test_D_A6_of_two_structured_resets_the_first_wins() -> None:
    reset, text = _read(_event("rejected", IN_TWO_HOURS, kind="seven_day") + "\n"
                        + _event("rejected", IN_AN_HOUR, kind="five_hour") + "\n")
    assert reset == NOW + timedelta(hours=2)
    assert "seven_day" in text


def test_D_A2_a_notice_reset_is_reported_in_the_last_structured_words() -> None:
    stdout = (_event("rejected", kind="five_hour") + "\n" + _event("blocked", kind="seven_day")
              + "\nYou've hit your limit · resets 3pm\n")
    reset, text = _read(stdout)
    assert reset == datetime(2026, 12, 1, 15, 0, tzinfo=UTC)
    assert "status blocked" in text and "seven_day" in text


def test_D_A6_without_any_structured_limit_the_first_notice_is_reported() -> None:
    stdout = "You've hit your limit\nClaude AI usage limit reached\n"
    reset, text = _read(stdout)
    assert reset is None
    assert text.startswith("You've hit your limit")
