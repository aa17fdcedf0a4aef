"""A notice read once gives, at every instant, the reset reading it afresh gives (SPEC D, A6, A38).

`simulate` reads each distinct answer once (`prepare_classification`) and, at each call's end,
only works out the reset: the cue and the time expression are parsed once, and what depends on
the instant (a clock time that has passed rolls to the next day, a date without a year is its
next occurrence, a full date or an epoch already past gives none, a duration is counted from
the instant) is resolved at each. Here notices with every form of reset the readers know, one
or several per notice, are read once and resolved at many instants and zones — across clock
changes and near both ends of the calendar — and must classify as `classify_output` does.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autodev_core.detection import classify_output, prepare_classification

PHRASES = [
    "You've hit your limit",
    "Claude AI usage limit reached",
    "You've hit your usage limit.",
    "Individual quota reached.",
    "RESOURCE_EXHAUSTED (code 429): quota exhausted.",
    "Your quota will reset",
    "5-hour limit reached",
]
CUES = [
    " · resets ", " Try again ", " or try again ", " will reset ", " until ", " retry after ",
    "|", ' "resetsAt": ', ' "retryDelay": "', " Resets ", " available again ", " reset_time=",
    " Retry-After: ", "\n\nresets ", "\nresets ", ".\n or try again ",
]
RESETS = [
    # durations: counted from the instant
    "in 3 hours 2 minutes", "in 2h31m33s", "2h31m33s", "within 5 minutes", "in a minute",
    "less than a minute", "about an hour", "13872", "1.5", "0", "in 0 seconds", "in 399 days",
    "in 401 days", "999999999 days",
    # clock times: roll to the next day once passed
    "at 3:54 AM", "5am", "12am", "13pm", "0am", "12:30", "23:59", "24:00", "3:60pm",
    "after 3:30 PM", "tomorrow at 5pm", "Mon 9am", "sunday 11:30 pm", "Jul 4 at 2:30 a.m.",
    # zoned, including the clock changes of the zone named
    "3pm (Etc/GMT+5)", "3pm GMT-3", "3pm UTC+05:30", "3pm PST", "4:00 CEST", "3pm (No/Such)",
    "Mar 29, 1:30am (Europe/Lisbon)", "Oct 25 1:30 am (Europe/Lisbon)",
    "Nov 1 1:30am (America/New_York)", "Mar 8 2:30am (America/New_York)",
    # dates without a year (next occurrence) and with one (none once passed)
    "Oct 31, 9am (Europe/Lisbon)", "Feb 29 at 4pm", "Feb 30 5pm", "Apr 29th, 2026 6:49 AM",
    "10 de jul. de 2026, 11:52", "1 de ago, 10:00", "Dec 31, 9999 11pm", "Jan 1, 0001 1am",
    "2026-04-23T10:00:00Z", "2026-04-23 10:00+05:30", "2026-04-23 10:00", "2026-13-01 10:00",
    "9999-12-31T23:59Z",
    # epochs: none once passed
    "1776938400", "1776938400000", "1700000000",
    # nothing readable
    "later.", "5", "soon",
]
ENDS = ["", ".", " (Europe/Lisbon)", "\n", " and more text"]
ZONES = ["UTC", "Europe/Lisbon", "America/New_York", "Asia/Kolkata", "Pacific/Kiritimati",
         "Australia/Lord_Howe"]

notices = st.builds(
    lambda phrase, resets, end: phrase + "".join(cue + reset for cue, reset in resets) + end,
    st.sampled_from(PHRASES),
    st.lists(st.tuples(st.sampled_from(CUES), st.sampled_from(RESETS)), min_size=1, max_size=3),
    st.sampled_from(ENDS),
)
instants = st.one_of(
    st.datetimes(min_value=datetime(2025, 1, 1), max_value=datetime(2031, 12, 31),
                 timezones=st.sampled_from(ZONES).map(ZoneInfo)),
    st.datetimes(min_value=datetime(9999, 1, 1), max_value=datetime(9999, 12, 30),
                 timezones=st.just(UTC)),
    st.datetimes(min_value=datetime(1, 1, 3), max_value=datetime(1, 12, 31),
                 timezones=st.just(UTC)),
)


@given(
    notice=notices,
    noise=st.sampled_from(["", "working on it\n", "E   assert 3 == 4\n"]),
    provider=st.sampled_from(["claude", "codex", "agy"]),
    on_stdout=st.booleans(),
    nows=st.lists(instants, min_size=1, max_size=5),
    local=st.sampled_from(ZONES).map(ZoneInfo),
)
def test_D_A6_a_reset_parsed_once_resolves_as_read_afresh(
    notice: str, noise: str, provider: str, on_stdout: bool, nows: list[datetime],
    local: ZoneInfo,
) -> None:
    text = noise + notice
    output = {"stdout": text} if on_stdout else {"stderr": text}
    prepared = prepare_classification(provider, exit_code=1, **output)
    for now in nows:
        assert prepared.at(now, local) == classify_output(
            provider, exit_code=1, now=now, local_tz=local, **output
        )


def test_D_A6_the_first_reset_that_resolves_is_read_at_each_instant() -> None:
    # A full date that passes, then a clock time on the next line: before the date the date is
    # the reset; after it the clock time is, and the notice's text reaches to its line.
    notice = "You've hit your limit · resets Apr 29th, 2026 6:49 AM\nor try again at 5am"
    prepared = prepare_classification("claude", stdout=notice, exit_code=1)
    lisbon = ZoneInfo("Europe/Lisbon")
    before = datetime(2026, 4, 28, 12, 0, tzinfo=UTC)
    after = datetime(2026, 4, 30, 12, 0, tzinfo=UTC)
    read_before, read_after = prepared.at(before, lisbon), prepared.at(after, lisbon)
    assert read_before.limit is not None and read_after.limit is not None
    assert read_before.limit.reset_at == datetime(2026, 4, 29, 5, 49, tzinfo=UTC)
    assert read_after.limit.reset_at == datetime(2026, 5, 1, 4, 0, tzinfo=UTC)
    assert read_before.limit.text.endswith("6:49 AM")
    assert read_after.limit.text.endswith("6:49 AM or try again at 5am")
    for now in (before, after, after + timedelta(days=300)):
        assert prepared.at(now, lisbon) == classify_output(
            "claude", stdout=notice, exit_code=1, now=now, local_tz=lisbon
        )


# docs/limits.md: "a structured one with a reset wins, then the first notice whose reset can be
# read ..., then the first notice" — read once or afresh alike.
_FILLER = "\n" + "working on the task and more words here. " * 10 + "\n"
_LATER = "You've hit your usage limit. Try again later."
_IN_TWO_HOURS = "You've hit your usage limit. Try again in 2 hours."
_QUOTA = "Individual quota reached."


@pytest.mark.parametrize(
    ("stderr", "text", "readable"),
    [
        (_LATER + _FILLER + _QUOTA, _LATER, False),
        (_QUOTA + _FILLER + _LATER, _QUOTA, False),
        (_LATER + _FILLER + _IN_TWO_HOURS, _IN_TWO_HOURS, True),
        (_IN_TWO_HOURS + _FILLER + _LATER, _IN_TWO_HOURS, True),
    ],
)
def test_D_A6_of_several_notices_the_first_readable_else_the_first(
    stderr: str, text: str, readable: bool
) -> None:
    now = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
    lisbon = ZoneInfo("Europe/Lisbon")
    prepared = prepare_classification("codex", stderr=stderr, exit_code=1)
    for read in (prepared.at(now, lisbon),
                 classify_output("codex", stderr=stderr, exit_code=1, now=now, local_tz=lisbon)):
        assert read.limit is not None and read.limit.text == text
        assert read.limit.reset_at == (now + timedelta(hours=2) if readable else None)


def test_D_A2_a_structured_limit_names_the_notice_whose_reset_is_read() -> None:
    # claude's rate_limit_event without `resetsAt`, then a notice with a reset: the limit is
    # reported in the structured event's words, with the notice's reset.
    event = json.dumps({"type": "rate_limit_event", "rate_limit_info": {
        "status": "rejected", "rateLimitType": "five_hour"}})
    stdout = event + "\nYou've hit your limit · resets 3pm"
    now = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
    lisbon = ZoneInfo("Europe/Lisbon")
    prepared = prepare_classification("claude", stdout=stdout, exit_code=1)
    for read in (prepared.at(now, lisbon),
                 classify_output("claude", stdout=stdout, exit_code=1, now=now, local_tz=lisbon)):
        assert read.limit is not None
        assert read.limit.reset_at == datetime(2026, 12, 1, 15, 0, tzinfo=UTC)
        assert read.limit.text.startswith("rate_limit_event: status rejected")
