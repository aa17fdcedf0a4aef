"""The usage forecast as `autodev status`, `status --json` (`usage_windows`) and the panel show
it (docs/limits.md "Forecast"; issue 37 item 3): one line per account window,

    claude five-hour: 82 % at 14:05, rising ~9 %/h, reaches 95 % about 15:30, resets 16:00

The arithmetic is the core's (`autodev_core.scheduler.forecast`); this writes its text. A
display, never a decision (A1).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, tzinfo
from typing import Any, Protocol


class SeriesPoint(Protocol):
    """A reading of the series as `status` reads it (`stored.StoredPoint`): instants as ISO
    8601 text with their offset."""

    @property
    def account(self) -> str: ...
    @property
    def window(self) -> str: ...
    @property
    def seen(self) -> str: ...
    @property
    def utilization(self) -> float: ...
    @property
    def resets_at(self) -> str | None: ...


#: Below this rate (a fraction per hour) a window is "steady".
STEADY = 0.005


def _percent(fraction: float) -> str:
    from autodev_core.scheduler.logs import percent

    return f"{percent(fraction)} %"


def forecast_lines(series: Iterable[SeriesPoint], now: datetime, zone: tzinfo,
                   target: float | None = None) -> list[dict[str, Any]]:
    """Each account window's forecast at `now` (times written in `zone`), as plain values:
    `engine` (the account key as text, e.g. "claude"), `window` ("five_hour"…), `utilization`
    (0..1), `at` (ISO), `rate_per_hour` (fraction per hour, or None), `reaches_at` (ISO, or
    None), `resets_at` (ISO, or None) and `line`, the text status prints. `target` is the
    figure "reaches" speaks of: `policy.headroom`'s `hand_over_at`, else 95 %."""
    points = list(series)
    if not points:
        return []  # (the scheduler's modules stay unloaded: status starts fast)
    from autodev_core.scheduler.forecast import DEFAULT_TARGET, forecast
    from autodev_core.scheduler.logs import window_name
    from autodev_core.scheduler.state import UsagePoint
    from autodev_core.times import clock

    core = [UsagePoint(p.account, p.window, datetime.fromisoformat(p.seen), p.utilization,
                       None if p.resets_at is None else datetime.fromisoformat(p.resets_at))
            for p in points]
    goal = DEFAULT_TARGET if target is None else target
    out: list[dict[str, Any]] = []
    for f in forecast(core, now, goal):
        said = [f"{f.account} {window_name(f.window)}: {_percent(f.utilization)} at "
                f"{clock(f.at, now, zone)}"]
        rate = f.rate_per_hour
        if rate is not None:
            if abs(rate) < STEADY:
                said.append("steady")
            else:
                way = "rising" if rate > 0 else "falling"
                said.append(f"{way} ~{round(abs(rate) * 100):d} %/h")
        if f.utilization >= f.target:
            said.append(f"at or above {_percent(f.target)}")
        elif f.reaches_at is not None:
            said.append(f"reaches {_percent(f.target)} about {clock(f.reaches_at, now, zone)}")
        said.append(f"resets {clock(f.resets_at, now, zone)}" if f.resets_at is not None
                    else "reset not said")
        out.append({
            "engine": f.account,
            "window": f.window,
            "utilization": f.utilization,
            "at": f.at.isoformat(),
            "rate_per_hour": rate,
            "reaches_at": f.reaches_at.isoformat() if f.reaches_at is not None else None,
            "resets_at": f.resets_at.isoformat() if f.resets_at is not None else None,
            "line": ", ".join(said),
        })
    return out


__all__ = ["forecast_lines"]
