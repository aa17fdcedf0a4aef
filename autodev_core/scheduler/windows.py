"""Readings per account window (docs/limits.md, "Readings per account window"; issue 37).

A usage reading names its window, and a window belongs to an account, not to the engine whose
call reported it: claude's five-hour window is one for `claude`, `claude:opus` and
`claude:sonnet` alike, so a reading at 97 % on `claude:opus` is a reading of every engine of
the account. The account of an engine is `Engine.primary` (today: the provider alone).

- **Account-wide windows** (`ACCOUNT_WINDOWS`: claude's `five_hour` and `seven_day`, codex's
  `primary` and `secondary`) apply to every engine of the account.
- **Per-model windows** are an account window's name, `_`, then a model family, as claude names
  them (`seven_day_opus`, `seven_day_sonnet`): they apply to the account's engines whose model
  names that family (`claude:opus`, `claude:claude-opus-4-1`), and to an engine without a model
  that reported the window itself (it runs the CLI's default model, which autodev does not know).
- **Any other window** (a name autodev does not know, or none said) stays the reporting engine's
  own, as every reading was before.

The records stay as they were reported, per engine and window (`SchedulerState.readings`, and
shared over Redis the same way); the records of one account window join by
`registry.merge_usage` (a join, so the order of arrival never matters): the newest live reading
is the account's. Pure: `now` and the threshold are arguments.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Final

from ..engine import Engine
from .registry import merge_usage
from .state import EngineUsage

#: Windows that hold for a whole account (claude's unifiedWindows; codex's rate_limits).
ACCOUNT_WINDOWS: Final = ("five_hour", "seven_day", "primary", "secondary")


def window_family(window: str) -> str | None:
    """`seven_day_opus` -> `opus`: the model family of a per-model window; None for an
    account-wide window or one autodev does not know."""
    for name in ACCOUNT_WINDOWS:
        if window.startswith(name + "_") and len(window) > len(name) + 1:
            return window[len(name) + 1:].lower()
    return None


#: How a window's readings are grouped: (account, window) for an account-wide or per-model
#: window, (engine, window) for any other.
WindowKey = tuple[str, str]


def window_key(record: EngineUsage) -> WindowKey:
    """The account window `record` is a reading of (see the module's docstring)."""
    window = record.window
    if window in ACCOUNT_WINDOWS or window_family(window) is not None:
        return (str(record.engine.primary), window)
    return (str(record.engine), window)


def account_readings(readings: Iterable[EngineUsage], now: datetime
                     ) -> dict[WindowKey, EngineUsage]:
    """The reading of each account window at `now`: its records joined by `merge_usage`."""
    joined: dict[WindowKey, EngineUsage] = {}
    for record in readings:
        key = window_key(record)
        joined[key] = merge_usage(joined.get(key), record, now)
    return joined


def applies(record: EngineUsage, engine: Engine, reporters: frozenset[str] = frozenset()
            ) -> bool:
    """Whether the account window of `record` holds for `engine`. `reporters`: the engines (by
    name) that reported a reading of that window (an engine without a model takes a per-model
    window it reported itself)."""
    window = record.window
    if window in ACCOUNT_WINDOWS:
        return engine.primary == record.engine.primary
    family = window_family(window)
    if family is None:
        return engine == record.engine
    if engine.primary != record.engine.primary:
        return False
    if engine.model is None:
        return str(engine) in reporters
    return family in engine.model.lower()


def near_engines(readings: tuple[EngineUsage, ...], engines: Iterable[Engine], now: datetime,
                 threshold: float) -> frozenset[str]:
    """The engines (by name) of `engines` that some window applying to them holds at or above
    `threshold`, in a window that has not reset yet (A38: a window ending at `t` has reset when
    `now >= t`). The decisions of `Policy.headroom` read this and nothing else."""
    if not any(r.utilization >= threshold and now < r.until for r in readings):
        return frozenset()  # no record is near: no account window can be
    joined = account_readings(readings, now)
    near = [(key, record) for key, record in joined.items()
            if record.utilization >= threshold and now < record.until]
    if not near:
        return frozenset()
    found: set[str] = set()
    for engine in engines:
        for key, record in near:
            reporters = frozenset(str(r.engine) for r in readings if window_key(r) == key) \
                if engine.model is None and window_family(record.window) is not None \
                else frozenset()
            if applies(record, engine, reporters):
                found.add(str(engine))
                break
    return frozenset(found)


def reading_of(readings: tuple[EngineUsage, ...], engine: Engine, now: datetime) -> float:
    """The highest live reading among the account windows that hold for `engine` (0 with none):
    how near its limit it is, for the tie-break between entries that are all near (docs/
    scheduler.md, "Which entry a turn runs on")."""
    joined = account_readings(readings, now)
    level = 0.0
    for key, record in joined.items():
        if now >= record.until or record.utilization <= level:
            continue
        reporters = frozenset(str(r.engine) for r in readings if window_key(r) == key) \
            if engine.model is None and window_family(record.window) is not None \
            else frozenset()
        if applies(record, engine, reporters):
            level = record.utilization
    return level


__all__ = ["ACCOUNT_WINDOWS", "account_readings", "applies", "near_engines", "reading_of",
           "window_family", "window_key"]
