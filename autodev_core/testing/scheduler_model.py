"""The scheduler harness's model (SPEC 0.4): the SPEC's numbers and what they mean, stated
here on their own, independently of the code under test (`autodev_core.scheduler`): a model
that imported the code's constants could never catch a wrong one.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from ..engine import Engine
from ..scheduler.state import SchedulerState

# ------------------------------------------------------------------------------------------------
# The SPEC's numbers

#: A28: the wait after the 1st, 2nd, ... consecutive failure: 1 s, then 1, 2, 4, 8, 15, 30 min ...
SPEC_BACKOFF: tuple[timedelta, ...] = (
    timedelta(seconds=1), timedelta(minutes=1), timedelta(minutes=2), timedelta(minutes=4),
    timedelta(minutes=8), timedelta(minutes=15), timedelta(minutes=30),
)
#: ... then one hour each time.
SPEC_BACKOFF_THEN: timedelta = timedelta(hours=1)
#: A29: the run pauses at the 12th consecutive failure.
SPEC_GIVE_UP_AFTER: int = 12
#: A31: three turns in a row without a post pause the run.
SPEC_EMPTY_TURNS: int = 3
#: A27: an unreachable provider is tried again after 1, 2, 4, 8 minutes ...
SPEC_OUTAGE_RETRIES: tuple[timedelta, ...] = (
    timedelta(minutes=1), timedelta(minutes=2), timedelta(minutes=4), timedelta(minutes=8),
)
#: ... then every 15 minutes.
SPEC_OUTAGE_THEN: timedelta = timedelta(minutes=15)
#: A6: with no readable reset, claude waits one hour; codex and agy are probed after 30 minutes.
SPEC_DEFAULT_RESET: dict[str, timedelta] = {
    "claude": timedelta(hours=1), "codex": timedelta(minutes=30), "agy": timedelta(minutes=30),
}


def spec_backoff(failures: int) -> timedelta:
    """A28: the wait after `failures` consecutive failures (1-based)."""
    return SPEC_BACKOFF[failures - 1] if failures <= len(SPEC_BACKOFF) else SPEC_BACKOFF_THEN


def spec_outage_retry(attempts: int) -> timedelta:
    """A27: the wait before trying a provider that could not be reached `attempts` times."""
    if attempts <= len(SPEC_OUTAGE_RETRIES):
        return SPEC_OUTAGE_RETRIES[attempts - 1]
    return SPEC_OUTAGE_THEN


#: Model of docs/limits.md "Readings per account window" (issue 37), stated on its own.
_ACCOUNT_WINDOWS = ("five_hour", "seven_day", "primary", "secondary")


def _model_family(window: str) -> str | None:
    """`seven_day_opus` -> `opus` (a per-model window); None otherwise."""
    for name in _ACCOUNT_WINDOWS:
        if window.startswith(name + "_") and window != name + "_":
            return window[len(name) + 1:].lower()
    return None


def _holds_for(record_engine: Engine, window: str, engine: Engine,
               readings: tuple[Any, ...]) -> bool:
    """Whether a reading of `window` made on `record_engine` is a reading of `engine`."""
    if window in _ACCOUNT_WINDOWS:  # the account: `Engine.primary` (issue 42 adds accounts)
        return record_engine.primary == engine.primary
    family = _model_family(window)
    if family is None:
        return record_engine == engine
    if record_engine.primary != engine.primary:
        return False
    if engine.model is None:
        return any(r.engine == engine and r.window == window for r in readings)
    return family in engine.model.lower()


def reading_levels(state: SchedulerState, now: datetime) -> dict[Engine, float]:
    """docs/limits.md: for each of the team's engines (and each that reported), the highest of
    its windows' readings — a window's reading for an engine being the newest live one among the
    readings that hold for it (its account's windows, its model's, its own), the higher
    utilization on a tie (A38: a window ending at `t` has reset when `now >= t`). 0 with none."""
    engines = {e for lane in state.config.lanes for e in lane}
    engines |= {r.engine for r in state.readings}
    levels: dict[Engine, float] = {}
    for engine in engines:
        windows: dict[tuple[str, str], list[Any]] = {}
        for r in state.readings:
            if now < r.until and _holds_for(r.engine, r.window, engine, state.readings):
                scope = (str(r.engine.primary) if r.window in _ACCOUNT_WINDOWS
                         or _model_family(r.window) is not None else str(r.engine))
                windows.setdefault((scope, r.window), []).append(r)
        level = 0.0
        for held in windows.values():
            newest = max(held, key=lambda r: (r.seen if r.seen is not None else r.until,
                                              r.utilization))
            level = max(level, newest.utilization)
        levels[engine] = level
    return levels


def near_limit(state: SchedulerState, now: datetime) -> frozenset[Engine]:
    """docs/limits.md: the team's engines some window of which holds at or above the policy's
    threshold and has not reset (A38); empty with `Policy.headroom` off (`reading_levels`)."""
    headroom = state.config.policy.headroom
    if headroom is None:
        return frozenset()
    return frozenset(engine for engine, level in reading_levels(state, now).items()
                     if level >= headroom.hand_over_at)


# ------------------------------------------------------------------------------------------------
# Expectations, computed independently of the reducer


def back_at(state: SchedulerState, engine: Engine, now: datetime) -> datetime | None:
    """When a lane entry is usable again (its engine's reset and its provider's retry), or None
    when it is usable now (A8, A26, A38)."""
    times = [r.until for r in state.limits if r.engine == engine and r.until > now]
    times += [o.retry_at for o in state.outages if o.provider == engine.provider
              and o.retry_at > now]
    return max(times) if times else None


def expected_wait(state: SchedulerState, now: datetime, runners: list[int]) -> datetime:
    """A18/A35: the first instant any entry of `runners` is usable again."""
    found = [back_at(state, e, now) for r in runners for e in state.config.lanes[r]]
    assert all(t is not None for t in found), "a wait was chosen while an entry was usable"
    return min(t for t in found if t is not None)


def is_learned(message: str) -> bool:
    """A39: the lines that say what was learned (the rest say what was decided)."""
    return (
        " limited until " in message
        or " posted via " in message
        or message.endswith(" is reachable again")
        or " could not be reached; trying it again at " in message
        or " window — handing over until " in message  # docs/limits.md
    )


__all__ = [
    "SPEC_BACKOFF",
    "SPEC_BACKOFF_THEN",
    "SPEC_DEFAULT_RESET",
    "SPEC_EMPTY_TURNS",
    "SPEC_GIVE_UP_AFTER",
    "SPEC_OUTAGE_RETRIES",
    "SPEC_OUTAGE_THEN",
    "back_at",
    "expected_wait",
    "is_learned",
    "near_limit",
    "reading_levels",
    "spec_backoff",
    "spec_outage_retry",
]
