"""Reading the reset instant out of a limit notice (SPEC A6, A38).

A notice writes its reset as an epoch (`|1762952400`), a relative duration (`in 3 hours 2
minutes`, `in 2h31m33s`), a clock time (`5am`, `3:54 AM`), a date without a year (`Oct 31,
9am`, `Apr 23 at 4pm`) or a full date (`Apr 29th, 2026 6:49 AM`), optionally followed by an
IANA zone in parentheses (`(Etc/GMT+5)`, which zoneinfo reads as UTC-5). Zone-less times are
read in the machine's zone (`local_tz`).

Rules (A6, A38): a clock time or a date names the start of its printed minute, as written (the
CLIs print a reset cut down to the minute). One that lies after `now` is the reset. One that
lies at or before `now` by at most `PAST_GRACE` (ten minutes) is the reset just met again — the
notice read within its own minute, or a little after it, the clocks differing — and is probed
again `PROBE_AFTER` (one minute) after the notice: never at once, never a day or a year later.
Only a clock time more than `PAST_GRACE` past rolls to the next day, and a date without a year
to its next occurrence; a full date or an epoch that far past gives no reset (None) rather than
a wrong one, and so does a duration that is not ahead. Wall-clock times are built in their zone
(zoneinfo), never by adding hours, so a DST change between now and the reset is right; a
duration is elapsed time, added in UTC ("in 2 hours" at 00:01 on the night the clocks fall back
is the second 01:01, A6). A wall time the clocks show twice (a DST fold) names the first
of its two instants, unless that one is too far past: then the second (the hour after the
clocks went back, PEP 495's fold=1). Every reset is returned in UTC (A6: the core computes
instants in UTC): the printed zone serves only to read the wall time, so nothing downstream
compares resets across zones (`==` between zones is False in a fold, PEP 495).

Reading is in two steps: `parse_when` reads the text (the regexes) into a `Resolver`, and the
resolver works out the reset at an instant (only arithmetic and the zone's rules). A caller
that reads the same notice at many instants (`simulate`) parses it once.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, date, datetime, time, timedelta, timezone, tzinfo
from typing import NamedTuple
from zoneinfo import ZoneInfo

from ._bounded import Meter, fold, match

# A reset further ahead than this is misread text, not a reset (A6).
MAX_RESET_AHEAD = timedelta(days=400)
#: A6: a printed reset (a clock time, a date, an epoch) at or before now by at most this much is
#: the one just met again, read within its printed minute or a little after it ...
PAST_GRACE = timedelta(minutes=10)
#: ... A6: and is probed again this long after the notice (never at once, never a day later).
PROBE_AFTER = timedelta(minutes=1)
# Epoch values at or above this are milliseconds (claude's `resetsAt` is seconds; be lenient).
_EPOCH_MS_FROM = 100_000_000_000

#: A reset as written, worked out at an instant: `(now, local_tz) -> reset or None` (A6, A38).
Resolver = Callable[[datetime, tzinfo], "datetime | None"]

_UNIT_SECONDS = {"d": 86_400, "h": 3_600, "m": 60, "s": 1}

_DURATION_PART = re.compile(
    r"\s*(?:,\s*|and\s+)?(?P<n>\d{1,9}(?:\.\d{1,12})?)\s?"
    r"(?P<unit>days?|d|hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)(?![a-z])",
    re.IGNORECASE,
)
_DURATION_WORDS = re.compile(
    r"\s*(?:about\s+|approximately\s+|~\s*)?(?:(?P<less>less than a minute)|"
    r"(?:a|an|one)\s+(?P<unit>day|hour|minute|second)\b)",
    re.IGNORECASE,
)
_DURATION_LEAD = re.compile(r"\s*(?:about\s+|approximately\s+|~\s*)?", re.IGNORECASE)

_EPOCH = re.compile(r"\s*\|?\s*(?P<epoch>\d{13}|\d{10})(?!\d)")

_MONTHS = {
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
    "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12,
}
# Day-first dates in the other languages codex is localised to (`10 de jul. de 2026, 11:52`).
_MONTHS_DAY_FIRST = {
    **_MONTHS, "fev": 2, "abr": 4, "mai": 5, "ago": 8, "set": 9, "out": 10, "dez": 12,
    "dic": 12, "ene": 1,
}
_WEEKDAYS = {"mon": 0, "tue": 1, "wed": 2, "thu": 3, "fri": 4, "sat": 5, "sun": 6}

_DATETIME = re.compile(
    r"""\s*(?:(?:at|on)\s+)?
    (?P<tomorrow>tomorrow\s+(?:at\s+)?)?
    (?:(?P<wday>mon|tue|wed|thu|fri|sat|sun)[a-z]{0,6}\.?,?\s+)?
    (?:(?P<mon>jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]{0,6}\.?\s+
       (?P<day>\d{1,2})(?:st|nd|rd|th)?(?![\d:])
       (?:,?\s+(?P<year>\d{4})(?!\d))?
       (?:\s*,\s*|\s+at\s+|\s+)?
      |(?P<dday>\d{1,2})(?:st|nd|rd|th)?\s+(?:de\s+)?
       (?P<dmon>jan|feb|fev|mar|apr|abr|may|mai|jun|jul|aug|ago|sep|set|oct|out|nov|dec|dez|dic
         |ene)[a-z]{0,6}\.?,?\s+(?:de\s+)?
       (?:(?P<dyear>\d{4})(?!\d))?
       (?:\s*,\s*|\s+(?:at|às|a\s+las)\s+|\s+)?
    )?
    (?:(?P<hour>\d{1,2})(?::(?P<minute>\d{2}))?(?::\d{2})?\s?
       (?P<ampm>[ap]\.?\s?m\b\.?)?(?![\d:]))?
    (?:\s*\((?P<zone>[A-Za-z][A-Za-z0-9_+\-/:]{0,63})\)
       |\s+(?P<utc>(?:UTC|GMT)(?:[+-]\d{1,2}(?::?\d{2})?)?
          |[PMCE][SD]T|BST|CEST|CET|IST|JST|KST|AE[SD]T|HKT|SGT|BRT|MSK)(?![\w/]))?
    """,
    re.IGNORECASE | re.VERBOSE,
)
_ISO = re.compile(
    r"\s*(?P<y>\d{4})-(?P<mo>\d{2})-(?P<d>\d{2})(?:T|\s+at\s+|\s)(?P<h>\d{2}):(?P<mi>\d{2})"
    r"(?::(?P<s>\d{2})(?:\.\d{1,9})?)?\s?(?P<off>Z|UTC|[+-]\d{2}:?\d{2})?"
)
_ZONE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_+\-]{0,30}(?:/[A-Za-z0-9_+\-]{1,30}){0,2}$")
# `GMT-3`, `UTC+05:30` as a clock displays them: the offset as written (unlike `Etc/GMT+5`).
_DISPLAY_OFFSET = re.compile(r"^(?:UTC|GMT)(?P<sign>[+-])(?P<h>\d{1,2})(?::?(?P<m>\d{2}))?$", re.I)


# Abbreviations people (and some CLIs) write instead of IANA names: read as the wall clock of
# the zone they usually mean, so EST in July is still New York's clock.
_ABBREVIATIONS = {
    "PST": "America/Los_Angeles", "PDT": "America/Los_Angeles", "PT": "America/Los_Angeles",
    "MST": "America/Denver", "MDT": "America/Denver", "CST": "America/Chicago",
    "CDT": "America/Chicago", "EST": "America/New_York", "EDT": "America/New_York",
    "ET": "America/New_York", "BST": "Europe/London", "CET": "Europe/Paris",
    "CEST": "Europe/Paris", "IST": "Asia/Kolkata", "JST": "Asia/Tokyo", "KST": "Asia/Seoul",
    "AEST": "Australia/Sydney", "AEDT": "Australia/Sydney", "HKT": "Asia/Hong_Kong",
    "SGT": "Asia/Singapore", "BRT": "America/Sao_Paulo", "MSK": "Europe/Moscow",
}


def zone_named(name: str | None) -> tzinfo | None:
    """The IANA zone `name` (`Etc/GMT+5` is UTC-5, as zoneinfo has it), or None if unknown.

    A display offset (`GMT-3`, `UTC+5:30`) is read as written.
    """
    if not name:
        return None
    display = _DISPLAY_OFFSET.match(name)
    if display:
        minutes = int(display.group("h")) * 60 + int(display.group("m") or 0)
        if minutes >= 24 * 60:
            return None
        return _fixed(-minutes if display.group("sign") == "-" else minutes)
    if not _ZONE_NAME.match(name):
        return None
    if name.upper() in ("UTC", "GMT", "Z"):
        return UTC
    if name.upper() in _ABBREVIATIONS:
        return ZoneInfo(_ABBREVIATIONS[name.upper()])
    try:
        return ZoneInfo(name)
    except (ValueError, KeyError, OSError):  # ZoneInfoNotFoundError is a KeyError
        return None


_ZERO = timedelta(0)
#: `timedelta(days=n)` for the days `_next_at` looks at, built once.
_DAYS = tuple(timedelta(days=n) for n in range(9))


def _later(reset: datetime, now: datetime) -> datetime | None:
    """`reset`, in UTC, when it is strictly later than `now` and not absurdly far (A6, A38)."""
    try:
        at = reset.astimezone(UTC)
        ahead = at - now.astimezone(UTC)
    except OverflowError:  # an instant past either end of the calendar is no reset
        return None
    if ahead <= _ZERO or ahead > MAX_RESET_AHEAD:
        return None
    return at


def _printed(reset: datetime, now: datetime) -> datetime | None:
    """A reset printed as an instant (a clock time, a date, an epoch), read at `now` (A6): itself
    (in UTC) when later than `now`; when at or before `now` by at most PAST_GRACE, the probe one
    minute after the notice; when further past, None (the caller may try the next day or year)."""
    try:
        behind = now.astimezone(UTC) - reset.astimezone(UTC)
    except OverflowError:  # an instant past either end of the calendar is no reset
        return None
    if behind < _ZERO:
        return _later(reset, now)
    if behind <= PAST_GRACE:
        return now.astimezone(UTC) + PROBE_AFTER
    return None


def from_epoch(value: float, now: datetime) -> datetime | None:
    """An epoch in seconds (or milliseconds, when that large), as an aware UTC datetime; one
    just past is probed a minute after `now` (A6, `_printed`)."""
    try:
        seconds = float(value)
        if seconds != seconds:  # NaN
            return None
        if seconds >= _EPOCH_MS_FROM:
            seconds /= 1000
        return _printed(datetime.fromtimestamp(seconds, UTC), now)
    except (OverflowError, ValueError, OSError):
        return None


def from_duration(seconds: float, now: datetime) -> datetime | None:
    try:
        if seconds != seconds or seconds <= 0:
            return None
        return _later(now.astimezone(UTC) + timedelta(seconds=seconds), now)
    except (OverflowError, ValueError):
        return None


def after_seconds(seconds: float) -> Resolver:
    """The reset `seconds` after the instant it is read at (A6: elapsed time).

    What `from_duration(seconds, now)` gives, with what does not depend on `now` worked out
    once: a duration that is not positive, too long to be a `timedelta` or further ahead than
    MAX_RESET_AHEAD is never a reset; any other is `now` plus it, unless that passes the end of
    the calendar (tests/core/test_reset_read_once.py compares with reading the notice afresh)."""
    try:
        if seconds != seconds or seconds <= 0:  # NaN, or not ahead
            return _never
        delta = timedelta(seconds=seconds)
    except (OverflowError, ValueError):
        return _never
    if delta <= _ZERO or delta > MAX_RESET_AHEAD:  # `_later`: the same at every instant
        return _never

    def resolve(now: datetime, _local_tz: tzinfo) -> datetime | None:
        try:
            return (now if now.tzinfo is UTC else now.astimezone(UTC)) + delta
        except (OverflowError, ValueError):  # past the end of the calendar: no reset
            return None

    return resolve


def _never(_now: datetime, _local_tz: tzinfo) -> datetime | None:
    return None


def read_duration(text: str, meter: Meter | None) -> tuple[float, int] | None:
    """Seconds written at the start of `text` (`3 hours 2 minutes`, `2h31m33s`) and its end."""
    words = match(_DURATION_WORDS, text, meter)
    if words:
        if words.group("less"):
            return 60.0, words.end()
        unit = fold(words.group("unit"))[0]
        return float(_UNIT_SECONDS[unit]), words.end()
    lead = match(_DURATION_LEAD, text, meter)
    pos = lead.end() if lead else 0
    total = 0.0
    parts = 0
    while parts < 6:
        part = match(_DURATION_PART, text[pos:], meter)
        if not part:
            break
        unit = fold(part.group("unit"))
        key = "m" if unit.startswith("min") or unit == "m" else unit[0]
        total += float(part.group("n")) * _UNIT_SECONDS[key]
        pos += part.end()
        parts += 1
    if parts == 0:
        return None
    return total, pos


def _parse_epoch(text: str, meter: Meter | None) -> tuple[Resolver, int] | None:
    found = match(_EPOCH, text, meter)
    if not found:
        return None
    value = int(found.group("epoch"))
    return (lambda now, _local_tz: from_epoch(value, now)), found.end()


def _parse_iso(text: str, meter: Meter | None) -> tuple[Resolver | None, int] | None:
    found = match(_ISO, text, meter)
    if not found:
        return None
    off = found.group("off") or ""
    zone: tzinfo | None = None  # none written: the machine's zone, known when resolved
    try:
        if off in ("Z", "UTC"):
            zone = UTC
        elif off:
            digits = off[1:].replace(":", "")
            minutes = int(digits[:2]) * 60 + int(digits[2:])
            zone = _fixed(-minutes if off[0] == "-" else minutes)
        # Whether the fields make a date does not depend on the zone: checked once, here.
        wall = datetime(
            int(found.group("y")), int(found.group("mo")), int(found.group("d")),
            int(found.group("h")), int(found.group("mi")), int(found.group("s") or 0),
        )
    except ValueError:
        return None, found.end()

    def resolve(now: datetime, local_tz: tzinfo) -> datetime | None:
        return _printed_wall(wall.replace(tzinfo=zone if zone is not None else local_tz), now)

    return resolve, found.end()


def _fixed(minutes: int) -> tzinfo:
    return timezone(timedelta(minutes=minutes))


def _parse_datetime(text: str, meter: Meter | None) -> tuple[Resolver | None, int] | None:
    """A clock time, a date with or without a year, optionally zoned; None if none is written.

    Returns (how to resolve it, or None when it never gives a reset; end offset) when something
    date-like was read.
    """
    iso = _parse_iso(text, meter)
    if iso is not None:
        return iso
    found = match(_DATETIME, text, meter)
    if not found or not (found.group("hour") or found.group("mon") or found.group("dmon")):
        return None
    hour_text, minute_text, ampm = found.group("hour"), found.group("minute"), found.group("ampm")
    if hour_text and not (minute_text or ampm):
        return None  # a bare number ("resets 5") is not a time
    hour = int(hour_text) if hour_text else 0
    minute = int(minute_text) if minute_text else 0
    if ampm:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if ampm.lower().startswith("p") else 0)
    if hour > 23 or minute > 59:
        return None
    zone = zone_named(found.group("zone") or found.group("utc"))
    day = _written_day(found)
    clock = time(hour, minute)

    def resolve(now: datetime, local_tz: tzinfo) -> datetime | None:
        try:
            return _next_at(day, clock, zone if zone is not None else local_tz, now)
        except OverflowError:  # the reset would fall past either end of the calendar: none
            return None

    return resolve, found.end()


class _Day(NamedTuple):
    """The day a clock time names: a date (`month`, `day`, `year` or its next occurrence), or
    today/tomorrow, possibly a weekday (`weekday` 0 = Monday). A tuple: one is built for each
    clock time read, and a tuple is built quicker than a frozen class."""

    month: int | None = None
    day: int = 0
    year: int | None = None
    tomorrow: bool = False
    weekday: int | None = None


def _written_day(found: re.Match[str]) -> _Day:
    if found.group("mon"):
        year = found.group("year")
        return _Day(month=_MONTHS[fold(found.group("mon"))[:3]], day=int(found.group("day")),
                    year=int(year) if year else None)
    if found.group("dmon"):
        year = found.group("dyear")
        return _Day(month=_MONTHS_DAY_FIRST[fold(found.group("dmon"))[:3]],
                    day=int(found.group("dday")), year=int(year) if year else None)
    wday = found.group("wday")
    return _Day(tomorrow=bool(found.group("tomorrow")),
                weekday=_WEEKDAYS[fold(wday)[:3]] if wday else None)


def _next_at(written: _Day, clock: time, zone: tzinfo, now: datetime) -> datetime | None:
    """The reset at `clock` on the `written` day (or today/tomorrow/a weekday), read at `now`:
    the first candidate day, from the one before today (a notice read just after midnight), that
    `_printed` does not find too far past (A6)."""
    local_now = now.astimezone(zone)
    if written.month is not None:
        month, day = written.month, written.day
        if written.year is not None:
            return _at(date_or_none(written.year, month, day), clock, zone, now)
        # Last year's first (read just after New Year), then the next occurrence (Feb 29).
        for candidate in range(local_now.year - 1, local_now.year + 9):
            reset = _at(date_or_none(candidate, month, day), clock, zone, now)
            if reset is not None:
                return reset
        return None
    start = local_now.date() + _DAYS[1] if written.tomorrow else local_now.date() - _DAYS[1]
    for step in _DAYS:
        day_ = start + step
        if written.weekday is not None and day_.weekday() != written.weekday:
            continue
        reset = _at(day_, clock, zone, now)
        if reset is not None:
            return reset  # rolls to the next day only when more than PAST_GRACE past (A6)
    return None


def date_or_none(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _at(day: date | None, clock: time, zone: tzinfo, now: datetime) -> datetime | None:
    if day is None:
        return None
    return _printed_wall(datetime.combine(day, clock, tzinfo=zone), now)


def _printed_wall(wall: datetime, now: datetime) -> datetime | None:
    """`_printed` of a wall time in its zone (fold=0): when the clocks show it twice (a DST
    fold) and its first instant is too far past, its second (fold=1), which may be ahead or
    just met (A6: the reset as written, read in the zone it names). A wall time in a gap keeps
    PEP 495's reading (fold=0): no clock printed it."""
    reset = _printed(wall, now)
    if reset is None:
        second = wall.replace(fold=1)
        offset, second_offset = wall.utcoffset(), second.utcoffset()
        if offset is not None and second_offset is not None and second_offset < offset:
            return _printed(second, now)  # a fold: the later instant has the smaller offset
    return reset


