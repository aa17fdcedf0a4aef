"""The run's story (docs/timeline.md): its structured lines kept (`record`), its calls read from
its call ledger and lanes (`calls`), the rows and figures they make (`timeline`, pure) and the
SVG (`svg`).

`run_story` reads a run folder and returns what the timeline and the figures are drawn from;
`autodev timeline` and the panel's `/timeline.svg` both use it.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import attrs

from ..store.folder import LOG_FILE
from .calls import parse_lane, read_calls, run_calls
from .record import EVENTS_FILE, EventsFile, read_events
from .svg import render_timeline_svg
from .timeline import (
    Call,
    Mark,
    ParticipantStats,
    Row,
    Span,
    Timeline,
    build_timeline,
    participant_stats,
)

#: The zoom a timeline takes: from an hour to a week (docs/timeline.md).
MIN_HOURS = 1.0
MAX_HOURS = 7 * 24.0


@attrs.frozen
class RunStory:
    """A run folder's structured lines and calls, and the latest instant they name."""

    records: tuple[dict[str, Any], ...]
    calls: tuple[Call, ...]

    def latest(self) -> datetime | None:
        times = [c.end or c.start for c in self.calls]
        for record in self.records:
            try:
                times.append(datetime.fromisoformat(record["at"]))
            except (KeyError, TypeError, ValueError):
                continue
        aware = [t for t in times if t.tzinfo is not None]
        return max(aware) if aware else None

    def present(self, wall: datetime) -> datetime:
        """The present moment: the machine's, or the run's latest instant when that is ahead (a
        `--fast` run's clock)."""
        latest = self.latest()
        return latest if latest is not None and latest > wall else wall

    def timeline(self, *, now: datetime, hours: float | None = None,
                 since: datetime | None = None) -> Timeline:
        start = since if since is not None else now - timedelta(
            hours=min(MAX_HOURS, max(MIN_HOURS, hours or 24.0)))
        return build_timeline(self.records, self.calls, start=start, end=now, now=now)

    def stats(self, *, start: datetime | None = None,
              end: datetime | None = None) -> tuple[ParticipantStats, ...]:
        return participant_stats(self.records, self.calls, start=start, end=end)


def run_story(run_dir: Path) -> RunStory:
    """The story of the run in `run_dir`: its events file (else an `autodev.log` written with
    `--json`), its call ledger and its lanes."""
    records = read_events(run_dir / EVENTS_FILE)
    if not records:
        records = [_as_event(r) for r in read_events(run_dir / LOG_FILE)]
    return RunStory(tuple(records), tuple(run_calls(run_dir)))


def _as_event(record: dict[str, Any]) -> dict[str, Any]:
    """A `--json` log line (C7: `kind` is log/status/control/note, `event` the core's kind) is
    already an events-file record."""
    return record


__all__ = [
    "EVENTS_FILE", "MAX_HOURS", "MIN_HOURS", "Call", "EventsFile", "Mark", "ParticipantStats",
    "Row", "RunStory", "Span", "Timeline", "build_timeline", "parse_lane", "participant_stats",
    "read_calls", "read_events", "render_timeline_svg", "run_calls", "run_story",
]
