"""What a provider CLI's output means: the values `detect_limit` and `classify_output` return.

SPEC D fixes these names. The detectors live in `reader`; the scheduler reads only these
values, never raw text (A1: a limit is known only when a call reports it).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

import attrs

from ..engine import PROVIDERS
from ..times import utc_or_none

OutputKind = Literal["limit", "network", "login", "other"]
OUTPUT_KINDS: tuple[str, ...] = ("limit", "network", "login", "other")


@attrs.frozen
class LimitNotice:
    """A usage limit a call reported (A2-A4). `reset_at` is None when no reset was readable (A6);
    it is kept in UTC (A6: the core computes instants in UTC)."""

    provider: str = attrs.field(validator=attrs.validators.in_(PROVIDERS))
    reset_at: datetime | None = attrs.field(converter=utc_or_none)
    text: str = attrs.field()

    @reset_at.validator
    def _aware(self, _attribute: object, value: datetime | None) -> None:
        if value is not None and value.utcoffset() is None:
            raise ValueError("LimitNotice.reset_at must be an aware datetime")


@attrs.frozen
class Classification:
    """The meaning of one call's output (SPEC D `classify_output`).

    `kind` is "limit" (then `limit` is set), "network" (A26, A37), "login" (A32) or "other"
    (a post or a plain failure: the caller decides which). `text` is what was matched, for logs.
    """

    kind: OutputKind = attrs.field(validator=attrs.validators.in_(OUTPUT_KINDS))
    limit: LimitNotice | None = attrs.field(default=None)
    text: str = ""

    @limit.validator
    def _limit_iff_kind(self, _attribute: object, value: LimitNotice | None) -> None:
        if (self.kind == "limit") != (value is not None):
            raise ValueError("Classification.limit is set exactly when kind == 'limit'")
