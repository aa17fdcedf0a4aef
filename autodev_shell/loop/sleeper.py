"""Sleeping until a target in slices, with a heartbeat (SPEC C2, A19, A20, C7).

`sleep_until` carries out the core's `Sleep` effect:

- it sleeps in slices (`DEFAULT_SLICE_SECONDS`, C2) and calls the heartbeat at the start of
  every slice (A19), so a watcher sees the daemon alive during a five-hour limit wait;
- it re-reads the wall clock at every slice (A20): a machine suspended past the target wakes at
  the first slice after resuming, and a clock set backward never makes it wake early (the target
  is a wall-clock instant, compared again each time);
- it never oversleeps the target by more than one slice (a slice never reaches past the target
  as measured when it starts);
- a stop or a pause wakes it at once (within `clock.POLL_SECONDS` for a polled callable); a user
  message wakes it only when the core says so (`wakes_on_message`: a failure wait, A30; never a
  limit wait, A19);
- `news` wakes it too (reason `news`): another run sharing the account reported a limit (issue
  14), and the core must hear of it before the wait goes on.

`countdown_text` is the C7 line the CLI prints on a terminal during a long wait.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, tzinfo
from typing import Literal

import attrs

from autodev_core.times import clock as clock_text
from autodev_core.times import format_left as format_left

from ..clock import Clock, Interrupt, is_set

#: C2: the sleeper's slice, in seconds of the clock's time.
DEFAULT_SLICE_SECONDS = 30.0
#: C7: waits at least this long get a countdown on a terminal (the SPEC says "long waits").
COUNTDOWN_MIN_SECONDS = 60.0

WakeReason = Literal["target", "stop", "pause", "message", "news"]

#: Called at the start of each slice with the current time and the target.
Heartbeat = Callable[[datetime, datetime], None]


@attrs.frozen
class Wake:
    """Why and when `sleep_until` returned, and how many slices it slept."""

    reason: WakeReason
    at: datetime
    slices: int


def _interrupted(
    stop: Interrupt,
    pause: Interrupt,
    message: Interrupt,
    wakes_on_message: bool,
    news: Interrupt = None,
) -> WakeReason | None:
    if is_set(stop):
        return "stop"
    if is_set(pause):
        return "pause"
    if wakes_on_message and is_set(message):
        return "message"
    if is_set(news):
        return "news"
    return None


def sleep_until(
    target: datetime,
    *,
    clock: Clock,
    slice_seconds: float = DEFAULT_SLICE_SECONDS,
    heartbeat: Heartbeat | None = None,
    stop: Interrupt = None,
    pause: Interrupt = None,
    message: Interrupt = None,
    wakes_on_message: bool = False,
    news: Interrupt = None,
) -> Wake:
    """Sleep until the wall clock reads `target` or later, or until interrupted."""
    if target.utcoffset() is None:
        raise ValueError("sleep_until needs an aware target datetime")
    if slice_seconds <= 0:
        raise ValueError(f"slice_seconds must be positive, not {slice_seconds!r}")

    def any_interrupt() -> bool:
        return _interrupted(stop, pause, message, wakes_on_message, news) is not None

    slices = 0
    while True:
        reason = _interrupted(stop, pause, message, wakes_on_message, news)
        now = clock.now()
        if reason is not None:
            return Wake(reason=reason, at=now, slices=slices)
        if now >= target:  # A38: a target t has come when now >= t
            return Wake(reason="target", at=now, slices=slices)
        if heartbeat is not None:
            heartbeat(now, target)
        left = (target - now).total_seconds()
        slices += 1
        clock.wait(min(slice_seconds, left), any_interrupt)


def countdown_text(waiting_for: str, back_at: datetime, now: datetime, zone: tzinfo) -> str:
    """C7: `waiting for claude, back first at 14:30 — 1h12m left` (`<time>` as in SPEC A)."""
    left = (back_at - now).total_seconds()
    return f"waiting for {waiting_for}, back first at {clock_text(back_at, now, zone)} — " + (
        f"{format_left(left)} left"
    )
