"""Issue 41, item 1 (accessibility), in a real browser on a finished demo run: axe-core finds no
serious or critical rule broken (at 1280 px and at 320 px, with the prompt editor open too), the
page never scrolls sideways at 320 px, and a lane's calls fold from the keyboard.

axe-core is vendored for the tests only (`tests/browser/vendor/`, its SHA-256 in `VENDORED`,
checked before use): no network at test time. It is injected into a context that bypasses the
page's CSP (the panel's own CSP forbids any script but its own, as it should).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_helpers import Panel

VENDOR = Path(__file__).resolve().parent / "vendor"
AXE = VENDOR / "axe-core-4.14.1" / "axe.min.js"
BAD = ("serious", "critical")


@pytest.fixture(scope="module")
def panel(needs_panel: None, demo_run: Path) -> Iterator[Panel]:
    started = Panel(demo_run / "run", team=demo_run / "team",
                    log=demo_run / "panel-a11y.stderr").start()
    yield started
    assert started.stop() == 0


def test_the_vendored_axe_is_the_recorded_one() -> None:
    (line,) = [x for x in (VENDOR / "VENDORED").read_text().splitlines()
               if x and not x.startswith("#")]
    sha, name = line.split()[:2]
    assert (VENDOR / name) == AXE
    assert hashlib.sha256(AXE.read_bytes()).hexdigest() == sha


def _page(browser: Any, panel: Panel, width: int) -> Any:
    context = browser.new_context(viewport={"width": width, "height": 900}, bypass_csp=True)
    page = context.new_page()
    page.set_default_timeout(30_000)
    page.goto(panel.url)
    page.wait_for_function(
        "() => document.querySelector('#connection').textContent.includes('live')")
    page.wait_for_selector("#lanes pre .line-header", state="attached")
    page.wait_for_selector("#thread .post", state="attached")
    return page


def _serious(page: Any) -> list[Any]:
    page.add_script_tag(path=str(AXE))
    found: list[Any] = page.evaluate(
        "async () => (await axe.run(document)).violations.map(v => "
        "[v.id, v.impact, v.nodes.slice(0, 3).map(n => n.target.join(' '))])")
    return [v for v in found if v[1] in BAD]


@pytest.mark.parametrize("width", [1280, 320])
def test_axe_finds_no_serious_rule_broken(browser: Any, panel: Panel, width: int) -> None:
    page = _page(browser, panel, width)
    try:
        assert _serious(page) == []
        page.click('button.edit-prompt[data-participant="ana"]')
        page.wait_for_selector("#prompt-dialog[open]")
        page.wait_for_function("() => document.querySelector('#prompt-text').value.length > 0")
        assert _serious(page) == []
    finally:
        page.context.close()


def test_no_sideways_scroll_at_320_px(browser: Any, panel: Panel) -> None:
    page = _page(browser, panel, 320)
    try:
        widths = page.evaluate(
            "[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        assert widths[0] <= widths[1], widths
        wide = page.evaluate("""() => Array.from(document.querySelectorAll('body *'))
            .filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1
                         && !e.closest('pre, #thread, dialog:not([open])'))
            .slice(0, 5).map(e => e.tagName + '#' + e.id + '.' + e.className)""")
        assert wide == [], wide
    finally:
        page.context.close()


def test_a_lanes_calls_fold_from_the_keyboard(browser: Any, panel: Panel) -> None:
    page = _page(browser, panel, 1280)
    try:
        lane = page.locator("#lanes pre").first
        lane.focus()
        page.keyboard.press("ArrowDown")
        header = page.evaluate_handle("document.activeElement")
        assert page.evaluate("e => e.matches('.call > .line-header')", header)
        assert page.evaluate("e => e.getAttribute('aria-expanded')", header) == "true"
        assert page.evaluate("e => e.getAttribute('role')", header) == "button"
        page.keyboard.press("Enter")
        assert page.evaluate("e => e.parentElement.classList.contains('folded')", header)
        assert page.evaluate("e => e.getAttribute('aria-expanded')", header) == "false"
        page.keyboard.press(" ")
        assert not page.evaluate("e => e.parentElement.classList.contains('folded')", header)
        # Down moves to the next call's header; the headers are not Tab stops.
        if page.locator("#lanes pre").first.locator(".call > .line-header").count() > 1:
            page.keyboard.press("ArrowDown")
            second = page.evaluate_handle("document.activeElement")
            assert page.evaluate("([a, b]) => a !== b && b.matches('.line-header')",
                                 [header, second])
        assert page.evaluate("e => e.tabIndex", header) == -1
    finally:
        page.context.close()
