"""A6: a reset is a UTC instant from the reader on, whatever zone it was printed in.

SPEC A6 (last sentences): "The core computes instants in UTC whatever zone the caller's times
carry; a zone is used only to read clock-time notices and to write `<time>`". The reader uses the
printed zone to interpret a wall time, then hands on the instant in UTC: `==` between aware
datetimes of different zones is False for a wall time in a DST fold (PEP 495), so a reset kept in
its printed zone would compare wrong in that hour (tests/core/test_reset_minute.py met it).

The property draws any zone the machine knows (zoneinfo.available_timezones()), an instant near
one of its clock changes (a fold or a gap) and the notice the real CLIs print for a reset there,
cut down to the minute (codex: `try again at 1:30 AM` in its own zone; claude: `resets 1:30am
(Zone/Name)`, `resets Nov 1, 1:30am (Zone/Name)`). The model states A6 on its own, in instants:
the printed minute, on each candidate day (or year), is every instant whose wall clock in the
zone shows it — two in a fold; the reset is the first such instant that is not more than ten
minutes past; met again within those ten minutes it is probed one minute after the notice
(tests/helpers/reset_model.py).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, tzinfo
from functools import cache
from zoneinfo import ZoneInfo, available_timezones

from helpers.reset_model import (
    GapBeforeTheReset,
    clock_days,
    date_days,
    instants_showing,
    read_reset,
)
from hypothesis import event, example, given
from hypothesis import strategies as st

from autodev_core.detection import classify_output, detect_limit, prepare_classification
from autodev_core.detection._resets import parse_when

NEW_YORK = ZoneInfo("America/New_York")
YEARS = (2024, 2029)


def _zone(key: str) -> ZoneInfo | None:
    try:
        return ZoneInfo(key)
    except (ValueError, OSError, KeyError):
        return None


#: Every zone the machine knows, by name.
ZONES = tuple(z for z in (_zone(k) for k in sorted(available_timezones())) if z is not None)
#: The names a notice may write in parentheses and be read as that very zone: abbreviations
#: (`EST`, `MST`, `CET`, read as the zone people mean by them) and display offsets (`GMT+5`,
#: read as written, unlike zoneinfo's `Etc/GMT+5`) are A6's other question, not this one's.
_READ_AS_ANOTHER = re.compile(
    r"^(?:(?:UTC|GMT)[+-].*|UTC|GMT|Z|[PMCE][SD]T|[PMCE]T|BST|CEST|CET|IST|JST|KST|AE[SD]T|HKT"
    r"|SGT|BRT|MSK)$", re.IGNORECASE,
)
NAMED_ZONES = tuple(z for z in ZONES if not _READ_AS_ANOTHER.match(z.key))


@cache
def transitions(zone: ZoneInfo, year: int) -> tuple[datetime, ...]:
    """The instants (UTC) in `year` at which `zone`'s offset changes, to the second."""
    found = []
    start = datetime(year, 1, 1, tzinfo=UTC)
    step = timedelta(days=3)
    at = start
    while at.year == year:
        after = at + step
        if at.astimezone(zone).utcoffset() != after.astimezone(zone).utcoffset():
            low, high = at, after  # offset(low) != offset(high): bisect to the second
            while high - low > timedelta(seconds=1):
                mid = low + (high - low) / 2
                mid = mid.replace(microsecond=0)
                if mid.astimezone(zone).utcoffset() == low.astimezone(zone).utcoffset():
                    low = mid
                else:
                    high = mid
            found.append(high)
        at = after
    return tuple(found)


#: The zones with a clock change in a year the property draws: most of its examples.
CHANGING = tuple(z for z in ZONES if transitions(z, 2026))


def _12h(wall: datetime) -> tuple[str, str]:
    return str(wall.hour % 12 or 12), "AM" if wall.hour < 12 else "PM"


