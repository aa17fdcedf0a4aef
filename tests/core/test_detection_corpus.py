"""The notice corpus (tests/fixtures/notices/): real wordings, each with its source.

Every case checks the kind (A2-A7, A26, A32, A37) and, for a limit, the reset instant to the
second (A6) — the bar the held-out corpus sets is the kind and the reset within 60 s.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from helpers.corpus import notice_cases

from autodev_core.detection import classify_output, detect_limit

KINDS = {"limit", "network", "login", "other"}
TOLERANCE_S = 60


CASES = notice_cases()


def _instant(value: Any) -> datetime:
    if isinstance(value, int):
        return datetime.fromtimestamp(value, UTC)
    parsed = datetime.fromisoformat(str(value))
    assert parsed.utcoffset() is not None, f"corpus instant {value!r} needs an offset"
    return parsed


def test_corpus_is_well_formed() -> None:
    names = [case.values[0]["name"] for case in CASES]
    assert len(names) >= 80, "the corpus should cover the families broadly"
    assert len(names) == len(set(names)), "case names are unique"
    for param in CASES:
        case = param.values[0]
        assert case["provider"] in ("claude", "codex", "agy"), case["name"]
        assert case["expect"] in KINDS, case["name"]
        assert str(case.get("source", "")).strip(), f"{case['name']} names its source"
        if case["expect"] == "limit":
            assert "reset_at" in case, f"{case['name']}: a limit states its reset (or null)"


@pytest.mark.parametrize("case", CASES)
def test_A2_A7_corpus_case(case: dict[str, Any]) -> None:
    now = _instant(case["now"])
    local_tz = ZoneInfo(case["local_tz"])
    kwargs: dict[str, Any] = {
        "stdout": case.get("stdout") or "",
        "stderr": case.get("stderr") or "",
        "exit_code": case.get("exit"),
        "now": now,
        "local_tz": local_tz,
    }
    result = classify_output(case["provider"], **kwargs)
    assert result.kind == case["expect"], (case["name"], result)
    notice = detect_limit(case["provider"], **kwargs)
    if case["expect"] != "limit":
        if case["expect"] != "other" or notice is None:
            return
        pytest.fail(f"{case['name']}: detect_limit found {notice} in a non-limit")
    assert notice is not None and result.limit is not None
    assert notice == result.limit
    assert 0 < len(notice.text) <= 240
    expected = case["reset_at"]
    if expected is None:
        assert notice.reset_at is None, (case["name"], notice)
        return
    assert notice.reset_at is not None, (case["name"], notice)
    delta = abs((notice.reset_at - _instant(expected)).total_seconds())
    assert delta <= TOLERANCE_S, (case["name"], notice.reset_at.isoformat(), expected)
    assert notice.reset_at > now
