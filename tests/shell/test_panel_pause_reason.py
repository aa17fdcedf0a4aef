"""The panel's words for a paused run (docs/panel.md, "When the run needs you"): the badge and
the notification name the reason `autodev status --json` gives (`paused_for`), and the first
line says what to do; a state saved before reasons were kept says plain "paused"."""

from __future__ import annotations

import pytest

from autodev_shell.panel.view import first_line, needs_you

BADGE = {
    "login": "paused — login needed",
    "empty": "paused — turns ended without a post",
    "failures": "paused — gave up after failed calls",
    "operator": "paused — by the operator",
    None: "the run is paused",
}


@pytest.mark.parametrize("reason", list(BADGE))
def test_the_badge_names_why_the_run_is_paused(reason: str | None) -> None:
    view = {"status": "paused", "paused_for": reason}
    assert needs_you(view, {"paused_for": reason}) == BADGE[reason]


@pytest.mark.parametrize("reason", list(BADGE))
def test_the_first_line_says_why_and_what_to_do(reason: str | None) -> None:
    text = first_line({"status": "paused", "paused_for": reason}, None)["text"]
    if reason == "login":
        assert text == "Paused — login needed: run claude /login, then Resume (or autodev resume)."
    elif reason is None:
        assert text == "Paused: Resume (or autodev resume) lets it go on."
    else:
        assert text == f"Paused — {BADGE[reason].split(' — ', 1)[1]}: Resume (or autodev " \
                       "resume) lets it go on."


def test_a_daemon_gone_while_paused_says_the_daemon_is_gone() -> None:
    # The dead daemon is what needs the operator first (issue 41 item 1).
    assert needs_you({"status": "not running"}, {"paused_for": "login"}) == "the daemon is gone"