def notice(form: str, wall: datetime, zone: ZoneInfo) -> tuple[str, str]:
    """(provider, text): the real CLIs' notice for a reset shown as `wall` (naive, a minute)."""
    hour, ampm = _12h(wall)
    minute = f":{wall.minute:02d}"
    codex = ("ERROR: You’ve hit your usage limit. Upgrade to Pro "
             "(https://chatgpt.com/explore/pro), visit https://chatgpt.com/codex/settings/usage "
             "to purchase more credits or try again at ")
    month = wall.strftime("%b")
    if form == "codex clock":
        return "codex", f"{codex}{hour}{minute} {ampm}."
    if form == "codex date":
        return "codex", f"{codex}{month} {wall.day}th, {wall.year} {hour}{minute} {ampm}."
    when = f"{hour}{'' if wall.minute == 0 else minute}{ampm.lower()}"
    if form == "claude clock":
        return "claude", f"You've hit your 5-hour limit · resets {when} ({zone.key})"
    return "claude", (f"You've hit your weekly limit · resets {month} {wall.day}, {when} "
                      f"({zone.key})")


FORMS = ("codex clock", "codex date", "claude clock", "claude date")


@st.composite
def near_a_clock_change(draw: st.DrawFn) -> tuple[ZoneInfo, datetime]:
    """A zone and an instant (UTC) within six hours of one of its clock changes (any instant
    of the year for a zone that has none that year)."""
    zone = draw(st.one_of(st.sampled_from(CHANGING), st.sampled_from(ZONES)))
    year = draw(st.integers(*YEARS))
    changes = transitions(zone, year)
    if not changes:
        return zone, draw(st.datetimes(datetime(year, 1, 2), datetime(year, 12, 30),
                                       timezones=st.just(UTC)))
    change = draw(st.sampled_from(changes))
    around = draw(st.integers(min_value=-6 * 3600, max_value=6 * 3600))
    return zone, change + timedelta(seconds=around)


#: Seconds after the printed minute's start at which the notice is read: from six hours before
#: to twenty minutes after (past the ten of A6, and past the hour a fold repeats).
read_offsets = st.one_of(
    st.integers(min_value=-6 * 3600, max_value=20 * 60),
    st.sampled_from((-3600, -1, 0, 1, 59, 60, 599, 600, 601, 3600, 4199)),
)


@given(
    place=near_a_clock_change(),
    read_at=read_offsets,
    form=st.sampled_from(FORMS),
    reader_zone=st.sampled_from((UTC, NEW_YORK, ZoneInfo("Australia/Lord_Howe"))),
)
# 01:30 on the night New York's clocks go back, its second showing (EST), read ten minutes
# before it: the reset is ten minutes ahead, not the next day's 01:30.
@example(place=(NEW_YORK, datetime(2026, 11, 1, 6, 30, tzinfo=UTC)), read_at=-600,
         form="codex clock", reader_zone=NEW_YORK)
@example(place=(NEW_YORK, datetime(2026, 11, 1, 6, 30, tzinfo=UTC)), read_at=300,
         form="claude date", reader_zone=UTC)
# Lord Howe's clocks go back half an hour (02:00 -> 01:30): its second 01:45.
@example(place=(ZoneInfo("Australia/Lord_Howe"), datetime(2026, 4, 4, 15, 15, tzinfo=UTC)),
         read_at=-60, form="claude clock", reader_zone=UTC)
