"""The usage forecast (docs/limits.md "Forecast"; issue 37 item 3): a display, never a decision
(A1). Decisions read the readings only (`windows.near_engines`); this reads the recent series
of each account window and says where it is heading:

    claude five-hour: 82 % at 14:05, rising ~9 %/h, reaches 95 % about 15:30, resets 16:00

Pure arithmetic: `now` and the series are arguments, the text is the shell's
(the status report's `usage_forecast` module).

- **The series** (`SchedulerState.usage_series`) holds, per account window, the readings of its
  current cycle (those naming the newest reading's reset; a reading naming another reset
  starts a new cycle), at most `SERIES_MAX`, oldest dropped first (`trim_series`).
- **The rate** is the least-squares slope of utilization over time across the cycle's readings,
  in fractions per hour, when at least two readings span at least `MIN_SPAN`; else none.
- **Reaches** is when the line through the newest reading at that rate meets `target` — the
  newest reading's time when it is already there, none when the rate is not rising or the
  window resets first.
- A window whose reset has passed at `now` (A38) is not forecast.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Final

import attrs

from .state import UsagePoint

#: At most this many readings of one account window are kept.
SERIES_MAX: Final = 24
#: Readings closer together than this give no rate (one call's noise, not a trend).
MIN_SPAN: Final = timedelta(minutes=5)
#: The figure a forecast says when it is reached, with `Policy.headroom` off.
DEFAULT_TARGET: Final = 0.95
_HOUR = timedelta(hours=1)


@attrs.frozen
class WindowForecast:
    """Where one account window stands and is heading (see the module's docstring)."""

    account: str
    window: str
    utilization: float
    at: datetime
    rate_per_hour: float | None
    reaches_at: datetime | None
    resets_at: datetime | None
    target: float


def trim_series(series: tuple[UsagePoint, ...], point: UsagePoint) -> tuple[UsagePoint, ...]:
    """`series` with `point` added: of its account window, only the readings of `point`'s
    cycle (the same reset), at most SERIES_MAX, in the order they were seen; the other windows'
    untouched. Sorted by account, window, then when seen."""
    key = (point.account, point.window)
    mine = [p for p in series if (p.account, p.window) == key
            and p.resets_at == point.resets_at and p != point]
    mine.append(point)
    mine.sort(key=lambda p: (p.seen, p.utilization))
    kept = [p for p in series if (p.account, p.window) != key] + mine[-SERIES_MAX:]
    return tuple(sorted(kept, key=lambda p: (p.account, p.window, p.seen, p.utilization)))


def _slope(points: list[UsagePoint]) -> float | None:
    """Least-squares utilization per hour over `points` (None: too few, or too close)."""
    if len(points) < 2 or points[-1].seen - points[0].seen < MIN_SPAN:
        return None
    origin = points[0].seen
    xs = [(p.seen - origin) / _HOUR for p in points]
    ys = [p.utilization for p in points]
    mx = sum(xs) / len(xs)
    my = sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx <= 0:
        return None
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx


def forecast(series: Iterable[UsagePoint], now: datetime,
             target: float = DEFAULT_TARGET) -> tuple[WindowForecast, ...]:
    """Each account window's forecast at `now`, by account then window."""
    groups: dict[tuple[str, str], list[UsagePoint]] = {}
    for point in series:
        if point.seen <= now:
            groups.setdefault((point.account, point.window), []).append(point)
    out = []
    for (account, window), points in sorted(groups.items()):
        points.sort(key=lambda p: (p.seen, p.utilization))
        last = points[-1]
        if last.resets_at is not None and now >= last.resets_at:
            continue  # A38: the window has reset; its readings say nothing of the next
        cycle = [p for p in points if p.resets_at == last.resets_at]
        rate = _slope(cycle)
        reaches: datetime | None = None
        if last.utilization >= target:
            reaches = last.seen
        elif rate is not None and rate > 0:
            reaches = last.seen + (target - last.utilization) / rate * _HOUR
            if last.resets_at is not None and reaches >= last.resets_at:
                reaches = None  # the window resets first
        out.append(WindowForecast(account, window, last.utilization, last.seen, rate, reaches,
                                  last.resets_at, target))
    return tuple(out)


__all__ = ["DEFAULT_TARGET", "MIN_SPAN", "SERIES_MAX", "WindowForecast", "forecast",
           "trim_series"]
