"""The panel's page (docs/panel.md "Page contract"): the ids and roles the browser
tests and assistive technology rely on, and no third-party or remote code — the page works
with no build step and no CDN."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")

from helpers.panels import make_run, make_team, panel_factory

from autodev_shell.panel.app import STATIC_DIR

__all__ = ["panel_factory"]

#: The ids of docs/panel.md's page contract that the HTML itself holds (the rest is built by
#: panel.js from the stream).
CONTRACT_IDS = ("run-status", "daemon", "revision", "persistence", "gate", "participants",
                "thread", "new-posts", "say-form", "say-result", "pause", "resume", "stop",
                "stop-dialog", "stop-confirm", "stop-cancel", "lanes", "prompt-dialog",
                "prompt-text", "prompt-save", "prompt-cancel", "prompt-error", "prompt-result",
                "live-toggle", "connection")


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.by_id: dict[str, tuple[str, dict[str, str | None]]] = {}
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if found.get("id"):
            self.by_id[str(found["id"])] = (tag, found)
        for key in ("src", "href", "action"):
            if found.get(key):
                self.links.append(str(found[key]))


def _page(panel: Any) -> _Elements:
    parser = _Elements()
    parser.feed(panel.request("GET", "/").text)
    return parser


def test_the_page_holds_the_contracts_ids_and_roles(tmp_path: Path, panel_factory: Any) -> None:
    panel = panel_factory(make_run(tmp_path, posts=1), "--team", str(make_team(tmp_path)))
    page = _page(panel)
    missing = [i for i in CONTRACT_IDS if i not in page.by_id]
    assert not missing
    assert page.by_id["thread"][1]["role"] == "log"
    assert page.by_id["thread"][1]["aria-live"] == "polite"
    assert page.by_id["say-result"][1]["role"] == "status"
    assert page.by_id["prompt-error"][1]["role"] == "alert"
    assert page.by_id["prompt-result"][1]["role"] == "status"
    for dialog in ("stop-dialog", "prompt-dialog"):
        assert page.by_id[dialog][0] == "dialog"
    for button in ("pause", "resume", "stop", "stop-confirm", "stop-cancel", "prompt-save",
                   "prompt-cancel", "live-toggle", "new-posts"):
        assert page.by_id[button][0] == "button", button
    assert page.by_id["prompt-text"][0] == "textarea"
    html = panel.request("GET", "/").text
    assert re.search(r'<a class="skip-link" href="#thread">', html)
    assert '<textarea id="say-message" name="message"' in html


def test_no_remote_or_third_party_code(tmp_path: Path, panel_factory: Any) -> None:
    """Every link of the page is the panel's own; the static folder holds the hand-written
    files only (nothing vendored: no hash to record), and none of them names a remote URL."""
    panel = panel_factory(make_run(tmp_path, posts=1))
    page = _page(panel)
    assert all(link.startswith(("/", "#")) for link in page.links), page.links
    assert sorted(p.name for p in STATIC_DIR.iterdir()) == [
        "favicon.svg", "panel.css", "panel.js"]
    for path in STATIC_DIR.iterdir():
        text = path.read_text(encoding="utf-8")
        urls = [u for u in re.findall(r"https?://[^\s\"')]+", text)
                if u != "http://www.w3.org/2000/svg"]
        assert not urls, (path.name, urls)
        served = panel.request("GET", f"/static/{path.name}")
        assert served.status == 200 and served.body == path.read_bytes()
    js = (STATIC_DIR / "panel.js").read_text(encoding="utf-8")
    assert "innerHTML" not in js and "outerHTML" not in js and "insertAdjacentHTML" not in js
    assert "eval(" not in js and "new Function" not in js


def test_read_only_renders_no_controls(tmp_path: Path, panel_factory: Any) -> None:
    panel = panel_factory(make_run(tmp_path, posts=1), "--read-only")
    page = _page(panel)
    for control in ("say-form", "pause", "resume", "stop", "stop-dialog"):
        assert control not in page.by_id
    assert "read-only-note" in page.by_id
