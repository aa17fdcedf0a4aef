"""A shared record as Redis holds it (docs/sharing.md): a limit (`Shared`) or a usage reading
(`SharedUsage`), times in epoch milliseconds, read back leniently (a record this version cannot
read is not this run's business) and handed to the core as the event it stands for.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Final

import attrs

from autodev_core.engine import Engine

if TYPE_CHECKING:  # the scheduler is loaded only by a run that shares (cold start)
    from autodev_core.scheduler import LimitObserved, UsageObserved

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_MS: Final = timedelta(milliseconds=1)


def millis(at: datetime) -> int:
    """Epoch milliseconds, floored (Redis keys and TTLs are in ms)."""
    return (at - _EPOCH) // _MS


def from_millis(value: float) -> datetime:
    return _EPOCH + timedelta(milliseconds=int(value))


@attrs.frozen
class Shared:
    """One record as Redis holds it."""

    account: str
    engine: Engine
    reset: int
    read: bool
    seen: int
    who: str
    #: The writing process's run id (docs/sharing.md "Names"): two runs with the same `who`
    #: never take each other's records for their own. Empty in a record of an older version.
    run: str = ""

    def payload(self) -> str:
        """The record as the merge script takes it (`scripts.py`)."""
        data: dict[str, Any] = {"reset": self.reset, "read": self.read, "seen": self.seen,
                                "who": self.who}
        if self.run:
            data["run"] = self.run
        return json.dumps(data, separators=(",", ":"))

    def observed(self, now: datetime) -> LimitObserved:
        from autodev_core.scheduler import LimitObserved

        return LimitObserved(
            now=now,
            engine=self.engine,
            until=from_millis(self.reset),
            read=self.read,
            seen=from_millis(self.seen),
            source=self.who,
        )


@attrs.frozen
class SharedUsage:
    """One usage reading as Redis holds it (a field of the engine's hash)."""

    account: str
    engine: Engine
    window: str
    utilization: float
    reset: int
    read: bool
    seen: int
    who: str
    threshold: float | None = None
    #: The writing process's run id, as `Shared.run`.
    run: str = ""

    def payload(self) -> str:
        data: dict[str, Any] = {"util": self.utilization, "reset": self.reset,
                                "read": self.read, "seen": self.seen, "who": self.who,
                                "threshold": self.threshold}
        if self.run:
            data["run"] = self.run
        return json.dumps(data, separators=(",", ":"))

    def observed(self, now: datetime) -> UsageObserved:
        """The reading as the core takes it from another run: a reset the provider did not say
        stays unsaid (the receiver counts it as its own policy's A6 default after `seen`)."""
        from autodev_core.detection.classification import UsageReading
        from autodev_core.scheduler import UsageObserved

        return UsageObserved(
            now=now,
            engine=self.engine,
            reading=UsageReading(
                provider=self.engine.provider,
                utilization=self.utilization,
                window=self.window,
                resets_at=from_millis(self.reset) if self.read else None,
                threshold=self.threshold,
            ),
            seen=from_millis(self.seen),
            source=self.who,
        )


def merge_args(record: Shared, now_ms: int, channel: str) -> list[Any]:
    """The merge script's ARGV for `record` (`scripts.MERGE_SCRIPT`): the record, now, the
    channel, the account, the engine, and the core's bound on a believable read reset and the
    A6 default that replaces one past it (`registry.believed`, docs/sharing.md "Clocks"), in ms."""
    from autodev_core.scheduler.policy import DEFAULT_LIMIT_WAIT
    from autodev_core.scheduler.registry import LONGEST_WINDOW, TRUST_GRACE

    provider = record.engine.provider
    return [record.payload(), now_ms, channel, record.account, str(record.engine),
            (LONGEST_WINDOW[provider] + TRUST_GRACE) // _MS, DEFAULT_LIMIT_WAIT[provider] // _MS]


def _parse_usage(account: str, engine: Engine, window: str, raw: Any) -> SharedUsage | None:
    try:
        data = json.loads(raw) if isinstance(raw, (str, bytes, bytearray)) else raw
        util = data["util"]
        threshold = data.get("threshold")
        for value in (util, threshold):
            if value is not None and (isinstance(value, bool)
                                      or not isinstance(value, (int, float))
                                      or not 0 <= value <= 10):
                return None  # not a reading the core would take
        return SharedUsage(
            account=account,
            engine=engine,
            window=window,
            utilization=float(util),
            reset=int(data["reset"]),
            read=bool(data["read"]),
            seen=int(data["seen"]),
            who=str(data["who"]),
            threshold=None if threshold is None else float(threshold),
            run=_run_of(data),
        )
    except (ValueError, KeyError, TypeError, AttributeError):
        return None  # a record this version cannot read is not this run's business


def _parse(account: str, engine: Engine, raw: Any) -> Shared | None:
    try:
        data = json.loads(raw)
        return Shared(
            account=account,
            engine=engine,
            reset=int(data["reset"]),
            read=bool(data["read"]),
            seen=int(data["seen"]),
            who=str(data["who"]),
            run=_run_of(data),
        )
    except (ValueError, KeyError, TypeError, AttributeError):
        return None  # a record this version cannot read is not this run's business


def _run_of(data: Any) -> str:
    run = data.get("run", "")
    return run if isinstance(run, str) else ""


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
