"""How a limit seen anywhere joins the registry (A6, A8, A23; docs/sharing.md).

A limit can be seen by this run (a notice in a call's output) or by another run driving the same
account (`LimitObserved`). Both go through `merge_limit`, so a shared limit is routed around,
waited for and lifted exactly as a local one is. The rule:

- a reset read from a notice replaces one the A6 default stood in for, even when it is earlier;
- otherwise a recorded reset only moves later (never earlier: the "cooldown moved earlier" bug);
- an observation seen once the recorded limit had ended starts a new limit;
- an observation whose reset had passed before the recorded limit was seen belongs to an older
  limit and changes nothing (a late delivery, e.g. re-published after an outage of the registry);
- an observation whose reset has already passed is still recorded (ended): until the next turn
  start lifts it (A23), it can still outrank a defaulted sighting of the same limit arriving
  after it.

Within one limit the merge is a join (commutative, associative, idempotent), so the order in
which observations arrive does not matter; the Redis registry runs the same rule server-side.

A shared reset is not trusted blindly (docs/sharing.md "Clocks"; issue 40): another run's read
reset further after its sighting than any window of its provider can mean is taken as the A6
default from that sighting (`believed`, applied to both sides of every merge, so the merge is
still a join), and a run whose clock is known to be off by more than A6's grace shares a reset
it read from a clock time or a date as unread (`vouched`): such a reading depends on its clock.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from types import MappingProxyType
from typing import Final, Literal

import attrs

from .policy import DEFAULT_LIMIT_WAIT
from .state import EngineLimit, EngineUsage

#: docs/sharing.md "Clocks": the longest window each provider counts usage over (claude's and
#: codex's weekly windows; agy's is taken to be no longer). No reset a provider states lies
#: further after its notice than this: a shared read reset that does is a misreading.
LONGEST_WINDOW: Final = MappingProxyType({
    "claude": timedelta(days=7),
    "codex": timedelta(days=7),
    "agy": timedelta(days=7),
})
#: A6's grace (ten minutes, the reader's `PAST_GRACE`): how far a clock may be off before the
#: resets it reads from a clock time or a date are not vouched for when shared, and how much a
#: shared read reset may pass the longest window.
TRUST_GRACE: Final = timedelta(minutes=10)

#: How a notice wrote its reset (`LimitNotice.reset_form`): an epoch or a relative duration
#: does not depend on the reader's clock's day; a clock time or a date does (A6: a clock more
#: than the grace off reads a reset just passed as tomorrow's, a date as next year's).
ResetForm = Literal["epoch", "relative", "clock", "date"]
_ON_THE_CLOCK: Final = frozenset({"clock", "date"})


def _defaulted(record: EngineLimit, seen: datetime) -> EngineLimit:
    """`record` as if its notice had carried no readable reset: the A6 default after `seen`."""
    return attrs.evolve(record, until=seen + DEFAULT_LIMIT_WAIT[record.engine.provider],
                        read=False, seen=seen)


def beyond_any_window(record: EngineLimit) -> bool:
    """Whether `record` claims a read reset later after its sighting than any window of its
    provider can mean: more than LONGEST_WINDOW plus TRUST_GRACE."""
    return (record.read and record.seen is not None
            and record.until - record.seen > LONGEST_WINDOW[record.engine.provider] + TRUST_GRACE)


def believed(record: EngineLimit) -> EngineLimit:
    """`record` as a reader takes it (docs/sharing.md "Clocks"): another run's read reset
    `beyond_any_window` is taken as unread, the A6 default after its `seen`; anything else —
    and this run's own records (`source` empty), which keep their own A6 reading — as it is."""
    if record.source == "" or not beyond_any_window(record):
        return record
    assert record.seen is not None  # beyond_any_window
    return _defaulted(record, record.seen)


