"""Which lane entries are limited at an instant, and what that means for each lane (A8, A23,
A24, A38): the limit registry read once, behind named questions.

The scheduler asks a handful of questions about the engines limited now: which lane entry of a
participant is free, which entries before it are limited, when a limited engine is back, who
after an owner can take its turn. `limited_at` answers all of them from the registry
(`SchedulerState.limits`) at one instant; `step` reads the answers by name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime

import attrs

from ..engine import Engine
from .state import EngineLimit, SchedulerConfig


@attrs.frozen
class Limited:
    """The team's lanes at one instant, for each participant by its place in the team, when no
    provider is out (outages are the scheduler's to add):

    - `free_entries[runner]`: its lane entries that are not limited, in chain order (what an
      outage may still rule out); `free_entry(runner)` the first of them (None: none, A23);
    - `limited[runner]`: its limited entries, a bit per position; `has_limited(runner)` whether
      any is (else, with none free, it is out only because its providers cannot be reached,
      A36); `limited_before(runner, position)` those before `position`: what a seat at
      `position` passes because of a limit (`SchedulerState.passed`; coming back to one is the
      A23 line, `comes_back`);
    - `colleague(owner)`: for a turn it owes, the first participant after it in team order with
      a free entry, and that entry (None: nobody, A15, A33);
    - `back`: each limited engine and when it is back (A38: a reset at `t` has passed when
      `now >= t`).
    """

    free_entries: tuple[tuple[int, ...], ...]
    limited: tuple[int, ...]
    back: Mapping[Engine, datetime]

    def free_entry(self, runner: int) -> int | None:
        free = self.free_entries[runner]
        return free[0] if free else None

    def has_limited(self, runner: int) -> bool:
        return self.limited[runner] != 0

    def limited_before(self, runner: int, position: int) -> int:
        return self.limited[runner] & ((1 << position) - 1)

    def colleague(self, owner: int) -> tuple[int, int] | None:
        n = len(self.free_entries)
        for offset in range(1, n + 1):
            runner = (owner + offset) % n
            entry = self.free_entry(runner)
            if entry is not None:
                return runner, entry
        return None

    def back_at(self, engine: Engine) -> datetime | None:
        """When `engine` is back, if it is limited."""
        return self.back.get(engine)


def limited_at(config: SchedulerConfig, limits: Iterable[EngineLimit], now: datetime) -> Limited:
    """The team's lanes under the registry `limits` at `now`: an engine is limited while `now`
    is before its reset (A8, A38)."""
    back = {record.engine: record.until for record in limits if now < record.until}
    free_entries: list[tuple[int, ...]] = []
    limited: list[int] = []
    for lane in config.lanes:
        free: list[int] = []
        bits = 0
        for position, engine in enumerate(lane):
            if engine in back:
                bits |= 1 << position
            else:
                free.append(position)
        free_entries.append(tuple(free))
        limited.append(bits)
    return Limited(free_entries=tuple(free_entries), limited=tuple(limited), back=back)


def comes_back(passed: int, position: int) -> bool:
    """Whether lane entry `position` is one a participant's seat passed because it was limited
    (`passed`, from `Limited.limited_before`): coming back to it is announced (A23)."""
    return passed >> position & 1 == 1


def lifted_at_reset(
    before: Iterable[EngineLimit], after: Iterable[EngineLimit], now: datetime
) -> tuple[Engine, ...]:
    """A23, docs/loop.md: the engines whose limit a step took out of the registry because its
    reset had come (`until <= now`, A38), in registry order — not one replaced by a newer limit
    of the same engine (it is still limited), nor one still to come (taken out by hand: that
    step says `limit cleared by hand` itself, so its caller leaves `LimitCleared` out). One
    line each (`logs.limit_lifted`), for everyone on the engine at once."""
    kept = {record.engine for record in after}
    return tuple(record.engine for record in before
                 if record.engine not in kept and record.until <= now)

