"""A6 as the real CLIs print resets: cut down to the minute, and met again within that minute.

Real codex 0.171 prints a server reset at 00:54:58 as `… or try again at 12:54 AM.`; a call
refused again at 00:54:59 prints the same line. Real claude 2.1.332 does the same in its plain
text (`resets 3:11am (America/New_York)`, `resets Dec 10, 5am (…)`). SPEC A6, settled in round
4: a clock time names the start of its printed minute; it is "already past" only when more than
ten minutes before now; one read at or before now within those ten minutes is today's (a date's
year this year's) and is probed again one minute after the notice — never at once, never a day
later. The model (tests/helpers/reset_model.py) states that rule on its own, in instants.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo

from helpers.reset_model import (
    GRACE,
    PROBE,
    GapBeforeTheReset,
    clock_days,
    instants_showing,
    read_reset,
)
from hypothesis import example, given
from hypothesis import strategies as st

from autodev_core.detection import classify_output, detect_limit

NEW_YORK = ZoneInfo("America/New_York")
ZONES = (UTC, NEW_YORK, ZoneInfo("Europe/Lisbon"), ZoneInfo("Asia/Kolkata"),
         ZoneInfo("Australia/Adelaide"))


def codex_clock(reset: datetime, zone: tzinfo) -> str:
    """codex 0.171's notice for a reset on the same local day, in the process's zone."""
    local = reset.astimezone(zone)
    return (
        "ERROR: You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), "
        "visit https://chatgpt.com/codex/settings/usage to purchase more credits or try again "
        f"at {local.strftime('%-I:%M %p')}."
    )


def claude_clock(reset: datetime, zone: ZoneInfo) -> str:
    """claude 2.1.332's plain-text notice: `3am` on the hour, `3:11am` otherwise."""
    local = reset.astimezone(zone)
    minute = "" if local.minute == 0 else f":{local.minute:02d}"
    when = f"{local.strftime('%-I')}{minute}{local.strftime('%p').lower()}"
    return f"You've hit your 5-hour limit · resets {when} ({zone.key})"


def read(provider: str, text: str, now: datetime, zone: tzinfo) -> datetime | None:
    notice = detect_limit(provider, stderr=text, exit_code=1, now=now, local_tz=zone)
    assert notice is not None, text
    return notice.reset_at


def minute_of(instant: datetime, zone: tzinfo) -> datetime:
    local = instant.astimezone(zone)
    return local.replace(second=0, microsecond=0)


# -- the cases, pinned --------------------------------------------------------------------


def test_A6_codex_met_again_within_its_printed_minute_is_probed_in_a_minute_not_tomorrow() -> None:
    server_reset = datetime(2026, 12, 8, 0, 54, 58, tzinfo=NEW_YORK)
    notice = codex_clock(server_reset, NEW_YORK)
    assert notice.endswith("try again at 12:54 AM.")
    first = datetime(2026, 12, 7, 23, 10, 3, tzinfo=NEW_YORK)  # the first refusal
    assert read("codex", notice, first, NEW_YORK) == datetime(2026, 12, 8, 0, 54,
                                                              tzinfo=NEW_YORK)
    again = datetime(2026, 12, 8, 0, 54, 59, tzinfo=NEW_YORK)  # called at 00:54, refused again
    assert read("codex", notice, again, NEW_YORK) == again + PROBE


def test_A6_codex_json_met_again_within_its_minute_is_probed_in_a_minute() -> None:
    message = codex_clock(datetime(2026, 12, 8, 0, 54, 58, tzinfo=NEW_YORK), NEW_YORK)[7:]
    stdout = "\n".join(json.dumps(e) for e in (
        {"type": "thread.started", "thread_id": "t"},
        {"type": "turn.started"},
        {"type": "error", "message": message},
        {"type": "turn.failed", "error": {"message": message}},
    ))
    again = datetime(2026, 12, 8, 0, 54, 59, tzinfo=NEW_YORK)
    seen = classify_output("codex", stdout=stdout, exit_code=1, now=again, local_tz=NEW_YORK)
    assert seen.kind == "limit" and seen.limit is not None
    assert seen.limit.reset_at == again + PROBE


def test_A6_claude_clock_time_in_its_minute_is_today() -> None:
    text = "You've hit your 5-hour limit · resets 3:11am (America/New_York)"
    now = datetime(2026, 12, 8, 3, 11, 40, tzinfo=NEW_YORK)
    assert read("claude", text, now, UTC) == now + PROBE


def test_A6_claude_date_in_its_minute_is_this_year_not_next() -> None:
    text = "You've hit your weekly limit · resets Dec 10, 5am (America/New_York)"
    before = datetime(2026, 12, 7, 12, 0, tzinfo=NEW_YORK)
    assert read("claude", text, before, UTC) == datetime(2026, 12, 10, 5, 0, tzinfo=NEW_YORK)
    within = datetime(2026, 12, 10, 5, 0, 30, tzinfo=NEW_YORK)
    assert read("claude", text, within, UTC) == within + PROBE