def vouched(record: EngineLimit, form: ResetForm | str | None, skew: timedelta | None,
            now: datetime) -> EngineLimit:
    """What a run may share of its own `record` (docs/sharing.md "Clocks"): a reset read from a
    clock time or a date (`form`) by a clock known to be off Redis's by more than TRUST_GRACE
    (`skew`: this clock minus Redis's, None when not measured) depends on that clock, so it is
    shared as unread: the A6 default after when it was seen (`now` when not known). An epoch or
    a relative reset, a defaulted one, or any reset of a clock within the grace, as it is."""
    if not record.read or form not in _ON_THE_CLOCK or skew is None or abs(skew) <= TRUST_GRACE:
        return record
    return _defaulted(record, record.seen if record.seen is not None else now)


def _rank(record: EngineLimit) -> tuple[bool, datetime]:
    return (record.read, record.until)


def _better(a: EngineLimit, b: EngineLimit) -> EngineLimit:
    """The join of two records of one limit: read beats defaulted, then the later reset wins;
    a full tie goes to this run's own record, then to the smaller source name, then the earlier
    sighting (a total order, so the result never depends on which arrived first)."""
    if _rank(a) != _rank(b):
        return a if _rank(a) > _rank(b) else b

    def tie(r: EngineLimit) -> tuple[bool, str, datetime | None]:
        return (r.source != "", r.source, r.seen)

    ta, tb = tie(a), tie(b)
    if ta[:2] != tb[:2]:
        return a if ta[:2] < tb[:2] else b
    if a.seen is None or b.seen is None:
        return a if a.seen is None else b
    return a if a.seen <= b.seen else b


def merge_limit(record: EngineLimit | None, observed: EngineLimit, now: datetime) -> EngineLimit:
    """The record of `observed.engine` after `observed` joins `record` at `now`.

    `observed.seen` is when it was seen (None: at `now`). A result whose `until` is not after
    `now` is a limit that has already ended: the next turn start lifts it (A23, A38). Both
    sides are `believed` first: another run's reset beyond any window is its A6 default.
    """
    observed = believed(observed)
    record = None if record is None else believed(record)
    seen = observed.seen if observed.seen is not None else now
    if record is not None and seen >= record.until:
        record = None  # the recorded limit had ended when this one was seen: a new limit
    if record is None:
        return observed
    if record.seen is not None and observed.until <= record.seen:
        return record  # an older limit, over before the recorded one was seen
    return _better(record, observed)


def _usage_rank(
    record: EngineUsage,
) -> tuple[datetime, float, datetime, bool, bool]:
    seen = record.seen if record.seen is not None else record.until
    return (seen, record.utilization, record.until, record.read, record.source == "")


def merge_usage(record: EngineUsage | None, observed: EngineUsage, now: datetime) -> EngineUsage:
    """docs/limits.md: the reading of `observed.engine` after `observed` joins `record` at `now`.

    A reading whose window has reset by `now` counts no more (A38), and any reading whose window
    has not replaces it, whichever was seen later; one that has reset never replaces one that
    has not (the Redis script drops both alike, so a run that saw a reading before it reset and
    a run that never saw it end with the same one). Among readings both live, or both reset, the
    newest (by when it was seen) wins — the account's usage now, not its peak; on a tie the
    higher utilization, the later window end, a read reset, this run's own, the smaller source
    name, then the higher threshold (a said one over none). At one `now` that is a total
    order, so the merge is a join (commutative, associative, idempotent) and the order of
    arrival never matters — the rule the Redis registry runs too."""
    if record is None:
        return observed
    live = record.until > now
    if live != (observed.until > now):
        return record if live else observed
    a, b = _usage_rank(record), _usage_rank(observed)
    if a != b:
        return record if a > b else observed
    if record.source != observed.source:
        return record if record.source < observed.source else observed
    return record if _said(record) >= _said(observed) else observed


def _said(record: EngineUsage) -> float:
    """The provider's threshold for the last tie-break (none said ranks below every one)."""
    return -1.0 if record.threshold is None else record.threshold


__all__ = [
    "LONGEST_WINDOW",
    "TRUST_GRACE",
    "ResetForm",
    "believed",
    "beyond_any_window",
    "merge_limit",
    "merge_usage",
    "vouched",
]