def parse_when(text: str, meter: Meter | None) -> tuple[Resolver | None, int] | None:
    """The reset written at the start of `text` (just after `resets`, `try again`, ...).

    Returns (how to resolve it at an instant, or None when it never gives a reset; end offset)
    when a reset expression was found, else None.
    """
    prep = match(_PREPOSITION, text, meter)
    word = fold(prep.group("word")) if prep and prep.group("word") else ""
    rest = text[prep.end():] if prep else text
    offset = prep.end() if prep else 0
    if word in ("in", "after", "within"):
        duration = read_duration(rest, meter)
        if duration is not None:
            return after_seconds(duration[0]), offset + duration[1]
        if word != "after":  # "after 3:30 PM" is a time; "in"/"within" only take durations
            return None
    epoch = _parse_epoch(rest, meter)
    if epoch is not None:
        return epoch[0], offset + epoch[1]
    when = _parse_datetime(rest, meter)
    if when is not None:
        return when[0], offset + when[1]
    duration = read_duration(rest, meter) if not word else None
    if duration is not None and rest[:1].isdigit() and _compact_duration(rest):
        return after_seconds(duration[0]), offset + duration[1]
    return None


_PREPOSITION = re.compile(r"[\s:]*(?:(?P<word>in|after|within|at|on)\b)?\s*", re.IGNORECASE)
_COMPACT = re.compile(r"\d{1,9}(?:h|m|s|d)(?:\d|\b)", re.IGNORECASE)


def _compact_duration(text: str) -> bool:
    """`2h31m33s` written without `in` (agy's `quotaResetDelay`) still reads as a duration."""
    return _COMPACT.match(text[:40]) is not None
