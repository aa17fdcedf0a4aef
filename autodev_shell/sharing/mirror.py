"""A local mirror of the shared limits and usage readings (docs/sharing.md).

The pub/sub subscriber hears every change the merge scripts make; kept in memory, those changes
let a turn start read memory instead of making a round trip to Redis. The mirror is only a cache
of what Redis holds (no policy: the core decides), and it is trusted only when nothing it cannot
rule out may have been missed:

- the subscription it was built under is the current one, and is live: a PONG on the pub/sub
  connection confirmed it within `LIVE_SECONDS` (a PING sent at `t` and answered proves that
  every message published before `t` has been received, in order);
- it was rebuilt (one read of the engines' limit keys and usage hashes) after that subscription
  was confirmed, so a change published before the subscription is in the snapshot and every
  change after it comes as a message;
- it holds a snapshot of every engine asked for.

A record whose reset has passed (`reset <= now`, in epoch ms: the comparison the round trip,
the scripts and the core use) is never read out: expiry is applied here, without waiting for
Redis to expire the key. This module does no I/O; `LimitSharing` drives it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Final

from autodev_core.engine import Engine

if TYPE_CHECKING:
    from . import Shared, SharedUsage

#: Seconds a PONG on the pub/sub connection vouches for the subscription (counted from when
#: its PING was sent). Past it, a turn start makes the round trip instead.
LIVE_SECONDS: Final = 2.0
#: Seconds between the subscriber's PINGs (well inside LIVE_SECONDS, so a live subscription
#: stays trusted).
PING_SECONDS: Final = 0.5

#: An engine of an account: where one limit record and one hash of readings live.
Where = tuple[str, Engine]


class Liveness:
    """What the subscriber can vouch for: the live subscription's generation (None: none) and
    the monotonic time of the last PING seen answered on it (or of its SUBSCRIBE)."""

    def __init__(self) -> None:
        self._count = 0
        self.generation: int | None = None
        self.confirmed: float | None = None

    def subscribed(self, sent: float) -> None:
        """Every channel confirmed a SUBSCRIBE sent at `sent`: a new generation, so the mirror
        must be rebuilt under it (messages of the gap before it were not heard)."""
        self._count += 1
        self.generation = self._count
        self.confirmed = sent

    def answered(self, sent: float) -> None:
        """The PONG of a PING sent at `sent` came back: every message published before it has
        been received."""
        if self.generation is not None and (self.confirmed is None or sent > self.confirmed):
            self.confirmed = sent

    def ended(self) -> None:
        """The connection failed or closed: nothing is vouched for until the next subscription."""
        self.generation = None
        self.confirmed = None


class Mirror:
    """What Redis holds for the engines it was rebuilt for, kept up to date by messages."""

    def __init__(self) -> None:
        self._limits: dict[Where, Shared] = {}
        self._usage: dict[Where, dict[str, SharedUsage]] = {}
        self._covered: frozenset[Where] = frozenset()
        self._built: int | None = None  # the subscription generation of the last rebuild
        self.version = 0  # moves at every change: an unchanged mirror reads no new record

    def _changed(self) -> None:
        self.version += 1

    @property
    def built(self) -> int | None:
        return self._built

    def invalidate(self) -> None:
        """Forget everything: a lost connection, a failed read, a gap that cannot be ruled out."""
        self._limits.clear()
        self._usage.clear()
        self._covered = frozenset()
        self._built = None
        self._changed()

    def rebuild(
        self,
        generation: int | None,
        limits: Mapping[Where, Shared | None],
        usage: Mapping[Where, Iterable[SharedUsage]],
    ) -> None:
        """A snapshot read (one `MGET` of the limits, the usage hashes) that started while
        subscription `generation` was live (None: no live subscription, so it is not trusted)
        replaces everything held."""
        self.invalidate()
        self._changed()
        for where, record in limits.items():
            if record is not None:
                self._limits[where] = record
        for where, readings in usage.items():
            self._usage[where] = {r.window: r for r in readings}
        self._covered = frozenset(limits) & frozenset(usage)
        self._built = generation

    def apply_limit(self, record: Shared) -> None:
        """A message: the record the merge script just wrote (published in write order)."""
        self._limits[(record.account, record.engine)] = record
        self._changed()

    def apply_usage(self, record: SharedUsage) -> None:
        """A message: the reading the usage script just wrote in its window."""
        self._usage.setdefault((record.account, record.engine), {})[record.window] = record
        self._changed()

    def trusted(
        self,
        wanted: Iterable[Where],
        *,
        generation: int | None,
        confirmed: float | None,
        clock: float,
    ) -> bool:
        """Whether a turn start may read the mirror for `wanted` instead of Redis: the live
        subscription `generation` (None: none) is the one it was rebuilt under, a PING sent at
        `confirmed` (monotonic seconds) was answered within LIVE_SECONDS of `clock`, and every
        engine wanted is in the snapshot."""
        return self.live(generation=generation, confirmed=confirmed, clock=clock) and (
            self._covered.issuperset(wanted))

    def live(self, *, generation: int | None, confirmed: float | None, clock: float) -> bool:
        """`trusted` but for the engines: the subscription is the one it was rebuilt under and a
        PONG vouched for it within LIVE_SECONDS."""
        if generation is None or confirmed is None or self._built != generation:
            return False
        return clock - confirmed <= LIVE_SECONDS

    def read(
        self, wanted: Iterable[Where], now_ms: int
    ) -> tuple[list[Shared], list[SharedUsage]]:
        """What a round trip would return for `wanted` at `now_ms`, in the same order: each
        engine's limit, then each engine's readings by window; nothing whose reset has passed."""
        engines = list(dict.fromkeys(wanted))
        limits = [r for w in engines if (r := self._limits.get(w)) is not None
                  and r.reset > now_ms]
        readings: list[SharedUsage] = []
        for where in engines:
            held = self._usage.get(where, {})
            readings += [held[window] for window in sorted(held) if held[window].reset > now_ms]
        return limits, readings


__all__ = ["LIVE_SECONDS", "PING_SECONDS", "Liveness", "Mirror", "Where"]