def test_A6_codex_full_date_in_its_minute_is_probed_not_defaulted() -> None:
    text = "You’ve hit your usage limit. Visit … to purchase more credits or try again at " \
           "Dec 10th, 2026 5:50 AM."
    within = datetime(2026, 12, 10, 5, 50, 12, tzinfo=NEW_YORK)
    assert read("codex", text, within, NEW_YORK) == within + PROBE
    long_past = datetime(2026, 12, 10, 6, 30, tzinfo=NEW_YORK)
    assert read("codex", text, long_past, NEW_YORK) is None  # A6: the default wait applies


def test_A6_a_time_just_before_midnight_read_just_after_it_is_yesterdays() -> None:
    text = codex_clock(datetime(2026, 12, 7, 23, 58, 40, tzinfo=NEW_YORK), NEW_YORK)
    now = datetime(2026, 12, 8, 0, 3, tzinfo=NEW_YORK)
    assert read("codex", text, now, NEW_YORK) == now + PROBE


def test_A6_a_date_just_before_new_year_read_just_after_it_is_last_years() -> None:
    text = "You've hit your weekly limit · resets Dec 31, 11:55pm (America/New_York)"
    now = datetime(2027, 1, 1, 0, 2, tzinfo=NEW_YORK)
    assert read("claude", text, now, UTC) == now + PROBE


def test_A6_an_epoch_just_past_is_probed_in_a_minute() -> None:
    """claude's `resetsAt` seen by a clock a little fast: the reset just met, not no reset."""
    now = datetime(2026, 12, 8, 3, 0, 30, tzinfo=UTC)
    line = json.dumps({"type": "rate_limit_event", "rate_limit_info": {
        "status": "rejected", "resetsAt": int(datetime(2026, 12, 8, 3, 0, tzinfo=UTC)
                                              .timestamp()), "rateLimitType": "five_hour"}})
    seen = classify_output("claude", stdout=line, exit_code=1, now=now, local_tz=UTC)
    assert seen.limit is not None and seen.limit.reset_at == now + PROBE


# -- the rule as a property ------------------------------------------------------------------------

instants = st.datetimes(
    min_value=datetime(2026, 1, 1), max_value=datetime(2027, 12, 31), timezones=st.just(UTC)
)


#: Seconds after the printed minute's start at which the notice is read: anywhere from six hours
#: before to twenty minutes after, and the edges of the ten minutes of A6 often.
read_offsets = st.one_of(
    st.integers(min_value=-6 * 3600, max_value=20 * 60),
    st.sampled_from((-1, 0, 1, 59, 60, 599, 600, 601)),
)


@given(
    server_reset=instants,
    zone=st.sampled_from(ZONES),
    read_at=read_offsets,
    claude=st.booleans(),
)
# Read at 01:59 in Adelaide as its clocks went back at 03:00: the probe is 02:00, a folded hour.
@example(server_reset=datetime(2026, 4, 4, 15, 29, tzinfo=UTC),
         zone=ZoneInfo("Australia/Adelaide"), read_at=0, claude=False)
# New York's second 01:30 (EST) on the night its clocks go back, read ten and fifty minutes
# before it: ten minutes ahead; and at 01:40 EDT, the first 01:30 just met (probed in a minute).
@example(server_reset=datetime(2026, 11, 1, 6, 30, 20, tzinfo=UTC), zone=NEW_YORK,
         read_at=-600, claude=True)
@example(server_reset=datetime(2026, 11, 1, 6, 30, 20, tzinfo=UTC), zone=NEW_YORK,
         read_at=-3000, claude=False)
def test_A6_a_printed_minute_read_at_any_instant_near_it(
    server_reset: datetime, zone: tzinfo, read_at: int, claude: bool
) -> None:
    """The reading equals the model's (tests/helpers/reset_model.py); and while the server's
    reset is still ahead, it is never more than one printed minute from it (the CLI cut it down
    to the minute) — unless the clocks show that minute twice (a DST fold) and its first showing
    was just met: then it is probed one minute after the notice (A6)."""
    printed = minute_of(server_reset, zone)
    # `read_at` seconds of time after the printed minute's start, not of wall clock (the old
    # model's `printed + timedelta(...)` moved the wall clock, an hour off in a fold).
    now = server_reset.replace(second=0, microsecond=0) + timedelta(seconds=read_at)
    if claude and isinstance(zone, ZoneInfo):
        text, provider = claude_clock(server_reset, zone), "claude"
    else:
        text, provider = codex_clock(server_reset, zone), "codex"
    reading = read(provider, text, now, zone)
    wall = printed.replace(tzinfo=None)
    try:
        want = read_reset(clock_days(now, zone), wall.time(), zone, now)
    except GapBeforeTheReset:
        return  # a candidate day's wall time falls in a DST gap: not this property's question
    # Both in UTC (the reader hands on UTC, A6), so `==` compares the instants: between zones it
    # is False for a wall time in a fold (PEP 495; seed 247526369: 02:00 in Adelaide).
    assert reading is not None and reading.tzinfo is UTC
    assert reading == want
    if now < server_reset:
        shown = instants_showing(wall.date(), wall.time(), zone)
        just_met = [t for t in shown if t <= now and now - t <= GRACE]
        if just_met and len(shown) == 2:
            assert reading == now + PROBE
        else:
            assert abs(reading - server_reset) < timedelta(minutes=1)
