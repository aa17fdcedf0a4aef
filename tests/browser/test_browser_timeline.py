"""The timeline in the panel (docs/timeline.md), in Chromium, on the demo run: the page links it,
`/timeline` draws the run's rows (engines, participants) with its limits, the present moment and
the figures per participant, zooms from an hour to a week by links, breaks no CSP rule, and its
routes are behind the panel's token like every other."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_helpers import Panel


@pytest.fixture(scope="module")
def panel(demo_run: Path, needs_panel: None) -> Iterator[Panel]:
    served = Panel(demo_run / "run", team=demo_run / "team",
                   log=demo_run / "timeline-panel.stderr").start()
    try:
        yield served
    finally:
        served.stop()


def test_the_timeline_page_draws_the_runs_story(panel: Panel, open_page: Any) -> None:
    page = open_page(panel, wait_live=False)
    page.page.click("#timeline-card a[href='/timeline?hours=24']")
    page.page.wait_for_selector("#timeline svg")
    names = page.page.eval_on_selector_all(
        "#timeline svg g.row", "gs => gs.map(g => g.classList[1] + ' ' + g.dataset.name)")
    assert names == ["run run", "engine claude", "engine codex", "engine agy",
                     "participant ana", "participant eva", "participant rui"]
    assert page.page.locator("#timeline svg rect.limited").count() >= 3  # one per engine
    assert page.page.locator("#timeline svg rect.call-posted").count() >= 30
    assert page.page.locator("#timeline svg line.now").count() == 1
    stats = page.page.eval_on_selector_all(
        "#timeline-stats tbody tr", "rows => rows.map(r => [...r.cells].map(c => c.textContent))")
    assert [row[0] for row in stats] == ["ana", "eva", "rui"]
    assert all(int(row[2]) > 0 for row in stats)  # each posted in the demo
    assert page.errors == []  # nothing the page's CSP refused


def test_zoom_goes_from_an_hour_to_a_week(panel: Panel, open_page: Any) -> None:
    page = open_page(panel, wait_live=False)
    page.page.click("#timeline-card a[href='/timeline?hours=1']")  # the page's own host
    page.page.wait_for_selector("#timeline svg")
    texts = "ts => ts.map(t => t.textContent)"
    hour = page.page.eval_on_selector_all("#timeline svg > text", texts)
    page.page.click("a[href='/timeline?hours=168']")
    page.page.wait_for_url("**/timeline?hours=168")
    week = page.page.eval_on_selector_all("#timeline svg > text", texts)
    assert page.page.locator("a[aria-current='page']").inner_text() == "a week"
    # An hour has ticks every five minutes (HH:MM); a week, one a day (weekday, date, time).
    assert len([t for t in hour if len(t) == 5 and t[2] == ":"]) >= 11
    assert 6 <= len([t for t in week if t[:3] in ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat",
                                                  "Sun")]) <= 8
    assert page.errors == []


def test_the_timeline_routes_need_the_panels_session(panel: Panel) -> None:
    for path in ("/timeline", "/api/timeline.svg", "/api/timeline/stats"):
        assert panel.request("GET", path, cookie=False).status == 401
    svg = panel.request("GET", "/api/timeline.svg?hours=6")
    assert svg.status == 200 and svg.header("content-type") == "image/svg+xml"
    stats = panel.request("GET", "/api/timeline/stats?hours=168").json()
    assert [p["participant"] for p in stats["participants"]] == ["ana", "eva", "rui"]
    assert {"calls", "posts", "failures", "seconds_in_calls", "cost_usd",
            "tokens"} <= set(stats["participants"][0])
