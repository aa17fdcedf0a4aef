"""Issue 41, item 1 (security), in a real browser on a finished demo run: the session's cookie
lives on the panel's own host name (`p-<label>.localhost`), so another server on this machine
never receives it (cookies ignore ports, not host names); the read-only URL opens a page that
cannot steer the run, even by a request written by hand."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit

import pytest
from browser_helpers import Panel

from autodev_shell.panel.security import read_only_token


@pytest.fixture(scope="module")
def panel(needs_panel: None, demo_run: Path) -> Iterator[Panel]:
    started = Panel(demo_run / "run", team=demo_run / "team",
                    log=demo_run / "panel-session.stderr").start()
    yield started
    assert started.stop() == 0


@pytest.fixture
def neighbour() -> Iterator[tuple[int, list[str]]]:
    """Another local web server, on 127.0.0.1: the Cookie headers it was sent."""
    heard: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            heard.append(self.headers.get("Cookie") or "")
            body = b"<!doctype html><title>neighbour</title><p>a local app</p>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1], heard
    finally:
        server.shutdown()
        server.server_close()


def test_another_local_server_never_receives_the_session_cookie(
        panel: Panel, open_page: Any, neighbour: tuple[int, list[str]]) -> None:
    port, heard = neighbour
    page = open_page(panel).page
    host = urlsplit(page.url).hostname or ""
    assert host.startswith("p-") and host.endswith(".localhost"), page.url
    cookies = page.context.cookies()
    assert [(c["name"], c["domain"]) for c in cookies] == [("autodev_panel", host)], cookies
    for name in ("127.0.0.1", "localhost"):
        page.goto(f"http://{name}:{port}/")
        page.wait_for_selector("text=a local app")
    assert len(heard) >= 2 and all("autodev_panel" not in h for h in heard), heard


def test_the_read_only_url_shows_a_page_that_cannot_steer_the_run(
        panel: Panel, open_page: Any) -> None:
    watch = read_only_token(panel.token)
    url = panel.url.replace(f"token={panel.token}", f"token={watch}")
    opened = open_page(SimpleNamespace(url=url))
    page = opened.page
    page.wait_for_selector("#read-only-note")
    assert page.locator("#say-form").count() == 0 and page.locator("#stop").count() == 0
    assert page.locator("button.edit-prompt").first.is_disabled()
    before = panel.request("GET", "/api/thread?limit=500").json()
    # A request written by hand in the page, with the page's own CSRF value: refused.
    status = page.evaluate("""async () => {
        const csrf = document.querySelector('meta[name="autodev-csrf"]').content;
        const answer = await fetch('/api/say', {method: 'POST', credentials: 'same-origin',
            headers: {'X-Autodev-CSRF': csrf,
                      'Content-Type': 'application/x-www-form-urlencoded'},
            body: 'message=from+a+watcher'});
        return [answer.status, await answer.text(), csrf];
    }""")
    assert status[0] == 403 and "read-only" in status[1], status
    assert status[2] == ""  # a read-only page is given no CSRF value at all
    assert panel.token not in page.content()
    assert panel.request("GET", "/api/thread?limit=500").json() == before
