"""Fixtures of the browser tests (issue 23): one headless Chromium per session (Debian's, driven
by Playwright), pages that have exchanged the panel's token, a finished demo run.

Every test under tests/browser carries the `browser` marker (`pytest -m "not browser"` leaves
them out). They skip with one line saying what to install when Chromium, Playwright or the
panel extra is missing; .ci/run installs all three.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_helpers import (
    CHROMIUM,
    CHROMIUM_MISSING,
    PLAYWRIGHT_MISSING,
    Panel,
    launch_chromium,
    panel_missing,
)

HERE = Path(__file__).resolve().parent
SHOTS = Path(tempfile.gettempdir()) / "autodev-browser-failures"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.browser)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call":
        item.stash[FAILED] = report.failed
    return report


FAILED = pytest.StashKey[bool]()


@pytest.fixture(scope="session")
def needs_panel() -> None:
    reason = panel_missing()
    if reason:
        pytest.skip(reason)


@pytest.fixture(scope="module")
def browser(needs_panel: None) -> Iterator[Any]:
    """One Chromium per test module; each test opens its own context (cookies apart).

    Not one per session: Playwright's sync API keeps its asyncio loop running in the main
    thread while it is open, and a test after it that calls `asyncio.run` (the panel's own
    tests, say) would fail with "cannot be called from a running event loop"."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip(PLAYWRIGHT_MISSING)
    if CHROMIUM is None:
        pytest.skip(CHROMIUM_MISSING)
    with sync_playwright() as playwright:
        chromium = launch_chromium(playwright)
        try:
            yield chromium
        finally:
            chromium.close()


class Page:
    """A Playwright page plus what the browser said while the test ran (console errors,
    uncaught exceptions: a CSP violation is reported there)."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.errors: list[str] = []
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(f"uncaught: {e}"))


@pytest.fixture
def open_page(browser: Any, request: pytest.FixtureRequest) -> Iterator[Callable[..., Page]]:
    """`open_page(panel)`: a fresh browser context that follows the printed URL (the token is
    exchanged for the cookie and stripped from the address) and waits for the page. A failed
    test leaves a screenshot of each of its pages in $TMPDIR/autodev-browser-failures (pytest's
    own tmp folders are pruned by other runs); the path is printed."""
    contexts: list[Any] = []

    def opener(panel: Panel, *, clock: Any = None, wait_live: bool = True) -> Page:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        contexts.append(context)
        page = Page(context.new_page())
        page.page.set_default_timeout(30_000)
        if clock is not None:
            page.page.clock.install(time=clock)
        page.page.goto(panel.url)
        page.page.wait_for_selector("#run-status")
        if wait_live:
            page.page.wait_for_function(
                "() => document.querySelector('#connection')?.textContent.includes('live')")
        return page

    yield opener
    # AUTODEV_BROWSER_SHOTS=1 keeps a screenshot of every page, passed or not, to look at.
    failed = request.node.stash.get(FAILED, False) or bool(os.environ.get(
        "AUTODEV_BROWSER_SHOTS"))
    for number, context in enumerate(contexts):
        if failed:
            for index, page in enumerate(context.pages):
                shot = SHOTS / f"{request.node.name}-{number}-{index}.png"
                SHOTS.mkdir(parents=True, exist_ok=True)
                try:
                    page.screenshot(path=str(shot), full_page=True, timeout=10_000)
                    print(f"screenshot of the test's page: {shot}")
                except Exception as exc:  # a page that cannot draw says why
                    print(f"no screenshot of {page.url}: {exc}")
        context.close()


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run made by `autodev demo --dir D` (its daemon has ended): D/run and D/team."""
    root = tmp_path_factory.mktemp("demo")
    done = subprocess.run([sys.executable, "-m", "autodev_shell.cli", "demo", "--dir", str(root)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return root
