"""Issue 41 item 4: the panel names why the run needs its operator. A real daemon (`autodev run
--fast 1`) whose stand-in claude answers `{"kind": "login"}` (A32: `Not logged in · Please run
/login`) and the real `autodev panel`: the tab title's badge and the browser notification say
"login needed", the page's first line says what to do, as `autodev status` does.

The run is paused by its operator first (during ana's first call), the page opened and its
notifications turned on; Resume from the page starts ana's turn again, whose answer is the
login failure.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from browser_helpers import Panel, RunDaemon, panel_over, participant_file, wait_for
from test_browser_truth import FAKE_NOTIFICATION, says


@pytest.fixture(scope="module")
def run(browser: Any, tmp_path_factory: pytest.TempPathFactory
        ) -> Iterator[tuple[RunDaemon, Panel]]:
    root = tmp_path_factory.mktemp("pause-reason")
    daemon = RunDaemon(
        root,
        {"ana": participant_file("claude", "You are Ana.")},
        {"claude": {"answers": [{"kind": "post", "post": "ana: first", "sleep": 4}],
                    "default": {"kind": "login"}}},
    ).start()
    daemon.control("pause")  # during ana's first call (it sleeps 4 s), cut short by the pause
    wait_for(lambda: daemon.status()["status"] == "paused", "the run paused")
    with panel_over(daemon, root) as pair:
        yield pair


def test_the_badge_and_the_notification_say_login_needed(run: tuple[RunDaemon, Panel],
                                                         open_page: Any) -> None:
    daemon, panel = run
    assert daemon.status()["paused_for"] == "operator"
    page = open_page(panel).page
    page.add_init_script(FAKE_NOTIFICATION)
    page.reload()
    says(page, "#run-status", "^paused$")
    # The operator's own pause: said as such, and nothing to notify yet (the page just opened).
    assert page.title().startswith("(!) paused — by the operator — autodev panel"), page.title()
    says(page, "#needs-you", "^The run needs you: paused — by the operator.$")
    page.click("#notify-toggle")
    says(page, "#notify-toggle", "Notifications on")
    page.click("#resume")
    # ana's turn starts again; claude says it is not logged in (A32): the run pauses for it.
    wait_for(lambda: daemon.status()["paused_for"] == "login", "the login pause")
    says(page, "#needs-you", "^The run needs you: paused — login needed.$")
    assert page.title().startswith("(!) paused — login needed — autodev panel"), page.title()
    says(page, "#now-text", "^Paused — login needed: run claude /login, then Resume")
    page.wait_for_function(
        "() => window.__notes.some(([_t, body]) => body === 'paused — login needed')")
    notes = page.evaluate("window.__notes")
    assert notes[-1] == ["autodev: the run needs you", "paused — login needed"], notes
    assert ["autodev: the run needs you", "paused — by the operator"] not in notes  # not new
    printed = daemon.cli("status").stdout
    assert ("status: paused — claude needs a login (`claude /login`), then `autodev resume`"
            in printed), printed
