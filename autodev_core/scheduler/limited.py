"""Which engines are limited at an instant, and what that means for each lane (A8, A23, A24,
A38): the limit registry read as bit masks, behind named questions.

The scheduler asks a handful of questions many times a step: which lane entry of a participant
is free, which entries before it are limited, when a limited engine is back. Scanning the
registry (`SchedulerState.limits`) for each was most of a step's cost (issue 13), so the team's
distinct lane engines are numbered (`SchedulerConfig.engine_numbers`, a bit each,
`SchedulerConfig.lane_bits`), the registry is read once by number (`LimitIndex`), and the
engines limited at an instant are one integer mask whose meaning for the lanes is worked out
once per mask (`Limited`). The bits stay in this module: `step` reads the answers by name
(`free_entry`, `limited_before`, `back_at`, `comes_back`, ...).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from .state import EngineLimit, SchedulerConfig

_DAWN: Final = datetime.min.replace(tzinfo=UTC)
_DUSK: Final = datetime.max.replace(tzinfo=UTC)


class Limited:
    """The team's lanes when the engines of `mask` (a bit per engine number,
    `SchedulerConfig.engine_numbers`) are limited and no provider is out, for each participant
    by its place in the team. Worked out once per mask and config (`limited_at`), read by
    `step`; never changed.

    - `free_entry[runner]`: its first lane entry that is not limited (None: none is, A23);
    - `free_entries[runner]`: all of them, in chain order (what an outage may still rule out);
    - `colleague[owner]`: for a turn it owes, the first participant after it in team order with
      a free entry, and that entry (None: nobody, A15, A33);
    - `has_limited[runner]`: whether any entry of its lane is limited (else, with none free, it
      is out only because its providers cannot be reached, A36);
    - `limited_before[runner][position]`: the entries of its lane before `position` that are
      limited, a bit per position: what a seat at `position` passes because of a limit
      (`SchedulerState.passed`; coming back to one is the A23 line, `comes_back`);
    - `limited[runner]`: its limited entries, a bit per position.

    Tuples read by index, not methods: `step` asks them several times a step (issue 13).
    """

    __slots__ = ("colleague", "free_entries", "free_entry", "has_limited", "limited",
                 "limited_before", "mask")

    def __init__(self, config: SchedulerConfig, mask: int) -> None:
        self.mask = mask
        free_entries: list[tuple[int, ...]] = []
        limited: list[int] = []  # a lane's limited entries, a bit per position
        for bits in config.lane_bits:
            free = []
            out = 0
            for position, bit in enumerate(bits):
                if mask & bit:
                    out |= 1 << position
                else:
                    free.append(position)
            free_entries.append(tuple(free))
            limited.append(out)
        first = [free[0] if free else None for free in free_entries]
        n = len(first)
        colleague: list[tuple[int, int] | None] = []
        for owner in range(n):
            found = None
            for offset in range(1, n + 1):
                runner = (owner + offset) % n
                entry = first[runner]
                if entry is not None:
                    found = (runner, entry)
                    break
            colleague.append(found)
        self.free_entry = tuple(first)
        self.free_entries = tuple(free_entries)
        self.limited = tuple(limited)
        self.has_limited = tuple(out != 0 for out in limited)
        self.limited_before = tuple(
            tuple(out & ((1 << position) - 1) for position in range(len(bits)))
            for out, bits in zip(limited, config.lane_bits, strict=True))
        self.colleague = tuple(colleague)


def comes_back(passed: int, position: int) -> bool:
    """Whether lane entry `position` is one a participant's seat passed because it was limited
    (`passed`, from `Limited.limited_before`): coming back to it is announced (A23)."""
    return passed >> position & 1 == 1


#: The most masks a config remembers (`SchedulerConfig.limited_cache`): a run meets few.
LIMITED_CACHE_SIZE = 1024


def limited_at(config: SchedulerConfig, mask: int) -> Limited:
    """`Limited(config, mask)`, worked out once per config and mask."""
    cache = config.limited_cache
    found = cache.get(mask)
    if found is None:
        if len(cache) >= LIMITED_CACHE_SIZE:
            cache.clear()
        found = cache[mask] = Limited(config, mask)
    return found


class LimitIndex:
    """The limit registry (`SchedulerState.limits`) read by the team's engine numbers
    (`SchedulerConfig.engine_numbers`): derived from it, never serialised, never compared.

    `entries` maps the number of each engine of the team's lanes that has a record to its reset
    (never changed once built); `earliest` is the earliest reset of the whole registry (None: it
    is empty), so a turn start knows without a scan whether a limit has passed (A23).

    `valid` is a cache for `step` (not compared): `(since, until, limited)`, the engines
    limited at any instant from `since` (included) to `until` (excluded) (`Limited`); between
    two resets of the registry the answer does not change."""

    __slots__ = ("earliest", "entries", "valid")

    def __init__(self, entries: Mapping[int, datetime], earliest: datetime | None) -> None:
        self.entries = entries
        self.earliest = earliest
        self.valid: tuple[datetime, datetime, Limited] | None = None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LimitIndex):
            return NotImplemented
        return self.entries == other.entries and self.earliest == other.earliest

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"LimitIndex(entries={self.entries!r}, earliest={self.earliest!r})"

    def known_at(self, now: datetime) -> Limited | None:
        """The engines limited at `now` when an earlier reading still holds (no reset passed
        since), else None."""
        valid = self.valid
        return valid[2] if valid is not None and valid[0] <= now < valid[1] else None

    def at(self, config: SchedulerConfig, now: datetime) -> Limited:
        """The engines limited at `now`: THE statement of the limit test (A8; A38: a reset at
        `t` has passed when `now >= t`), read again only once a reset passed."""
        valid = self.valid
        if valid is not None and valid[0] <= now < valid[1]:
            return valid[2]
        mask = 0
        since = _DAWN
        until_next = _DUSK
        for number, until in self.entries.items():
            if until > now:
                mask |= 1 << number
                if until < until_next:
                    until_next = until
            elif until > since:
                since = until
        limited = limited_at(config, mask)
        self.valid = (since, until_next, limited)
        return limited

    def back_at(self, limited: Limited, number: int) -> datetime | None:
        """When the engine numbered `number` is back, if it is limited (`limited`: now)."""
        return self.entries[number] if limited.mask >> number & 1 else None

    def with_reset(
        self, config: SchedulerConfig, number: int | None, before: datetime | None,
        until: datetime, now: datetime,
    ) -> tuple[LimitIndex | None, Limited | None]:
        """This reading after one engine's record changed from reset `before` (None: it had
        none) to `until`, at `now` (None when the registry must be read again: the earliest
        reset moved later), and the engines limited at `now` if known without reading it
        (`known_at`). `number`: the engine's number, None when it is on no lane."""
        earliest = self.earliest
        if before is not None and before == earliest and until > earliest:
            return None, None
        changed = LimitIndex(
            self.entries if number is None else {**self.entries, number: until},
            until if earliest is None or until < earliest else earliest)
        valid = self.valid
        if valid is not None and valid[0] <= now < valid[1]:
            # The engines limited now, but for the one that changed; the span they hold for
            # only narrows (a narrower span is read again sooner: still true).
            since, until_next, limited = valid
            if number is not None:
                if until > now:
                    mask = limited.mask | 1 << number
                    if until < until_next:
                        until_next = until
                else:
                    mask = limited.mask & ~(1 << number)
                    if until > since:
                        since = until
                if mask != limited.mask:
                    limited = limited_at(config, mask)
            changed.valid = (since, until_next, limited)
            return changed, limited
        return changed, None

    def lifted(self, config: SchedulerConfig, now: datetime,
               earliest: datetime | None) -> LimitIndex:
        """This reading once the resets up to `now` passed and their records were lifted (A23);
        `earliest`: the earliest reset left in the registry. Every reset left is still to
        come, so all of them limit their engine until the first of them passes."""
        entries = {}
        mask = 0
        until_next = _DUSK
        for number, until in self.entries.items():
            if until > now:
                entries[number] = until
                mask |= 1 << number
                if until < until_next:
                    until_next = until
        lifted = LimitIndex(entries, earliest)
        lifted.valid = (now, until_next, limited_at(config, mask))
        return lifted


def index_limits(config: SchedulerConfig, limits: tuple[EngineLimit, ...]) -> LimitIndex:
    """`limits` read by `config`'s engine numbers (a record of an engine on no lane of the team
    counts only for `earliest`)."""
    numbers = config.engine_numbers
    entries: dict[int, datetime] = {}
    earliest: datetime | None = None
    for record in limits:
        until = record.until
        if earliest is None or until < earliest:
            earliest = until
        engine = record.engine
        number = numbers.get((engine.provider, engine.model))
        if number is not None:
            entries[number] = until
    return LimitIndex(entries, earliest)
