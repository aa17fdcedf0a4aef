"""Issue 41 item 6, in a real browser on a finished demo run (ana, rui and eva post in turn):
thread search and filters (participant, kind), a permalink per post, export as Markdown."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from browser_helpers import Panel

from autodev_shell.store.run_store import NewPost, RunStore

SHOWN = """() => Array.from(document.querySelectorAll('#thread .post'))
  .filter(p => p.getClientRects().length > 0)
  .map(p => [p.dataset.author, p.querySelector('.text').textContent])"""


@pytest.fixture(scope="module")
def panel(needs_panel: None, demo_run: Path, tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[Panel]:
    """A copy of the demo run with 120 more posts of rui's (one per revision): a thread longer
    than the page's first 50."""
    root = tmp_path_factory.mktemp("tools")
    run = root / "run"
    shutil.copytree(demo_run / "run", run)
    (run / "panel.token").unlink(missing_ok=True)
    store = RunStore.open(run / "run.db")
    try:
        state = store.committed_state()
        revision, now = state.revision, datetime.now(UTC)
        for _ in range(120):
            revision += 1
            store.commit(revision, (NewPost("rui", "codex", f"more work, revision {revision}",
                                            now, key=f"tools-{revision}"),),
                         state.scheduler_state_json,
                         persistence_state_json=state.persistence_state_json, now=now)
    finally:
        store.close()
    started = Panel(run, log=root / "panel.stderr").start()
    yield started
    assert started.stop() == 0


def test_search_and_filters_narrow_the_thread(panel: Panel, open_page: Any) -> None:
    page = open_page(panel).page
    page.wait_for_selector("#thread .post", state="attached")
    while "no older posts" not in str(page.locator("#older-result").text_content()):
        page.click("#older-posts")  # the whole thread, so every author is among the loaded
        page.wait_for_function("() => document.querySelector('#older-result').textContent")
        page.wait_for_timeout(100)
    everyone = page.evaluate(SHOWN)
    assert {a for a, _t in everyone} >= {"ana", "rui", "eva"}, everyone
    page.select_option("#thread-author", "eva")
    eva = page.evaluate(SHOWN)
    assert eva and all(a == "eva" for a, _t in eva), eva
    assert len(eva) == sum(a == "eva" for a, _t in everyone)
    assert "match" in str(page.locator("#filter-result").text_content())
    page.select_option("#thread-author", "")
    page.fill("#thread-search", "NIT ON")  # case does not matter
    found = page.evaluate(SHOWN)
    assert found and all("nit on" in t.lower() for _a, t in found), found
    assert len(found) == sum("nit on" in t for _a, t in everyone)
    page.fill("#thread-search", "")
    page.select_option("#thread-kind", "message")  # the demo's thread holds no say
    assert page.evaluate(SHOWN) == []
    page.select_option("#thread-kind", "")
    assert page.evaluate(SHOWN) == everyone
    assert str(page.locator("#filter-result").text_content()) == ""


def test_a_permalink_opens_the_page_on_its_post(panel: Panel, open_page: Any) -> None:
    page = open_page(panel).page
    page.wait_for_selector("#thread .post", state="attached")
    # An old post, not among the first page: the page loads older posts until it is there.
    oldest = page.evaluate(
        "Math.min(...Array.from(document.querySelectorAll('#thread .post'))"
        ".map(p => +p.dataset.revision))")
    first = panel.request("GET", f"/api/thread?before={oldest - 60}&limit=1").json()
    assert first, "no post 60 revisions before the first page"
    seq = first[0]["seq"]
    assert page.locator(f"#post-{seq}").count() == 0
    url = page.url.split("#")[0] + f"#post-{seq}"
    other = open_page(panel).page
    other.goto(url)
    other.reload()  # a fresh page opened on the permalink, not a hash change
    target = other.locator(f"#post-{seq}")
    target.wait_for(state="attached", timeout=30_000)
    other.wait_for_function(f"() => document.getElementById('post-{seq}')"
                            ".classList.contains('linked')")
    box = target.bounding_box()
    thread = other.locator("#thread").bounding_box()
    assert box is not None and thread is not None
    assert thread["y"] <= box["y"] + box["height"] and box["y"] <= thread["y"] + thread["height"]
    link = other.locator(f"#post-{seq} a.permalink")
    assert link.get_attribute("href") == f"#post-{seq}"


def test_the_thread_exports_as_markdown(panel: Panel, open_page: Any) -> None:
    page = open_page(panel).page
    link = page.locator("#export-md")
    assert link.get_attribute("download") == "thread.md"
    with page.expect_download() as download:
        link.click()
    text = Path(download.value.path()).read_text(encoding="utf-8")
    posts = panel.request("GET", "/api/thread?limit=500").json()
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert len(headings) == len(posts), (len(headings), len(posts))
    for heading, post in zip(headings, posts, strict=True):
        assert heading.startswith(f"## {post['author']} via {post['engine']} · "), heading
        assert heading.endswith(f" · revision {post['revision']}"), heading
        assert f"```text\n{post['text']}\n```" in text
