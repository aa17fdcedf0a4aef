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

    - `free_entry[runner]`: its first lane entry that is not limited (None: none is, A23);
    - `free_entries[runner]`: all of them, in chain order (what an outage may still rule out);
    - `colleague[owner]`: for a turn it owes, the first participant after it in team order with
      a free entry, and that entry (None: nobody, A15, A33);
    - `has_limited[runner]`: whether any entry of its lane is limited (else, with none free, it
      is out only because its providers cannot be reached, A36);
    - `limited[runner]`: its limited entries, a bit per position;
    - `limited_before[runner][position]`: the entries of its lane before `position` that are
      limited, a bit per position: what a seat at `position` passes because of a limit
      (`SchedulerState.passed`; coming back to one is the A23 line, `comes_back`);
    - `back`: each limited engine and when it is back (A38: a reset at `t` has passed when
      `now >= t`).
    """

    free_entry: tuple[int | None, ...]
    free_entries: tuple[tuple[int, ...], ...]
    colleague: tuple[tuple[int, int] | None, ...]
    has_limited: tuple[bool, ...]
    limited: tuple[int, ...]
    limited_before: tuple[tuple[int, ...], ...]
    back: Mapping[Engine, datetime]

    def back_at(self, engine: Engine) -> datetime | None:
        """When `engine` is back, if it is limited."""
        return self.back.get(engine)


def limited_at(config: SchedulerConfig, limits: Iterable[EngineLimit], now: datetime) -> Limited:
    """The team's lanes under the registry `limits` at `now`: an engine is limited while `now`
    is before its reset (A8, A38)."""
    back = {record.engine: record.until for record in limits if now < record.until}
    free_entries = tuple(
        tuple(position for position, engine in enumerate(lane) if engine not in back)
        for lane in config.lanes
    )
    limited = tuple(
        sum(1 << position for position, engine in enumerate(lane) if engine in back)
        for lane in config.lanes
    )
    free_entry = tuple(free[0] if free else None for free in free_entries)
    return Limited(
        free_entry=free_entry,
        free_entries=free_entries,
        colleague=tuple(_colleague(free_entry, owner) for owner in range(len(free_entry))),
        has_limited=tuple(out != 0 for out in limited),
        limited=limited,
        limited_before=tuple(
            tuple(out & ((1 << position) - 1) for position in range(len(lane)))
            for out, lane in zip(limited, config.lanes, strict=True)
        ),
        back=back,
    )


def _colleague(free_entry: tuple[int | None, ...], owner: int) -> tuple[int, int] | None:
    """A15/A33: the first participant after `owner` in team order with a free entry."""
    n = len(free_entry)
    for offset in range(1, n + 1):
        runner = (owner + offset) % n
        entry = free_entry[runner]
        if entry is not None:
            return runner, entry
    return None


def comes_back(passed: int, position: int) -> bool:
    """Whether lane entry `position` is one a participant's seat passed because it was limited
    (`passed`, from `Limited.limited_before`): coming back to it is announced (A23)."""
    return passed >> position & 1 == 1
