"""Issue 41, item 1: a run on a fast clock (`autodev run --fast 60`) shown truthfully, in a real
browser: its countdowns count on the run's clock, learnt from its heartbeats (C2), not on the
machine's, and the page says the run keeps a fast clock. ana's only engine, claude, answers a
two-hour limit (A2): the run waits two hours of its time, two minutes of the machine's."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from browser_helpers import Panel, RunDaemon, panel_over, participant_file, wait_for

FAST = 60.0


@pytest.fixture(scope="module")
def run(browser: Any, tmp_path_factory: pytest.TempPathFactory
        ) -> Iterator[tuple[RunDaemon, Panel]]:
    root = tmp_path_factory.mktemp("fastclock")
    reset = int((datetime.now(UTC) + timedelta(hours=2)).timestamp())
    daemon = RunDaemon(root, {"ana": participant_file("claude", "You are Ana.")},
                       {"claude": {"answers": [{"kind": "limit", "resets_at": reset}],
                                   "default": {"kind": "post", "post": "ana: done"}}},
                       fast=FAST).start()
    wait_for(lambda: daemon.status()["limits"], "ana's limit")
    with panel_over(daemon, root) as pair:
        yield pair


def minutes_left(label: str) -> int:
    found = re.search(r"\(in (?:(\d+)\s*h\s*)?(\d+)\s*m", label)
    assert found, label
    return int(found.group(1) or 0) * 60 + int(found.group(2))


def test_a_fast_runs_countdown_counts_on_the_runs_clock(run: tuple[RunDaemon, Panel],
                                                       open_page: Any) -> None:
    daemon, panel = run
    page = open_page(panel).page
    note = page.locator("#clock-note")
    # The rate is known once two heartbeats 3 s apart were seen (docs/panel.md, Whose clock).
    page.wait_for_function(
        "() => /fast clock \\(about \\d\\d/"
        ".test(document.querySelector('#clock-note').textContent)",
        timeout=60_000)
    rate = float(re.findall(r"about ([\d.]+)×", str(note.text_content()))[0])
    assert FAST / 2 <= rate <= FAST * 2, note.text_content()
    # Its age on the run's clock: never "just now" for a heartbeat stamped hours ahead of the
    # machine's clock, and said to be the run's.
    assert "on the run's clock" in str(page.locator("#heartbeat").text_content())
    timer = page.locator("#engines .limit [role=timer]").first
    timer.wait_for(state="visible")
    first = minutes_left(str(timer.text_content()))
    facts = daemon.status()
    (limit,) = facts["limits"]
    beat = datetime.fromisoformat(facts["daemon"]["last_heartbeat"])
    expected = (datetime.fromisoformat(limit["until"]) - beat).total_seconds() / 60
    assert abs(first - expected) <= 10, (first, expected)  # the run's time left, not the machine's
    time.sleep(6)  # six seconds of the machine's: six minutes of the run's
    later = minutes_left(str(timer.text_content()))
    assert first - later >= 3, (first, later)


def test_the_first_line_says_what_the_run_waits_for_and_the_engines_view_holds_the_limit(
        run: tuple[RunDaemon, Panel], open_page: Any) -> None:
    """Issue 41 item 2: the page's first line says what the run does and what it waits for,
    counting down; the limit is said once, in the engines view, with who runs on the engine;
    the internals (revision, persistence, turn gate) are one click away."""
    daemon, panel = run
    page = open_page(panel).page
    now = page.locator("#now-line")
    page.wait_for_function(
        "() => /^Waiting for claude/.test(document.querySelector('#now-text').textContent)")
    line = " ".join(str(now.text_content()).split())
    assert re.search(r"back at \d{1,2}:\d{2} \w+ \(in (\d+h )?\d+m\)", line), line
    (stored,) = daemon.status()["limits"]
    shown = now.locator("time[datetime]").get_attribute("datetime")
    assert datetime.fromisoformat(str(shown).replace("Z", "+00:00")) == \
        datetime.fromisoformat(stored["until"])
    row = page.locator('#engines .engine-row[data-engine="claude"]')
    assert row.get_attribute("data-state") == "limited"
    said = " ".join(str(row.text_content()).split())
    assert "read from the CLI's notice" in said and "this run's own" in said, said
    assert "runs on it now: ana" in said, said
    assert row.locator('a[href="#lane-ana"]').count() == 1
    assert page.locator(".limit").count() == 1  # once on the page
    internals = page.locator("#internals")
    assert internals.get_attribute("open") is None and page.locator("#gate").is_hidden()
    page.click("#internals summary")
    page.locator("#gate").wait_for(state="visible")
    assert str(page.locator("#revision").text_content()).strip().isdigit()


def test_clear_limit_lifts_the_engines_limit_through_the_control_queue(
        run: tuple[RunDaemon, Panel], open_page: Any) -> None:
    """The panel's button for `autodev limits clear ENGINE` (the store's `queue_clear`, as the
    CLI's): one `clear` control queued; the daemon lifts the limit and the row says `free`."""
    daemon, panel = run
    page = open_page(panel).page
    row = page.locator('#engines .engine-row[data-engine="claude"]')
    row.locator("button.clear-limit").click()
    # The answer is said where every control's is, and in the row while the limit holds: a live
    # update redraws the rows, and the row's answer (and its disabled button) outlive that.
    page.wait_for_function(
        "() => document.querySelector('#control-result').textContent.includes('queued')")
    assert daemon.controls().count(("clear", "claude")) == 1
    still = page.evaluate("""() => {
        const row = document.querySelector('#engines .engine-row[data-engine="claude"]');
        const said = row && row.querySelector('.clear-result');
        return said ? [said.textContent, said.parentElement.querySelector('button').disabled]
                    : null;
    }""")
    assert still is None or ("queued" in still[0] and still[1] is True), still
    page.wait_for_selector('#engines .engine-row[data-engine="claude"][data-state="free"]',
                           timeout=60_000)
    assert not any(r["engine"] == "claude" for r in daemon.status()["limits"])


def test_with_no_daemon_the_runs_clock_stands_still(run: tuple[RunDaemon, Panel],
                                                   open_page: Any) -> None:
    daemon, panel = run
    page = open_page(panel).page
    daemon.kill9()
    page.wait_for_function(
        "() => document.querySelector('#clock-note').textContent.includes('stands still')",
        timeout=30_000)
    timer = page.locator("#engines .limit [role=timer]").first
    if timer.count():  # the limit may have lifted before the kill on a slow machine
        first = str(timer.text_content())
        time.sleep(2.5)
        assert str(timer.text_content()) == first