def test_A6_every_reset_is_a_UTC_instant_the_printed_wall_time_names(
    place: tuple[ZoneInfo, datetime], read_at: int, form: str, reader_zone: tzinfo
) -> None:
    zone, server_reset = place
    if form.startswith("claude") and zone not in NAMED_ZONES:
        zone = NEW_YORK  # a name the notice cannot write as itself: A6's other question
    wall = server_reset.astimezone(zone).replace(second=0, microsecond=0, tzinfo=None)
    minute_start = server_reset.replace(second=0, microsecond=0)  # UTC: offsets are whole minutes
    now = minute_start + timedelta(seconds=read_at)  # elapsed time, not wall clock
    provider, text = notice(form, wall, zone)
    # codex prints in its own process's zone, the run's; claude names its zone.
    local_tz = zone if provider == "codex" else reader_zone
    days = (iter([wall.date()]) if form == "codex date"
            else date_days(wall.month, wall.day, now, zone) if form == "claude date"
            else clock_days(now, zone))
    shown = len(instants_showing(wall.date(), wall.time(), zone))
    event("the printed minute is shown twice (a fold)" if shown == 2 else "shown once")
    try:
        want = read_reset(days, wall.time(), zone, now)
    except GapBeforeTheReset:
        event("a candidate day's minute falls in a gap")
        return  # a candidate day's wall time no clock showed: not this property's question
    for moment in (now, now.astimezone(reader_zone)):  # whatever zone `now` carries (A6)
        seen = classify_output(provider, stderr=text, exit_code=1, now=moment, local_tz=local_tz)
        assert seen.kind == "limit" and seen.limit is not None, text
        reading = seen.limit.reset_at
        if want is None:
            assert reading is None, (text, now, reading)
            continue
        assert reading is not None, (text, now, want)
        assert reading.tzinfo is UTC, reading
        assert reading == want, (text, now, reading, want)  # both UTC: `==` is the instant
        again = prepare_classification(provider, stderr=text, exit_code=1).at(moment, local_tz)
        assert again.limit is not None and again.limit.reset_at == reading
        assert again.limit.reset_at.tzinfo is UTC
        limit = detect_limit(provider, stderr=text, exit_code=1, now=moment, local_tz=local_tz)
        assert limit is not None and limit.reset_at == reading and reading.tzinfo is UTC


@given(place=near_a_clock_change(), read_at=read_offsets)
def test_A6_the_reader_hands_on_UTC_where_the_reset_is_read(
    place: tuple[ZoneInfo, datetime], read_at: int
) -> None:
    """Not only the public values: the reset a written time resolves to is UTC as soon as it
    is read (the printed zone used, then left behind), so no part of the reader holds another."""
    zone, server_reset = place
    wall = server_reset.astimezone(zone)
    now = server_reset.replace(second=0, microsecond=0) + timedelta(seconds=read_at)
    for written in (f"at {wall:%H:%M}", f"at {wall:%b %d, %Y %H:%M}", f"at {wall:%Y-%m-%d %H:%M}",
                    "in 2 hours", f"|{int(server_reset.timestamp())}"):
        parsed = parse_when(written, None)
        assert parsed is not None and parsed[0] is not None, written
        reset = parsed[0](now, zone)
        assert reset is None or reset.tzinfo is UTC, (written, reset)


def test_A6_the_second_0130_of_a_fall_back_night_is_ten_minutes_ahead_not_tomorrow() -> None:
    """codex in New York, refused at 01:20 EST (the hour shown twice) with `try again at 1:30
    AM`: the reset is 01:30 EST, ten minutes on (06:30 UTC), not 01:30 the next night."""
    now = datetime(2026, 11, 1, 6, 20, tzinfo=UTC)  # 01:20 EST, the second 01:20
    _, text = notice("codex clock", datetime(2026, 11, 1, 1, 30), NEW_YORK)
    seen = classify_output("codex", stderr=text, exit_code=1, now=now, local_tz=NEW_YORK)
    assert seen.limit is not None
    assert seen.limit.reset_at == datetime(2026, 11, 1, 6, 30, tzinfo=UTC)
    assert seen.limit.reset_at.tzinfo is UTC
    assert seen.limit.reset_at.isoformat() == "2026-11-01T06:30:00+00:00"


def test_A6_the_first_0130_of_a_fall_back_night_is_still_the_first() -> None:
    """Read at 01:20 EDT (the first 01:20), `1:30 AM` is the first 01:30: ten minutes on."""
    now = datetime(2026, 11, 1, 5, 20, tzinfo=UTC)  # 01:20 EDT
    _, text = notice("codex clock", datetime(2026, 11, 1, 1, 30), NEW_YORK)
    seen = classify_output("codex", stderr=text, exit_code=1, now=now, local_tz=NEW_YORK)
    assert seen.limit is not None
    assert seen.limit.reset_at == datetime(2026, 11, 1, 5, 30, tzinfo=UTC)
