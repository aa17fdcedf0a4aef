"""`autodev timeline --run DIR [--svg FILE] [--hours H | --since WHEN]` (docs/timeline.md): the
run's timeline as an SVG for reports, and its figures per participant as a table."""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo
from pathlib import Path

from autodev_core.errors import AutodevError

from . import MAX_HOURS, MIN_HOURS, ParticipantStats, run_story
from .svg import render_timeline_svg


def parse_since(text: str, zone: tzinfo) -> datetime:
    """`--since`: an ISO 8601 date or time; without an offset, in `zone`."""
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise AutodevError(f"--since: {text!r} is not an ISO 8601 time such as "
                           "2026-12-07T09:00 or 2026-12-07") from None
    return when if when.tzinfo is not None else when.replace(tzinfo=zone)


def check_hours(hours: float) -> float:
    if not MIN_HOURS <= hours <= MAX_HOURS:
        raise AutodevError(f"--hours: must be from {MIN_HOURS:g} (an hour) to {MAX_HOURS:g} "
                           f"(a week), not {hours:g}")
    return hours


def duration(seconds: float) -> str:
    """1h05m, 4m30s, 12s."""
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


def stats_table(stats: tuple[ParticipantStats, ...]) -> list[str]:
    """The figures as aligned text lines; `-` where no CLI reported a cost or tokens."""
    head = ("participant", "calls", "posts", "failures", "in calls", "cost", "tokens")
    rows = [head] + [
        (s.participant, str(s.calls), str(s.posts), str(s.failures),
         duration(s.seconds_in_calls),
         f"${s.cost_usd:.4f}" if s.cost_usd is not None else "-",
         f"{s.tokens:,}" if s.tokens is not None else "-")
        for s in stats]
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    return ["  ".join(cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i])
                      for i, cell in enumerate(row)).rstrip() for row in rows]


def timeline_report(run_dir: Path, *, svg: Path | None, hours: float | None,
                    since: str | None, zone: tzinfo, wall: datetime | None = None,
                    width: int = 1000) -> list[str]:
    """Write the SVG (when asked) and return the lines to print."""
    if not (run_dir / "run.db").exists() and not (run_dir / "lanes").exists():
        raise AutodevError(f"There is no run at {run_dir} (no run.db); give --run the folder "
                           "`autodev run` was given.")
    story = run_story(run_dir)
    now = story.present(wall or datetime.now(UTC))
    start_at = parse_since(since, zone) if since is not None else None
    if start_at is not None and start_at >= now:
        raise AutodevError(f"--since: {since} is not before the run's present moment "
                           f"({now.astimezone(zone):%Y-%m-%d %H:%M})")
    timeline = story.timeline(now=now, hours=check_hours(hours) if hours is not None else None,
                              since=start_at)
    lines = [f"{run_dir}: {timeline.start.astimezone(zone):%Y-%m-%d %H:%M} to "
             f"{timeline.end.astimezone(zone):%Y-%m-%d %H:%M} "
             f"({getattr(zone, 'key', None) or zone})"]
    if svg is not None:
        text = render_timeline_svg(timeline, zone=zone, width=width,
                                   title=f"autodev timeline of {run_dir.name}")
        try:
            svg.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise AutodevError(f"--svg: cannot write {svg} ({exc.strerror})") from None
        lines.append(f"timeline written to {svg}")
    lines.extend(stats_table(story.stats(start=timeline.start, end=timeline.end)))
    return lines


__all__ = ["duration", "parse_since", "stats_table", "timeline_report"]
