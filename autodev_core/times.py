"""The one check every instant of the core passes: it is an aware datetime (SPEC 0.1: time
enters as an argument, with its offset, so nothing is ever read in an implied zone).

Instants are normalised to UTC where they come in (`utc`, SPEC A6): every duration the core adds
is then elapsed time, so a wait of two hours across a clock change is two real hours, whatever
zone the caller's `now` carries. A zone is used only to read clock-time notices and to write
`<time>` (`clock`). `clock` and `format_left` (C7's time left) are here so that `autodev
status` writes times without loading the scheduler or the sleeper (issue 13)."""

from __future__ import annotations

import math
from datetime import UTC, date, datetime, tzinfo
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # for the validators' signatures only: `autodev status` loads no attrs
    import attrs


def is_aware(value: object) -> bool:
    return isinstance(value, datetime) and value.utcoffset() is not None


def utc(value: object) -> Any:
    """attrs converter: an aware datetime as the same instant in UTC (A6: arithmetic on a
    zone-aware local datetime adds wall-clock time, not elapsed time). Anything else is passed
    through unchanged for the validator to refuse."""
    if isinstance(value, datetime) and value.tzinfo is not UTC and value.utcoffset() is not None:
        return value.astimezone(UTC)
    return value


def utc_or_none(value: object) -> Any:
    return None if value is None else utc(value)


def aware(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """attrs validator: `value` must be an aware datetime."""
    if not (isinstance(value, datetime) and value.utcoffset() is not None):  # `is_aware`, inline
        owner = type(instance).__name__
        raise ValueError(f"{owner}.{attribute.name} must be an aware datetime, not {value!r}")


def aware_or_none(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """attrs validator: `value` is None or an aware datetime."""
    if value is not None:
        aware(instance, attribute, value)


def clock(at: datetime, line_at: datetime, zone: tzinfo) -> str:
    """`<time>` of SPEC A: `HH:MM` on the line's local day, else `YYYY-MM-DD HH:MM`."""
    return local_clock(at.astimezone(zone), line_at.astimezone(zone).date())


#: "00" to "59": two digits by table, several times cheaper than a `02d` format spec (issue 13)
_TWO_DIGITS = tuple(f"{n:02d}" for n in range(60))


def local_clock(local: datetime, day: date) -> str:
    """`clock` of an instant already in the run's zone, for a line written on local `day`."""
    two = _TWO_DIGITS
    if local.date() == day:
        return f"{two[local.hour]}:{two[local.minute]}"
    return (f"{local.year:04d}-{two[local.month]}-{two[local.day]} "
            f"{two[local.hour]}:{two[local.minute]}")


def format_left(seconds: float) -> str:
    """`1h12m`, `5m`, `40s`: time left, minutes rounded up so `0m` never shows while waiting."""
    if seconds < 60:
        return f"{max(0, math.ceil(seconds))}s"
    minutes = math.ceil(seconds / 60)
    hours, minutes = divmod(minutes, 60)
    if hours == 0:
        return f"{minutes}m"
    return f"{hours}h{minutes:02d}m"
