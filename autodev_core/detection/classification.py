"""What a provider CLI's output means: the values `detect_limit` and `classify_output` return.

SPEC D fixes these names. The detectors live in `reader`; the scheduler reads only these
values, never raw text (A1: a limit is known only when a call reports it).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any, Literal

import attrs

from ..engine import PROVIDERS
from ..times import utc_or_none

#: `LimitNotice.reset_form`: how a notice wrote its reset (docs/sharing.md "Clocks").
RESET_FORMS = ("epoch", "relative", "clock", "date")

OutputKind = Literal["limit", "network", "login", "other"]
OUTPUT_KINDS: tuple[str, ...] = ("limit", "network", "login", "other")


@attrs.frozen
class LimitNotice:
    """A usage limit a call reported (A2-A4). `reset_at` is None when no reset was readable (A6);
    it is kept in UTC (A6: the core computes instants in UTC)."""

    provider: str = attrs.field(validator=attrs.validators.in_(PROVIDERS))
    reset_at: datetime | None = attrs.field(converter=utc_or_none)
    text: str = attrs.field()
    #: How the reset was written (docs/sharing.md "Clocks"): `epoch` (also a structured
    #: event's), `relative` (a duration), `clock` (a clock time, read on this machine's clock's
    #: day) or `date` (a date, a weekday, tomorrow); None when no reset was read or not known.
    #: Not part of equality: it is the same limit however its reset was written.
    reset_form: str | None = attrs.field(
        default=None, eq=False,
        validator=attrs.validators.optional(attrs.validators.in_(RESET_FORMS)))

    @reset_at.validator
    def _aware(self, _attribute: object, value: datetime | None) -> None:
        if value is not None and value.utcoffset() is None:
            raise ValueError("LimitNotice.reset_at must be an aware datetime")


def _check_fraction(name: str, value: object) -> None:
    """A reading's fraction is a number (a bool is none) from 0 to `MAX_UTILIZATION`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"UsageReading.{name} must be a number, not {value!r}")
    if not 0 <= value <= MAX_UTILIZATION:  # (NaN fails this too)
        raise ValueError(
            f"UsageReading.{name} must be between 0 and {MAX_UTILIZATION:g}, not {value!r}"
        )


def _utilization(value: object) -> float:
    """A reading's fraction, checked before it becomes a float."""
    _check_fraction("utilization", value)
    return float(value)  # type: ignore[arg-type]


def _fraction_or_none(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None:
        _check_fraction(attribute.name, value)


#: A usage reading above this is misread (claude writes 0..1; 1.0 is the whole window).
MAX_UTILIZATION = 10.0


@attrs.frozen
class UsageReading:
    """How much of a usage window a healthy call reported as used (docs/limits.md), in the CLI's own
    structured output — never from model text (A5), never polled (A1).

    `utilization` is a fraction (0.97 = 97 %); `window` the provider's name for the window
    (claude's `rateLimitType`: `five_hour`, `seven_day`, `seven_day_opus`, ...; empty when not
    said); `resets_at` when the window resets (UTC; None when not said); `threshold` the
    fraction the provider's own warning fired at (claude's `surpassedThreshold`; None when not
    said). A reading is not a limit (A2): only a policy that asks for it acts on it
    (`Policy.headroom`, docs/limits.md).
    """

    provider: str = attrs.field(validator=attrs.validators.in_(PROVIDERS))
    utilization: float = attrs.field(converter=_utilization)
    window: str = attrs.field(default="", validator=attrs.validators.instance_of(str))
    resets_at: datetime | None = attrs.field(default=None, converter=utc_or_none)
    threshold: float | None = attrs.field(default=None, validator=_fraction_or_none)

    @resets_at.validator
    def _aware(self, _attribute: object, value: datetime | None) -> None:
        if value is not None and value.utcoffset() is None:
            raise ValueError("UsageReading.resets_at must be an aware datetime")


def _reading_tuple(value: Iterable[UsageReading]) -> tuple[UsageReading, ...]:
    """Readings as a tuple (issue 37: one per window a call reported)."""
    return tuple(value)


@attrs.frozen
class Classification:
    """The meaning of one call's output (SPEC D `classify_output`).

    `kind` is "limit" (then `limit` is set), "network" (A26, A37), "login" (A32) or "other"
    (a post or a plain failure: the caller decides which). `text` is what was matched, for logs.
    `usage` is the usage reading the CLI reported on a call of kind "other" (docs/limits.md; None
    when it reported none, and always None for the other kinds): of several windows, the one
    nearest its limit; `readings` holds each window's reading.
    """

    kind: OutputKind = attrs.field(validator=attrs.validators.in_(OUTPUT_KINDS))
    limit: LimitNotice | None = attrs.field(default=None)
    text: str = ""
    usage: UsageReading | None = attrs.field(default=None)
    #: Every window the call reported, one reading each (issue 37: a reading names its window,
    #: and each window is kept, not only the nearest): `usage` is the one nearest its limit.
    readings: tuple[UsageReading, ...] = attrs.field(default=(), converter=_reading_tuple)

    @readings.validator
    def _readings_only_other(self, _attribute: object, value: tuple[UsageReading, ...]) -> None:
        if value and (self.kind != "other"
                      or not all(isinstance(r, UsageReading) for r in value)):
            raise ValueError("Classification.readings are UsageReadings, on kind 'other' only")

    @usage.validator
    def _usage_only_other(self, _attribute: object, value: UsageReading | None) -> None:
        if value is not None and (self.kind != "other" or not isinstance(value, UsageReading)):
            raise ValueError("Classification.usage is a UsageReading, on kind 'other' only")

    @limit.validator
    def _limit_iff_kind(self, _attribute: object, value: LimitNotice | None) -> None:
        if (self.kind == "limit") != (value is not None):
            raise ValueError("Classification.limit is set exactly when kind == 'limit'")
