"""Issue 23, item 2: an outage and its next retry, in a real browser. rui's only engine, codex,
cannot reach its servers (A26): the run waits with the provider out; the page shows the status
word, the outage with its tries and the instant of the next retry that `autodev status --json`
gives, counting down."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
from browser_helpers import Panel, RunDaemon, panel_over, participant_file, wait_for


@pytest.fixture(scope="module")
def run(browser: Any, tmp_path_factory: pytest.TempPathFactory
        ) -> Iterator[tuple[RunDaemon, Panel]]:
    root = tmp_path_factory.mktemp("outage")
    daemon = RunDaemon(root, {"rui": participant_file("codex", "You are Rui.")},
                       {"codex": {"default": {"kind": "network"}}}).start()
    wait_for(lambda: daemon.status()["outages"], "the outage")
    with panel_over(daemon, root) as pair:
        yield pair


def test_an_outage_shows_its_next_retry_counting_down(run: tuple[RunDaemon, Panel],
                                                      open_page: Any) -> None:
    daemon, panel = run
    page = open_page(panel).page
    facts = daemon.status()
    page.wait_for_function(
        "s => document.querySelector('#run-status').textContent.includes(s)",
        arg=str(facts["status"]))
    outage = page.locator('#outages .outage[data-provider="codex"]')
    outage.wait_for(state="visible")
    shown = outage.locator("time[datetime]").first.get_attribute("datetime")
    assert shown is not None
    retry = datetime.fromisoformat(shown.replace("Z", "+00:00"))
    stored = {datetime.fromisoformat(o["retry_at"]) for o in daemon.status()["outages"]
              if o["provider"] == "codex"} | {datetime.fromisoformat(o["retry_at"])
                                              for o in facts["outages"]}
    assert retry in stored, (shown, stored)
    timer = str(outage.locator("[role=timer]").first.text_content())
    assert re.search(r"\d{1,2}:\d{2}", timer) or "checking" in timer, timer
    text = str(outage.text_content())
    assert "codex" in text, text


def test_the_next_retry_is_said_once(run: tuple[RunDaemon, Panel], open_page: Any) -> None:
    """The outage line and the run's wait say their instant once, with the time left: seen on
    the first draft, "next try at 08:06 UTC next try at 08:06 UTC (in 60s)" and "unreachable
    until 08:06 UTC until 08:06 UTC (in 60s)" (a screen reader reads both)."""
    _daemon, panel = run
    page = open_page(panel).page
    outage = page.locator('#outages .outage[data-provider="codex"]')
    outage.wait_for(state="visible")
    line = " ".join(str(outage.text_content()).split())
    assert len(re.findall(r"next try at \d{1,2}:\d{2}", line)) == 1, line
    status = " ".join(str(page.locator("#run-status").locator("xpath=..").text_content()).split())
    assert len(re.findall(r"until \d{1,2}:\d{2}", status)) <= 1, status
