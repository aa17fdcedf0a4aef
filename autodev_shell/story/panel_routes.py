"""The timeline in the panel (docs/timeline.md): `/timeline` (a page: the SVG, zoom from an hour
to a week by links, the figures per participant), `/api/timeline.svg` and `/api/timeline/stats`,
each taking `?hours=` (1 to 168, default 24). Read-only routes, behind the panel's guard like
every other; the panel adds them with `timeline_routes`."""

from __future__ import annotations

from datetime import UTC, datetime
from html import escape
from pathlib import Path
from typing import Final

import attrs
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from ..clock import local_zone
from . import MAX_HOURS, MIN_HOURS, RunStory, run_story
from .report import duration
from .svg import render_timeline_svg

#: The zoom links of the page, in hours.
ZOOMS: Final = ((1, "1 hour"), (6, "6 hours"), (24, "a day"), (72, "3 days"), (168, "a week"))


def _hours(request: Request) -> float:
    try:
        hours = float(request.query_params.get("hours", "24"))
    except ValueError:
        hours = 24.0
    return min(MAX_HOURS, max(MIN_HOURS, hours)) if hours == hours else 24.0


def _story(run_dir: Path, request: Request) -> tuple[RunStory, datetime, float]:
    story = run_story(run_dir)
    return story, story.present(datetime.now(UTC)), _hours(request)


def timeline_routes(run_dir: Path) -> list[Route]:
    """The timeline's routes for the panel of the run in `run_dir`."""

    def svg(request: Request) -> Response:
        story, now, hours = _story(run_dir, request)
        text = render_timeline_svg(story.timeline(now=now, hours=hours), zone=local_zone(),
                                   title=f"timeline of the last {hours:g} hours")
        return Response(text, media_type="image/svg+xml")

    def stats(request: Request) -> Response:
        story, now, hours = _story(run_dir, request)
        timeline = story.timeline(now=now, hours=hours)
        return JSONResponse({"start": timeline.start.isoformat(), "end": timeline.end.isoformat(),
                             "participants": [attrs.asdict(s) for s in story.stats(
                                 start=timeline.start, end=timeline.end)]})

    def page(request: Request) -> Response:
        story, now, hours = _story(run_dir, request)
        zone = local_zone()
        timeline = story.timeline(now=now, hours=hours)
        picture = render_timeline_svg(timeline, zone=zone, fluid=True,
                                      title=f"timeline of the last {hours:g} hours")
        zooms = " · ".join(
            f'<a href="/timeline?hours={h}"' + (' aria-current="page"' if h == hours else "")
            + f">{escape(words)}</a>" for h, words in ZOOMS)
        rows = "".join(
            f"<tr><th scope=row>{escape(s.participant)}</th><td>{s.calls}</td><td>{s.posts}</td>"
            f"<td>{s.failures}</td><td>{duration(s.seconds_in_calls)}</td>"
            f"<td>{'-' if s.cost_usd is None else f'${s.cost_usd:.4f}'}</td>"
            f"<td>{'-' if s.tokens is None else f'{s.tokens:,}'}</td></tr>"
            for s in story.stats(start=timeline.start, end=timeline.end))
        html = (
            "<!doctype html><html lang=en><head><meta charset=utf-8>"
            "<meta name=viewport content='width=device-width, initial-scale=1'>"
            f"<title>autodev timeline — {escape(run_dir.name)}</title>"
            "<link rel=icon href=/static/favicon.svg type=image/svg+xml>"
            "<link rel=stylesheet href=/static/panel.css></head><body>"
            f"<div class=card><h1>Timeline of {escape(str(run_dir))}</h1>"
            f"<p><a href=/>back to the panel</a> · zoom: {zooms}</p>"
            f"<p>{timeline.start.astimezone(zone):%Y-%m-%d %H:%M} to "
            f"{timeline.end.astimezone(zone):%Y-%m-%d %H:%M}</p>"
            f"<figure id=timeline>{picture}</figure>"
            "<table id=timeline-stats><caption>Per participant, in this window</caption>"
            "<thead><tr><th scope=col>participant</th><th scope=col>calls</th>"
            "<th scope=col>posts</th><th scope=col>failures</th><th scope=col>in calls</th>"
            "<th scope=col>cost</th><th scope=col>tokens</th></tr></thead>"
            f"<tbody>{rows}</tbody></table></div></body></html>")
        return HTMLResponse(html)

    return [Route("/timeline", page, methods=["GET"]),
            Route("/api/timeline.svg", svg, methods=["GET"]),
            Route("/api/timeline/stats", stats, methods=["GET"])]
