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
"""

from __future__ import annotations

from datetime import datetime

from .state import EngineLimit, EngineUsage


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
    `now` is a limit that has already ended: the next turn start lifts it (A23, A38).
    """
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


__all__ = ["merge_limit", "merge_usage"]
