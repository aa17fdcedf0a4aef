"""The timeline drawn as one SVG (docs/timeline.md): no chart library, text built here.

Rows top to bottom: the run, each engine, each participant; time runs left to right in the
run's zone, with ticks chosen for the window (five minutes for an hour, a day for a week); spans are
rectangles, marks small shapes, each with a `<title>` a browser shows on hover; the present moment
is a line. Every text is escaped, and characters XML cannot hold are dropped.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Final
from xml.sax.saxutils import escape, quoteattr

from .timeline import Mark, Row, Span, Timeline

#: Colours of spans and marks by kind (docs/timeline.md has the legend).
COLOURS: Final = {
    "running": "#cfe8cf", "rate_limited": "#e8a0a0", "unreachable": "#b9b9b9",
    "backing_off": "#f3d19c", "paused": "#9cc9e8", "stopped": "#555555",
    "limited": "#d9534f", "near-limit": "#f0ad4e", "outage": "#8a8a8a",
    "call-posted": "#337ab7", "call-other": "#f0ad4e", "call-limit": "#d9534f",
    "call-network": "#8a8a8a", "call-login": "#8e44ad", "call-timed-out": "#c0392b",
    "call-cancelled": "#bbbbbb", "call-open": "#7fb3e0",
    "hop": "#8e44ad", "handover": "#16a085", "failed": "#c0392b", "lifted": "#27ae60",
    "control": "#222222", "wait": "#f0ad4e",
}
_LEGEND: Final = (
    ("call-posted", "call that posted"), ("call-other", "call without a post"),
    ("limited", "limited"), ("near-limit", "near its limit"), ("outage", "unreachable"),
    ("paused", "paused"), ("hop", "hop"), ("handover", "handover"), ("failed", "failure"),
    ("lifted", "limit lifted"),
)
_STEPS: Final = tuple(timedelta(minutes=m) for m in (5, 10, 15, 30, 60, 120, 180, 360, 720, 1440))
_NOT_XML: Final = re.compile("[\x00-\x08\x0b-\x1f\ufffe\uffff]")

LABEL_WIDTH: Final = 150
ROW_HEIGHT: Final = 24
AXIS_HEIGHT: Final = 30


def _text(value: str) -> str:
    return escape(_NOT_XML.sub("", value))


def _attr(value: str) -> str:
    return quoteattr(_NOT_XML.sub("", value))


def tick_step(window: timedelta, most: int = 12) -> timedelta:
    """The smallest tick step that puts at most `most` ticks on `window`."""
    for step in _STEPS:
        if window / step <= most:
            return step
    return timedelta(days=max(1, -(-window.days // most)))


def _ticks(start: datetime, end: datetime, zone: tzinfo) -> list[datetime]:
    step = tick_step(end - start)
    local = start.astimezone(zone)
    midnight = local.replace(hour=0, minute=0, second=0, microsecond=0)
    first = midnight + step * -(-(local - midnight) // step)
    ticks = []
    at = first
    while at <= end:
        ticks.append(at)
        at = (at + step).astimezone(zone)
    return ticks


def render_timeline_svg(timeline: Timeline, *, width: int = 1000, zone: tzinfo = UTC,
                        title: str = "autodev timeline", fluid: bool = False) -> str:
    """The timeline as a standalone SVG document (`image/svg+xml`); `fluid`: no fixed size, it
    fills the width of what holds it (in a page)."""
    plot = width - LABEL_WIDTH - 10
    seconds = (timeline.end - timeline.start).total_seconds()

    def x(at: datetime) -> float:
        return round(LABEL_WIDTH + plot * (at - timeline.start).total_seconds() / seconds, 1)

    rows_height = ROW_HEIGHT * len(timeline.rows)
    legend, legend_lines = _legend(width)
    height = AXIS_HEIGHT + rows_height + 24 + 20 * legend_lines
    step = tick_step(timeline.end - timeline.start)
    shape = "%H:%M" if step < timedelta(hours=6) else "%a %d %H:%M"
    out = [
        '<svg xmlns="http://www.w3.org/2000/svg" '
        + ('width="100%" ' if fluid else f'width="{width}" height="{height}" ')
        + f'viewBox="0 0 {width} {height}" role="img" aria-label={_attr(title)} '
        'font-family="sans-serif" font-size="12">',
        f"<title>{_text(title)}</title>",
        f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
    ]
    for tick in _ticks(timeline.start, timeline.end, zone):
        tx = x(tick)
        out.append(f'<line x1="{tx}" y1="{AXIS_HEIGHT - 6}" x2="{tx}" '
                   f'y2="{AXIS_HEIGHT + rows_height}" stroke="#e2e2e2"/>')
        out.append(f'<text x="{tx}" y="{AXIS_HEIGHT - 10}" text-anchor="middle" '
                   f'fill="#444">{_text(tick.astimezone(zone).strftime(shape))}</text>')
    for index, row in enumerate(timeline.rows):
        out.extend(_row(row, AXIS_HEIGHT + index * ROW_HEIGHT, x))
    if timeline.start <= timeline.now <= timeline.end:
        nx = x(timeline.now)
        out.append(f'<line class="now" x1="{nx}" y1="{AXIS_HEIGHT - 6}" x2="{nx}" '
                   f'y2="{AXIS_HEIGHT + rows_height}" stroke="#d62728" stroke-width="2">'
                   f"<title>now: {_text(timeline.now.astimezone(zone).strftime('%Y-%m-%d %H:%M'))}"
                   "</title></line>")
    zone_name = getattr(zone, "key", None) or str(zone)
    legend_y = AXIS_HEIGHT + rows_height + 20
    out.append(f'<text x="4" y="{legend_y + 4}" fill="#444">{_text(zone_name)}</text>')
    for kind, words, lx, line in legend:
        ly = legend_y + 20 * line
        out.append(f'<rect x="{lx}" y="{ly - 6}" width="10" height="10" '
                   f'fill="{COLOURS[kind]}"/>')
        out.append(f'<text x="{lx + 14}" y="{ly + 3}" fill="#444">{_text(words)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _legend(width: int) -> tuple[list[tuple[str, str, float, int]], int]:
    """Where each legend entry goes: (kind, words, x, line), wrapped to `width`."""
    placed = []
    lx, line = float(LABEL_WIDTH), 0
    for kind, words in _LEGEND:
        room = 22 + 6.5 * len(words)
        if lx + room > width and lx > LABEL_WIDTH:
            lx, line = float(LABEL_WIDTH), line + 1
        placed.append((kind, words, lx, line))
        lx += room
    return placed, line + 1


def _row(row: Row, top: int, place: Callable[[datetime], float]) -> list[str]:
    name = row.name if row.group != "engine" else f"⚙ {row.name}"
    out = [f'<g class="row {row.group}" data-name={_attr(row.name)}>',
           f'<text x="6" y="{top + ROW_HEIGHT * 0.65}" fill="#222">{_text(name)}</text>',
           f'<line x1="{LABEL_WIDTH}" y1="{top + ROW_HEIGHT}" x2="100%" y2="{top + ROW_HEIGHT}" '
           'stroke="#f0f0f0"/>']
    for span in row.spans:
        out.append(_span(span, top, place))
    for mark in row.marks:
        out.append(_mark(mark, top, place))
    out.append("</g>")
    return out


def _span(span: Span, top: int, x: Callable[[datetime], float]) -> str:
    x1, x2 = x(span.start), x(span.end)
    inset = 4 if span.kind.startswith("call-") else 2
    return (f'<rect class={_attr("span " + span.kind)} x="{x1}" y="{top + inset}" '
            f'width="{max(1.0, round(x2 - x1, 1))}" height="{ROW_HEIGHT - 2 * inset}" '
            f'fill="{COLOURS.get(span.kind, "#999999")}"><title>{_text(span.label)}</title></rect>')


def _mark(mark: Mark, top: int, x: Callable[[datetime], float]) -> str:
    mx, my = x(mark.at), top + ROW_HEIGHT / 2
    colour = COLOURS.get(mark.kind, "#333333")
    points = f"{mx},{my - 7} {mx + 5},{my} {mx},{my + 7} {mx - 5},{my}"
    return (f'<polygon class={_attr("mark " + mark.kind)} points="{points}" fill="{colour}" '
            f'stroke="#ffffff" stroke-width="1"><title>{_text(mark.label)}</title></polygon>')
