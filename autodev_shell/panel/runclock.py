"""The run's clock as the panel sees it (docs/panel.md, "Whose clock"): a run on a fast or
virtual clock (`autodev run --fast F`, `autodev demo`) stamps its heartbeats, limits and waits
in its own time, which runs ahead of this machine's; the page counts time left on that clock,
not on the machine's, or a countdown would say "in 2h" of a wait the run ends in 12 s.

The panel knows the run's clock only by its heartbeats (C2): each new heartbeat instant, and
the machine's time the panel first saw it, is one reading. From them:

- a run whose heartbeats are never ahead of the machine's clock (by more than `AHEAD`) and
  whose readings advance as fast as the machine's (within `SPREAD`) keeps real time: the run's
  now is the machine's now, rate 1;
- otherwise its clock is fast: its now is the last heartbeat plus the machine's time since it
  was seen, times the rate measured between the first and last readings of this daemon (1 until
  two readings `MIN_SPAN` apart exist); with no daemon the run's clock stands still at its last
  heartbeat (rate 0): nothing moves a fast run's time while no daemon runs it.

A reading taken when the panel starts (a heartbeat written before it) is a position only, never
a rate's first point: its machine time is when the panel looked, not when it was written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final

#: A heartbeat this far ahead of the machine's clock comes from a fast clock.
AHEAD: Final = timedelta(seconds=5)
#: A measured rate this far from 1 (either way) is a fast clock's.
SPREAD: Final = 0.5
#: Machine time between two readings before their rate is trusted.
MIN_SPAN: Final = timedelta(seconds=3)


@dataclass
class RunClock:
    """Readings of one run's heartbeats; `now(...)` says the run's now."""

    readings: list[tuple[datetime, datetime]] = field(default_factory=list)  # (seen, beat)
    last_beat: datetime | None = None
    pid: Any = None
    fast_seen: bool = False

    def observe(self, beat: datetime | None, seen: datetime, *, running: bool,
                pid: Any) -> None:
        """One look at the store: `beat` its newest heartbeat, `seen` the machine's time."""
        if pid != self.pid:
            # Another daemon: another clock's start (a run started again without --fast).
            self.readings, self.pid, self.fast_seen = [], pid, False
        if beat is None or beat == self.last_beat:
            return
        first_look = self.last_beat is None
        self.last_beat = beat
        if beat - seen > AHEAD:
            self.fast_seen = True
        if running and not first_look:
            self.readings.append((seen, beat))
            del self.readings[1:-1]  # the first and the newest are all a rate needs

    def rate(self) -> float:
        if len(self.readings) < 2:
            return 1.0
        (seen0, beat0), (seen1, beat1) = self.readings[0], self.readings[-1]
        if seen1 - seen0 < MIN_SPAN:
            return 1.0
        return (beat1 - beat0) / (seen1 - seen0)

    def measured(self) -> bool:
        """Whether the rate comes from two readings far enough apart (else it is 1)."""
        return len(self.readings) >= 2 and \
            self.readings[-1][0] - self.readings[0][0] >= MIN_SPAN

    def fast(self) -> bool:
        return self.fast_seen or abs(self.rate() - 1.0) > SPREAD

    def now(self, machine_now: datetime, *, running: bool) -> tuple[datetime, float]:
        """The run's now and how fast its clock runs against the machine's (0: stopped)."""
        if not self.fast() or self.last_beat is None:
            return machine_now, 1.0
        if not running:
            return self.last_beat, 0.0
        rate = self.rate()
        seen = self.readings[-1][0] if self.readings else machine_now
        return max(self.last_beat + (machine_now - seen) * rate, self.last_beat), rate
