"""Properties of the detectors (SPEC D, A5, A6, 0.3), checked with Hypothesis.

Linear time is checked by counting, not timing: every detail regex runs through
`autodev_core.detection._bounded`, whose `Meter` records how many characters the regexes saw.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from autodev_core.detection._bounded import MAX_WINDOW, Meter
from autodev_core.detection._streams import MODEL_TEXT_MAX_CHARS
from autodev_core.detection.classification import Classification, LimitNotice
from autodev_core.detection.reader import _classify, classify_output, detect_limit
from autodev_core.serialization import from_json, from_yaml, to_json, to_yaml

ZONES = ["UTC", "Europe/Lisbon", "America/New_York", "Asia/Kolkata", "Etc/GMT+5",
         "Australia/Lord_Howe", "America/Sao_Paulo", "Pacific/Chatham"]
PROVIDERS = ["claude", "codex", "agy"]

zones = st.sampled_from(ZONES).map(ZoneInfo)
instants = st.datetimes(
    min_value=datetime(2024, 1, 1), max_value=datetime(2030, 12, 31), timezones=zones
)

# Notices of every family, with the parts that vary drawn by Hypothesis.
hours12 = st.integers(1, 12)
minutes = st.integers(0, 59)
ampm = st.sampled_from(["am", "pm", "AM", "PM"])
months = st.sampled_from(["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep",
                          "Oct", "Nov", "Dec"])
days = st.integers(1, 28)
zone_suffix = st.sampled_from(["", " (Europe/Lisbon)", " (Etc/GMT+5)", " (Asia/Tokyo)",
                               " (America/New_York)", " (Nowhere/Else)"])


@st.composite
def clock(draw: st.DrawFn) -> str:
    hour, minute = draw(hours12), draw(minutes)
    return f"{hour}:{minute:02d}{draw(ampm)}" if minute else f"{hour}{draw(ampm)}"


@st.composite
def notices(draw: st.DrawFn) -> tuple[str, str]:
    family = draw(st.integers(0, 7))
    when = draw(clock())
    zone = draw(zone_suffix)
    date = f"{draw(months)} {draw(days)}"
    amount = draw(st.integers(0, 500))
    if family == 0:
        return "claude", f"Claude AI usage limit reached|{draw(st.integers(1, 2_500_000_000))}"
    if family == 1:
        return "claude", f"Claude usage limit reached. Your limit will reset at {when}{zone}."
    if family == 2:
        sep = draw(st.sampled_from(["∙", "·", "-"]))
        return "claude", f"You've hit your session limit {sep} resets {date}, {when}{zone}"
    if family == 3:
        return "claude", f"5-hour limit reached ∙ resets {when}{zone}"
    if family == 4:
        unit = draw(st.sampled_from(["hours", "minutes", "days", "seconds", "hour"]))
        return "codex", f"You’ve hit your usage limit. Try again in {amount} {unit}."
    if family == 5:
        year = draw(st.integers(2024, 2031))
        return "codex", f"■ You've hit your usage limit. Try again at {date}th, {year} {when}."
    if family == 6:
        return "codex", f"ERROR: You've hit your usage limit. or try again at {when}."
    return "agy", f"RESOURCE_EXHAUSTED (code 429): Individual quota reached. Resets in {amount}m."


@given(
    provider=st.sampled_from(PROVIDERS),
    stdout=st.text(max_size=600),
    stderr=st.text(max_size=600),
    exit_code=st.none() | st.integers(-300, 300),
    now=instants,
    local_tz=zones,
)
def test_D_never_raises_on_arbitrary_text(
    provider: str, stdout: str, stderr: str, exit_code: int | None, now: datetime,
    local_tz: ZoneInfo,
) -> None:
    result = classify_output(provider, stdout=stdout, stderr=stderr, exit_code=exit_code,
                             now=now, local_tz=local_tz)
    assert result.kind in ("limit", "network", "login", "other")


@given(
    provider=st.sampled_from(PROVIDERS),
    lines=st.lists(
        st.one_of(
            st.text(max_size=80),
            st.dictionaries(st.sampled_from(["type", "result", "message", "item", "msg", "error",
                                             "rate_limit_info", "status", "resetsAt", "text"]),
                            st.recursive(st.none() | st.booleans() | st.integers() | st.text(
                                max_size=40), lambda inner: st.lists(inner, max_size=3)
                                | st.dictionaries(st.text(max_size=8), inner, max_size=3),
                                max_leaves=8), max_size=5).map(json.dumps),
        ),
        max_size=8,
    ),
    now=instants,
)
def test_D_never_raises_on_malformed_events(provider: str, lines: list[str], now: datetime) -> None:
    result = classify_output(provider, stdout="\n".join(lines), now=now, local_tz=UTC)
    assert result.kind in ("limit", "network", "login", "other")


@given(notice=notices(), now=instants, local_tz=zones, where=st.sampled_from(["out", "err"]))
def test_A6_reported_reset_is_aware_and_later_than_now(
    notice: tuple[str, str], now: datetime, local_tz: ZoneInfo, where: str
) -> None:
    provider, text = notice
    found = detect_limit(provider, stdout=text if where == "out" else "",
                         stderr=text if where == "err" else "", now=now, local_tz=local_tz)
    assert found is not None, text
    if found.reset_at is not None:
        assert found.reset_at.utcoffset() is not None
        assert found.reset_at > now
        assert found.reset_at - now <= timedelta(days=400)


@given(
    notice=notices(),
    before=st.text(alphabet=st.characters(blacklist_characters="{[\r\n\x0b\x0c\x1c\x1d\x1e"
                                                                  "\x85\u2028\u2029"),
                   max_size=400),
    after=st.text(max_size=400),
    now=instants,
)
@example(  # issue 24: claude's model quoting an agy error line (found by a fresh random run)
    notice=("claude", "Claude usage limit reached. Your limit will reset at 1am."),
    before="AGY_ERROR:", after="", now=datetime(2024, 1, 1, tzinfo=UTC),
)
@example(  # and agy's own words before plain text: only `AGY_ERROR: {json}` is agy's line (A4)
    notice=("agy", "Individual quota reached. Resets in 45m."),
    before="AGY_ERROR:", after="", now=datetime(2024, 1, 1, tzinfo=UTC),
)
def test_A5_a_notice_inside_long_model_text_is_never_reported(
    notice: tuple[str, str], before: str, after: str, now: datetime
) -> None:
    provider, text = notice
    report = f"{before} {text} {after}"
    if len(report.strip()) <= MODEL_TEXT_MAX_CHARS:
        report = report + " " + "z" * (MODEL_TEXT_MAX_CHARS + 1)
    assert detect_limit(provider, stdout=report, now=now, local_tz=UTC) is None
    event = {"type": "result", "subtype": "success", "is_error": False, "result": report}
    assert detect_limit(provider, stdout=json.dumps(event), now=now, local_tz=UTC) is None


@given(notice=notices(), now=instants)
def test_0_3_limit_notice_and_classification_round_trip(
    notice: tuple[str, str], now: datetime
) -> None:
    provider, text = notice
    result = classify_output(provider, stderr=text, exit_code=1, now=now, local_tz=UTC)
    assert result.limit is not None
    assert from_json(to_json(result), Classification) == result
    assert from_yaml(to_yaml(result), Classification) == result
    assert from_json(to_json(result.limit), LimitNotice) == result.limit
    assert from_yaml(to_yaml(result.limit), LimitNotice) == result.limit


@pytest.mark.parametrize("kind", ["network", "login", "other"])
def test_0_3_other_kinds_round_trip(kind: str) -> None:
    text = "getaddrinfo ENOTFOUND" if kind == "network" else ""
    value = Classification(kind=kind, text=text)  # type: ignore[arg-type]
    assert from_json(to_json(value), Classification) == value
    assert from_yaml(to_yaml(value), Classification) == value


# --- linear time, by counting -------------------------------------------------------------

ADVERSARIAL = [
    "limit reached ",
    "hit your hit your limit",
    "usage limit reached|",
    "You've hit your usage limit. try again in 1 1 1 1 ",
    "resets resets 12:12 12:12 ",
    "429 RESOURCE_EXHAUSTED ",
    "quota reached Resets in 1h1m1s1h1m1s ",
    "ECONNREFUSED getaddrinfo ",
    "a" * 50 + " ",
    "(" * 30 + "Etc/GMT+5" + ")" * 30,
]


def _work(provider: str, stdout: str, stderr: str) -> Meter:
    meter = Meter()
    _classify(provider, stdout, stderr, None, datetime(2026, 1, 1, tzinfo=UTC), UTC, meter)
    return meter


@pytest.mark.parametrize("chunk", ADVERSARIAL)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_D_linear_time_on_adversarial_stderr(chunk: str, provider: str) -> None:
    n = 2_000
    small = _work(provider, "", chunk * n)
    large = _work(provider, "", chunk * (8 * n))
    for meter in (small, large):
        assert meter.longest <= MAX_WINDOW  # every regex sees a bounded window
    # Regex work does not grow faster than the input (here it is capped outright) ...
    assert large.chars <= 8 * small.chars + MAX_WINDOW
    # ... and keyword scans read each character a constant number of times.
    assert large.scanned_chars <= 8 * small.scanned_chars + 8 * len(chunk)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_D_linear_time_on_many_events(provider: str) -> None:
    event = json.dumps({"type": "result", "subtype": "success", "is_error": True,
                        "result": "You've hit your limit · resets 99pm (X)"})
    n = 200
    small = _work(provider, "\n".join([event] * n), "")
    large = _work(provider, "\n".join([event] * (8 * n)), "")
    assert small.calls > 0
    assert large.chars <= 8 * small.chars + MAX_WINDOW
    assert large.longest <= MAX_WINDOW
