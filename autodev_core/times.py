"""The one check every instant of the core passes: it is an aware datetime (SPEC 0.1: time
enters as an argument, with its offset, so nothing is ever read in an implied zone)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import attrs


def is_aware(value: object) -> bool:
    return isinstance(value, datetime) and value.utcoffset() is not None


def aware(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """attrs validator: `value` must be an aware datetime."""
    if not is_aware(value):
        owner = type(instance).__name__
        raise ValueError(f"{owner}.{attribute.name} must be an aware datetime, not {value!r}")


def aware_or_none(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """attrs validator: `value` is None or an aware datetime."""
    if value is not None:
        aware(instance, attribute, value)
