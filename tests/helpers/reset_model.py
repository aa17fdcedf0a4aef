"""A6's reading of a printed reset, stated in instants on its own (tests/core/test_reset_minute.py,
tests/core/test_reset_utc.py compare the reader with it).

A clock time or a date names the start of its printed minute, in the zone the notice names (else
the machine's). On each candidate day (or year), that minute is every instant at which the
zone's wall clock shows it: one, two in a DST fold, none in a gap. The reset is the first such
instant that is not more than ten minutes before now; itself when after now, else (met again
within those ten minutes) now plus one minute. Arithmetic is on instants (UTC), never on wall
clock, and comparisons are between UTC instants: `==` between zones is False for a wall time in
a fold (PEP 495).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import Final

#: A6: a printed reset at most this far past is the one just met again ...
GRACE: Final = timedelta(minutes=10)
#: ... and is probed again this long after the notice.
PROBE: Final = timedelta(minutes=1)


def instants_showing(day: date, clock: time, zone: tzinfo) -> list[datetime]:
    """Every instant (UTC) at which `zone`'s wall clock shows `clock` on `day`, in order: one,
    two in a fold, none in a gap. Each is checked by converting it back to the zone."""
    shown: list[datetime] = []
    for fold in (0, 1):
        instant = datetime.combine(day, clock, tzinfo=zone).replace(fold=fold).astimezone(UTC)
        wall = instant.astimezone(zone)
        if (wall.date(), wall.time()) == (day, clock) and instant not in shown:
            shown.append(instant)
    return sorted(shown)


class GapBeforeTheReset(Exception):
    """A candidate day's wall time falls in a clock change's gap: no clock printed it, and A6
    does not say which instant it names."""


def read_reset(days: Iterable[date], clock: time, zone: tzinfo, now: datetime
               ) -> datetime | None:
    """The reset (UTC) of the printed minute `clock` read at `now`, over the candidate `days`
    in order; None when none is near enough. Raises GapBeforeTheReset when a day before the
    reset shows no such minute."""
    for day in days:
        shown = instants_showing(day, clock, zone)
        if not shown:
            raise GapBeforeTheReset(day)
        for instant in shown:
            if instant > now:
                return instant
            if now - instant <= GRACE:
                return now.astimezone(UTC) + PROBE
    return None


def clock_days(now: datetime, zone: tzinfo) -> Iterator[date]:
    """A clock time's candidate days: from yesterday (a notice read just after midnight) on."""
    today = now.astimezone(zone).date()
    return (today + timedelta(days=n) for n in range(-1, 8))


def date_days(month: int, day: int, now: datetime, zone: tzinfo) -> Iterator[date]:
    """A date without a year: last year's first (read just after New Year), then the next ones
    (Feb 29 only in leap years)."""
    year = now.astimezone(zone).year
    for candidate in range(year - 1, year + 9):
        try:
            yield date(candidate, month, day)
        except ValueError:
            continue
