"""Limit notices, network errors and login, rule by rule (SPEC A2-A7, A26, A32, A37, A38, D)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo

import pytest

from autodev_core.detection._bounded import MAX_WINDOW, Meter
from autodev_core.detection._streams import MODEL_TEXT_MAX_CHARS
from autodev_core.detection.classification import Classification, LimitNotice
from autodev_core.detection.reader import (
    _classify,
    classify_output,
    detect_limit,
    detect_login_error,
    detect_network_error,
)

LISBON = ZoneInfo("Europe/Lisbon")
NEW_YORK = ZoneInfo("America/New_York")
NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)  # 09:00 in Lisbon (WET, +00:00)


def limit(
    provider: str,
    stdout: str = "",
    stderr: str = "",
    *,
    now: datetime = NOW,
    tz: tzinfo = LISBON,
) -> LimitNotice | None:
    return detect_limit(provider, stdout=stdout, stderr=stderr, now=now, local_tz=tz)


def kind(
    provider: str, stdout: str = "", stderr: str = "", exit_code: int | None = 1
) -> Classification:
    return classify_output(
        provider, stdout=stdout, stderr=stderr, exit_code=exit_code, now=NOW, local_tz=LISBON
    )


def reset_of(provider: str, text: str, **kwargs: object) -> datetime | None:
    notice = limit(provider, stderr=text, **kwargs)  # type: ignore[arg-type]
    assert notice is not None, text
    return notice.reset_at


# --- A2: claude ---------------------------------------------------------------------------


def test_A2_rate_limit_event_rejected_is_a_limit_with_resetsAt() -> None:
    line = json.dumps({"type": "rate_limit_event", "rate_limit_info": {
        "status": "rejected", "resetsAt": 1796122800, "rateLimitType": "five_hour"}})
    notice = limit("claude", stdout=line)
    assert notice is not None
    assert notice.reset_at == datetime.fromtimestamp(1796122800, UTC)


@pytest.mark.parametrize("status", ["allowed", "allowed_warning"])
@pytest.mark.parametrize("overage", ["rejected", "allowed", None])
def test_A2_allowed_events_are_never_limits(status: str, overage: str | None) -> None:
    info: dict[str, object] = {"status": status, "resetsAt": 1796122800}
    if overage:
        info["overageStatus"] = overage
    line = json.dumps({"type": "rate_limit_event", "rate_limit_info": info})
    assert limit("claude", stdout=line) is None
    assert kind("claude", stdout=line, exit_code=0).kind == "other"


def test_A2_epoch_after_the_pipe() -> None:
    assert reset_of("claude", "Claude AI usage limit reached|1796122800") == (
        datetime.fromtimestamp(1796122800, UTC)
    )


def test_A2_etc_gmt_plus_5_is_utc_minus_5() -> None:
    text = "Claude usage limit reached. Your limit will reset at 1pm (Etc/GMT+5)."
    reset = reset_of("claude", text)
    assert reset == datetime(2026, 12, 1, 18, 0, tzinfo=UTC)


@pytest.mark.parametrize("separator", ["∙", "·", "-"])
def test_A2_both_separators_and_labels(separator: str) -> None:
    for label in ("", "session ", "weekly ", "Opus "):
        text = f"You've hit your {label}limit {separator} resets 2:30pm (America/New_York)"
        assert reset_of("claude", text) == datetime(2026, 12, 1, 14, 30, tzinfo=NEW_YORK)


def test_A2_five_hour_and_weekly_limit_reached() -> None:
    assert reset_of("claude", "5-hour limit reached ∙ resets 5am") == (
        datetime(2026, 12, 2, 5, 0, tzinfo=LISBON)
    )
    assert reset_of("claude", "Opus weekly limit reached ∙ resets Dec 3, 9am") == (
        datetime(2026, 12, 3, 9, 0, tzinfo=LISBON)
    )


@pytest.mark.parametrize("date_text", ["Dec 23 at 4pm", "Dec 23, 4pm", "Dec 23rd, 4pm"])
def test_A2_dates_without_year(date_text: str) -> None:
    reset = reset_of("claude", f"You've hit your limit · resets {date_text} (Europe/Lisbon)")
    assert reset == datetime(2026, 12, 23, 16, 0, tzinfo=LISBON)


def test_A2_usage_limit_try_again_in_hours() -> None:
    reset = reset_of("claude", "Usage limit reached. Try again in 2 hours.")
    assert reset == NOW + timedelta(hours=2)


@pytest.mark.parametrize(
    "text",
    [
        "Approaching usage limit · resets at 2am",
        "You've used 90% of your weekly limit · resets Oct 31, 9am",
        "Context limit reached · /compact or /clear to continue",
        "Claude Opus 4 limit reached, now using Sonnet 4",
        "API Error: Rate limit reached",
        "Error: Output limit reached for this response",
        "Maximum recursion limit reached",
        "Tool call limit reached (25); stopping.",
    ],
)
def test_A7_warnings_context_and_fallbacks_are_not_limits(text: str) -> None:
    assert limit("claude", stdout=text) is None


# --- A3: codex ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "delta"),
    [
        ("3 hours 2 minutes", timedelta(hours=3, minutes=2)),
        ("2 days 17 hours 14 minutes", timedelta(days=2, hours=17, minutes=14)),
        ("1 day 1 hour 1 minute", timedelta(days=1, hours=1, minutes=1)),
        ("45 seconds", timedelta(seconds=45)),
        ("5 days 22 hours 11\nminutes", timedelta(days=5, hours=22, minutes=11)),
    ],
)
def test_A3_codex_relative_durations(written: str, delta: timedelta) -> None:
    text = f"■ You've hit your usage limit. Upgrade to Pro or try again in {written}."
    assert reset_of("codex", text) == NOW + delta


@pytest.mark.parametrize("apostrophe", ["'", "’"])
@pytest.mark.parametrize("prefix", ["", "ERROR: ", "■ "])
def test_A3_apostrophes_and_prefixes(apostrophe: str, prefix: str) -> None:
    text = f"{prefix}You{apostrophe}ve hit your usage limit. Try again at 3:54 AM."
    assert reset_of("codex", text) == datetime(2026, 12, 2, 3, 54, tzinfo=LISBON)


def test_A3_clock_time_is_machine_local() -> None:
    text = "You've hit your usage limit. Try again at 11:05 PM."
    assert reset_of("codex", text, tz=NEW_YORK) == datetime(2026, 12, 1, 23, 5, tzinfo=NEW_YORK)


@pytest.mark.parametrize("day", ["1st", "2nd", "3rd", "4th", "11th", "21st", "22nd", "23rd"])
def test_A3_full_date_with_ordinal_suffix(day: str) -> None:
    text = f"You've hit your usage limit. Visit … or try again at Dec {day}, 2026 6:49 AM."
    number = int(day[:-2])
    expected = datetime(2026, 12, number, 6, 49, tzinfo=LISBON)
    reset = reset_of("codex", text)
    assert reset == (expected if expected > NOW else None)


def test_A3_try_again_later_has_no_reset() -> None:
    notice = limit("codex", stderr="You've hit your usage limit. Try again later.")
    assert notice is not None and notice.reset_at is None


def test_A3_codex_exec_json_error_events() -> None:
    stdout = "\n".join(json.dumps(e) for e in [
        {"type": "thread.started", "thread_id": "t"},
        {"type": "turn.started"},
        {"type": "error", "message": "You’ve hit your usage limit. Try again in 2 hours."},
        {"type": "turn.failed", "error": {"message": "You’ve hit your usage limit."}},
    ])
    assert limit("codex", stdout=stdout) == LimitNotice(
        provider="codex", reset_at=NOW + timedelta(hours=2),
        text="You've hit your usage limit. Try again in 2 hours.",
    )


# --- A4: agy ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "delta"),
    [
        ("2h31m33s", timedelta(hours=2, minutes=31, seconds=33)),
        ("45m", timedelta(minutes=45)),
        ("1h", timedelta(hours=1)),
        ("30s", timedelta(seconds=30)),
        ("108h48m29s", timedelta(hours=108, minutes=48, seconds=29)),
    ],
)
def test_A4_agy_resets_in_durations(written: str, delta: timedelta) -> None:
    text = f"RESOURCE_EXHAUSTED (code 429): Individual quota reached. Resets in {written}."
    assert reset_of("agy", text) == NOW + delta


def test_A4_agy_error_line_on_stdout_with_exit_3() -> None:
    line = 'AGY_ERROR: {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "quota"}'
    result = kind("agy", stdout=line, exit_code=3)
    assert result.kind == "limit" and result.limit is not None
    assert result.limit.reset_at is None


def test_A4_a_bare_429_counts_for_agy_only() -> None:
    text = "Error: HTTP 429 Too Many Requests"
    assert limit("agy", stderr=text) is not None
    assert limit("claude", stderr=text) is None
    assert limit("codex", stderr=text) is None


@pytest.mark.parametrize(
    "text",
    [
        '{"error":{"code":503,"message":"No capacity available for model x on the server",'
        '"status":"UNAVAILABLE","details":[{"reason":"MODEL_CAPACITY_EXHAUSTED"}]}}',
        "429 MODEL_CAPACITY_EXHAUSTED: retrying in 15s",
        "Our servers are overloaded (HTTP 429). Please try again.",
    ],
)
def test_A4_capacity_errors_are_not_limits(text: str) -> None:
    assert kind("agy", stderr=text).kind == "other"


# --- A5: short notices --------------------------------------------------------------------

NOTICE = "You've hit your limit · resets 2:30pm (America/New_York)"


def _padded(total: int) -> str:
    """The notice inside model text of exactly `total` characters after trimming."""
    pad = total - len(NOTICE) - 1
    return NOTICE + " " + "x" * pad


def test_A5_free_stdout_at_300_chars_is_examined_and_301_is_not() -> None:
    assert len(_padded(MODEL_TEXT_MAX_CHARS)) == 300
    assert limit("claude", stdout="  " + _padded(300) + "\n\n") is not None
    assert limit("claude", stdout=_padded(301)) is None


def test_A5_result_text_boundary() -> None:
    for size, found in ((300, True), (301, False)):
        line = json.dumps({"type": "result", "subtype": "success", "is_error": True,
                           "result": _padded(size)})
        assert (limit("claude", stdout=line) is not None) is found


def test_A5_assistant_and_agent_message_text_boundary() -> None:
    for size, found in ((300, True), (301, False)):
        claude = json.dumps({"type": "assistant", "message": {"content": [
            {"type": "text", "text": _padded(size)}]}})
        codex = json.dumps({"type": "item.completed", "item": {
            "type": "agent_message", "text": _padded(size)}})
        assert (limit("claude", stdout=claude) is not None) is found
        assert (limit("codex", stdout=codex) is not None) is found


def test_A5_all_free_stdout_counts_together() -> None:
    # Two short lines that together pass 300 characters are one long model text.
    stdout = NOTICE + "\n" + "y" * 300
    assert limit("claude", stdout=stdout) is None


def test_A5_stderr_and_cli_events_are_read_whatever_their_length() -> None:
    long_stderr = "debug line\n" * 2_000 + NOTICE + "\n" + "more\n" * 2_000
    assert limit("claude", stderr=long_stderr) is not None
    event = json.dumps({"type": "error", "message": "x" * 5_000 + " You've hit your usage "
                        "limit. Try again in 2 hours."})
    assert limit("codex", stdout=event) is not None


def test_A5_tool_output_is_nobodys_notice() -> None:
    line = json.dumps({"type": "user", "message": {"content": [
        {"type": "tool_result", "content": NOTICE}]}})
    assert limit("claude", stdout=line) is None


# --- A6 and A38: reading the reset --------------------------------------------------------


def test_A6_clock_time_rolls_only_when_more_than_ten_minutes_past() -> None:
    """A6 (settled in round 4): a clock time read at or before now is the reset just met again
    while it lies at most ten minutes back, probed one minute after the notice; only further
    back does it roll to the next day. (Before round 4 it rolled as soon as now >= t, A38.)"""
    at_five = datetime(2026, 12, 1, 5, 0, tzinfo=LISBON)
    text = "5-hour limit reached ∙ resets 5am"
    assert reset_of("claude", text, now=at_five - timedelta(seconds=1)) == at_five
    for behind in (timedelta(0), timedelta(seconds=59), timedelta(minutes=10)):
        now = at_five + behind
        assert reset_of("claude", text, now=now) == now + timedelta(minutes=1), behind
    too_late = at_five + timedelta(minutes=10, seconds=1)
    assert reset_of("claude", text, now=too_late) == at_five + timedelta(days=1)


def test_A6_clock_time_across_a_dst_change_is_wall_clock() -> None:
    # Lisbon leaves summer time at 02:00 on 25 Oct 2026; "9am" is 09:00 WET = 09:00 UTC.
    now = datetime(2026, 10, 24, 23, 0, tzinfo=UTC)  # 00:00 WEST on the 25th
    reset = reset_of("claude", "5-hour limit reached ∙ resets 9am", now=now)
    assert reset is not None and reset.astimezone(UTC) == datetime(2026, 10, 25, 9, 0, tzinfo=UTC)


def test_A6_date_without_year_is_the_next_occurrence() -> None:
    reset = reset_of("claude", "Opus weekly limit reached ∙ resets Nov 3, 9am")
    assert reset == datetime(2027, 11, 3, 9, 0, tzinfo=LISBON)


def test_A6_full_date_in_the_past_gives_no_reset() -> None:
    text = "You've hit your usage limit. Try again at Nov 29th, 2026 6:49 AM."
    assert reset_of("codex", text) is None


def test_A6_epoch_in_the_past_gives_no_reset_and_milliseconds_are_read() -> None:
    assert reset_of("claude", "Claude AI usage limit reached|1700000000") is None
    line = json.dumps({"type": "rate_limit_event", "rate_limit_info": {
        "status": "rejected", "resetsAt": 1796122800000}})
    notice = limit("claude", stdout=line)
    assert notice is not None and notice.reset_at == datetime.fromtimestamp(1796122800, UTC)


def test_A6_unknown_zone_falls_back_to_the_machine_zone() -> None:
    reset = reset_of("claude", "You've hit your limit · resets 2pm (Mars/Olympus)", tz=NEW_YORK)
    assert reset == datetime(2026, 12, 1, 14, 0, tzinfo=NEW_YORK)


def test_A6_zone_named_by_the_notice_beats_the_machine_zone() -> None:
    reset = reset_of("claude", "You've hit your limit · resets 2pm (Asia/Tokyo)", tz=NEW_YORK)
    assert reset == datetime(2026, 12, 2, 14, 0, tzinfo=ZoneInfo("Asia/Tokyo"))


# --- A26, A37: network --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("provider", "stderr"),
    [
        ("claude", "getaddrinfo ENOTFOUND api.anthropic.com"),
        ("claude", "Error: connect ECONNREFUSED 127.0.0.1:443"),
        ("claude", "Error: read ECONNRESET"),
        ("claude", "Error: connect ETIMEDOUT 160.79.104.10:443"),
        ("codex", "failed to lookup address information: Name or service not known"),
        ("codex", "Could not resolve host: api.openai.com"),
        ("codex", "error sending request for url (https://api.openai.com/v1/responses)"),
        ("agy", "dial tcp: lookup cloudcode-pa.googleapis.com: no such host"),
        ("agy", "dial tcp 1.2.3.4:443: connect: connection refused"),
        ("agy", "read tcp 10.0.0.2:5000->1.2.3.4:443: i/o timeout"),
        ("agy", "net/http: TLS handshake timeout"),
    ],
)
def test_A26_network_errors_in_each_cli_wording(provider: str, stderr: str) -> None:
    assert kind(provider, stderr=stderr).kind == "network"
    assert detect_network_error(provider, stderr=stderr, exit_code=1) is not None


def test_A37_partial_codex_output_is_an_outage_while_it_streams() -> None:
    stderr = "Reconnecting... 1/5\nfailed to lookup address information\n"
    assert kind("codex", stderr=stderr, exit_code=None).kind == "network"
    assert kind("codex", stderr="Reconnecting... 1/5\n", exit_code=None).kind == "other"
    assert kind("codex", stderr="Reconnecting... waiting for network", exit_code=None).kind == (
        "network"
    )


def test_A26_a_call_that_ended_well_is_not_an_outage() -> None:
    stderr = "API Error (Connection error.) · Retrying in 1 seconds… (attempt 1/10)"
    assert kind("claude", stderr=stderr, exit_code=0).kind == "other"
    assert kind("claude", stderr=stderr, exit_code=1).kind == "network"


def test_A26_model_prose_about_network_errors_is_not_an_outage() -> None:
    assert kind("claude", stdout="The server said ECONNREFUSED; start it first.").kind == "other"
    assert kind("claude", stdout="API Error: Connection error.").kind == "network"


def test_A40_precedence_limit_then_login_then_network() -> None:
    both = "connect ECONNREFUSED\nYou've hit your usage limit. Try again in 2 hours."
    assert kind("codex", stderr=both).kind == "limit"
    login = "Not logged in · Please run /login"
    assert kind("claude", stdout=login, stderr="getaddrinfo ENOTFOUND x").kind == "login"


# --- A32: login ---------------------------------------------------------------------------


def test_A32_claude_not_logged_in() -> None:
    result = kind("claude", stdout="Not logged in · Please run /login")
    assert result.kind == "login" and result.text == "Not logged in · Please run /login"
    assert detect_login_error("claude", stdout="Not logged in · Please run /login") is not None


def test_A32_codex_and_agy_have_no_login_check() -> None:
    for provider in ("codex", "agy"):
        assert kind(provider, stdout="Not logged in · Please run /login").kind == "other"
        assert detect_login_error(provider, stdout="Not logged in") is None


# --- SPEC D: total, pure, bounded ---------------------------------------------------------


@pytest.mark.parametrize(
    "stdout",
    [
        "{" * 100_000,
        "[" * 100_000,
        '{"type": "result", "result": ',
        '{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":"soon"}}',
        '{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1e400}}',
        '{"type":"rate_limit_event","rate_limit_info":"rejected"}',
        "\x00\ud800 resets 99:99pm (../../etc/passwd)",
        "Claude AI usage limit reached|99999999999999999999",
        "You've hit your usage limit. Try again in 999999999 days.",
        "You've hit your limit · resets Feb 30, 4pm",
    ],
)
def test_D_never_raises_on_odd_output(stdout: str) -> None:
    result = classify_output("claude", stdout=stdout, stderr=stdout, now=NOW, local_tz=LISBON)
    assert result.kind in ("limit", "network", "login", "other")
    if result.limit is not None and result.limit.reset_at is not None:
        assert result.limit.reset_at > NOW


def test_D_misuse_raises() -> None:
    with pytest.raises(ValueError, match="unknown provider"):
        classify_output("gemini", now=NOW, local_tz=LISBON)
    with pytest.raises(ValueError, match="aware"):
        classify_output("claude", now=datetime(2026, 1, 1), local_tz=LISBON)


def test_D_regexes_only_see_bounded_windows() -> None:
    meter = Meter()
    text = ("limit reached hit your usage limit 429 RESOURCE_EXHAUSTED resets " * 20_000)
    _classify("agy", text, text, 1, NOW, LISBON, meter)
    assert meter.calls > 0
    assert meter.longest <= MAX_WINDOW


def test_A3_terminal_colour_codes_are_not_words() -> None:
    stderr = "\x1b[31m\x1b[1mERROR:\x1b[0m You've hit your usage limit. Try again in 2 hours."
    assert reset_of("codex", stderr) == NOW + timedelta(hours=2)
    coloured = "\x1b[2m" + _padded(300) + "\x1b[0m"  # 300 characters once the codes are gone
    assert limit("claude", stdout=coloured) is not None


@pytest.mark.parametrize(
    ("written", "zone"),
    [("IST", "Asia/Kolkata"), ("EST", "America/New_York"), ("PDT", "America/Los_Angeles")],
)
def test_A6_common_zone_abbreviations_read_as_their_wall_clock(written: str, zone: str) -> None:
    text = f"Claude usage limit reached. Your limit will reset at 11:30pm {written}."
    assert reset_of("claude", text) == datetime(2026, 12, 1, 23, 30, tzinfo=ZoneInfo(zone))


def test_A6_display_offset_is_read_as_written() -> None:
    text = "Usage limit reached for gemini-3-flash. Access resets at 10:57 PM GMT-3."
    assert reset_of("agy", text) == datetime(2026, 12, 2, 1, 57, tzinfo=UTC)


def test_A3_codex_app_server_error_notifications() -> None:
    line = json.dumps({"method": "error", "params": {"error": {
        "message": "You've hit your usage limit. Try again in 5 minutes.",
        "codexErrorInfo": "usageLimitExceeded"}}})
    notice = limit("codex", stdout=line)
    assert notice is not None and notice.reset_at == NOW + timedelta(minutes=5)
    done = json.dumps({"method": "turn/completed", "params": {"turn": {"status": "completed"}}})
    assert kind("codex", stdout=done, stderr="connection reset by peer").kind == "other"


def test_A6_reset_is_read_from_the_notice_paragraph_only() -> None:
    text = "5-hour limit reached\n\nCurrent week (all models)\n  35% used\n  Resets Dec 15, 3:30pm"
    notice = limit("claude", stdout=text)
    assert notice is not None and notice.reset_at is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Rate limited: quota reached, please retry in 30s", NOW + timedelta(seconds=30)),
        ("You've hit your usage limit. Please try again after 3:30 PM.",
         datetime(2026, 12, 1, 15, 30, tzinfo=LISBON)),
        ("You've hit your usage limit. Try again after 2 hours.", NOW + timedelta(hours=2)),
    ],
)
def test_A6_retry_in_and_after(text: str, expected: datetime) -> None:
    assert reset_of("agy", text) == expected


def test_D_huge_numbers_in_events_do_not_raise() -> None:
    line = '{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":' + (
        "9" * 1000 + "}}"
    )
    notice = limit("claude", stdout=line)
    assert notice is not None and notice.reset_at is None


def test_A5_codex_stderr_transcript_prompt_and_messages_are_not_cli_words() -> None:
    quote = "You've hit your usage limit. Try again in 2 hours."
    long_message = "I looked into it. " + quote + " " + "More detail. " * 30
    for ts in ("", "[2025-08-01T12:00:00] "):
        transcript = (
            f"{ts}OpenAI Codex v0.39.0\n--------\n{ts}user\n{quote}\n"
            f"{ts}codex\n{long_message}\n{ts}tokens used\n120\n"
        )
        assert limit("codex", stderr=transcript) is None
        assert limit("codex", stderr=transcript + f"{ts}ERROR: {quote}\n") is not None
    # The same transcript from another CLI is read whole: only codex writes it.
    assert limit("agy", stderr=f"user\n{quote}\n") is not None


def test_A2_the_status_alone_decides_whatever_the_overage_fields_say() -> None:
    info = {"status": "rejected", "resetsAt": 1796122800, "rateLimitType": "five_hour",
            "overageStatus": "allowed", "isUsingOverage": True}
    for overage in (True, False):
        info["isUsingOverage"] = overage
        line = json.dumps({"type": "rate_limit_event", "rate_limit_info": info})
        notice = limit("claude", stdout=line)
        assert notice is not None
        assert notice.reset_at == datetime.fromtimestamp(1796122800, UTC)
    info["status"] = "allowed_warning"
    assert limit("claude", stdout=json.dumps({"type": "rate_limit_event",
                                                "rate_limit_info": info})) is None


@pytest.mark.parametrize(
    ("line", "delta"),
    [
        ('AGY_ERROR: {"status": "RESOURCE_EXHAUSTED", "retryAfter": "2h31m33s"}',
         timedelta(hours=2, minutes=31, seconds=33)),
        ('AGY_ERROR: {"code": 429, "retry_after_seconds": 120}', timedelta(seconds=120)),
        ('AGY_ERROR: {"code": 429, "resets_in_seconds": 13872}', timedelta(seconds=13872)),
        ('AGY_ERROR: {"code": 429, "quotaResetDelay": "25h20m26.17s"}',
         timedelta(hours=25, minutes=20, seconds=26.17)),
    ],
)
def test_A4_agy_error_json_delay_keys(line: str, delta: timedelta) -> None:
    notice = limit("agy", stdout=line)
    assert notice is not None and notice.reset_at == NOW + delta


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        ("10 de jul. de 2027, 11:52", datetime(2027, 7, 10, 11, 52, tzinfo=LISBON)),
        ("29 Apr 2027 6:49 AM", datetime(2027, 4, 29, 6, 49, tzinfo=LISBON)),
        ("3 de dez. de 2026, 09:00", datetime(2026, 12, 3, 9, 0, tzinfo=LISBON)),
    ],
)
def test_A3_localised_day_first_dates(written: str, expected: datetime) -> None:
    text = f"You've hit your usage limit. Upgrade your plan to continue, or try again at {written}."
    assert reset_of("codex", text) == expected


def test_A4_agy_error_line_after_a_prefix() -> None:
    line = '[12:00:01] AGY_ERROR: {"code": 429, "message": "Quota reached. Resets in 1h."}'
    notice = limit("agy", stdout="some answer text\n" + line)
    assert notice is not None and notice.reset_at == NOW + timedelta(hours=1)
