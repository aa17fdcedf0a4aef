"""Issue 41 item 6, leftovers: the search box searches the whole thread (`GET /api/search`, the
run's store), not only the posts the page holds. Against a real daemon (`autodev run --fast 1`
on the stand-in CLIs) and the real `autodev panel`, each in its own process: rui's one post
is followed by 250 messages said from the panel, so it is older than the newest 50 the page
opens on and further back than a permalink pages the thread (200 posts); the search finds
it, and its permalink opens it whole. `%`, `_`, quotes and a bidi
override typed in the box are plain characters."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_helpers import Panel, RunDaemon, panel_over, participant_file, wait_for

NEEDLE = "rui: the needle, 100% old — \"quoted\" evil\u202eexe.txt"
#: Messages after rui's post: more than the 200 posts a permalink loads into the thread.
FILLERS = 250


@pytest.fixture(scope="module")
def run(browser: Any, tmp_path_factory: pytest.TempPathFactory
        ) -> Iterator[tuple[RunDaemon, Panel]]:
    root = tmp_path_factory.mktemp("search")
    daemon = RunDaemon(
        root, {"rui": participant_file("codex", "You are Rui.")},
        {"codex": {"answers": [{"kind": "post", "post": NEEDLE}],
                   "default": {"kind": "post", "post": "rui: next patch", "sleep": 600}}},
    ).start()
    # rui's first call posts the needle; its second lasts past the module (a stop ends it).
    wait_for(lambda: daemon.posts(), "rui's first post")
    with panel_over(daemon, root) as (_daemon, panel):
        for number in range(FILLERS):  # said from the panel: posted at once, during the call
            answer = panel.post("/api/say", f"message=filler {number} for the search")
            assert answer.status == 200, answer
        wait_for(lambda: len(daemon.posts()) == 1 + FILLERS, "the messages posted")
        yield daemon, panel


def matches(page: Any) -> list[int]:
    return [int(x) for x in page.eval_on_selector_all(
        "#search-list li", "items => items.map(i => i.dataset.seq)")]


def search(page: Any, words: str, expected: str) -> str:
    page.fill("#thread-search", words)
    page.wait_for_function(
        "e => document.querySelector('#search-summary').textContent.startsWith(e)", arg=expected)
    return str(page.locator("#search-summary").text_content())


def test_a_match_older_than_the_loaded_posts_is_found_and_its_permalink_opens_it(
        run: tuple[RunDaemon, Panel], open_page: Any) -> None:
    daemon, panel = run
    needle_seq = next(seq for seq, (_r, who, _t) in enumerate(daemon.posts(), 1) if who == "rui")
    opened = open_page(panel)
    page = opened.page
    page.wait_for_selector("#thread .post", state="attached")
    assert page.locator(f"#post-{needle_seq}").count() == 0  # not among the posts loaded
    assert search(page, "NEEDLE", "1 match in the whole thread") == \
        "1 match in the whole thread, newest first"
    assert matches(page) == [needle_seq]
    assert page.locator("#filter-result").text_content() == "0 of the 50 posts loaded match"
    excerpt = str(page.locator("#search-list .excerpt").text_content())
    assert "the needle, 100% old" in excerpt and "evil\u27e8U+202E\u27e9exe.txt" in excerpt
    page.click("#search-list a.permalink")
    body = page.locator("#linked-post .text")
    body.wait_for()
    assert body.text_content() == NEEDLE.replace("\u202e", "\u27e8U+202E\u27e9")
    assert page.locator(f"#linked-post .post[data-seq='{needle_seq}']").count() == 1
    assert page.locator("#linked-post").is_visible()
    assert f"Post {needle_seq} " in str(page.locator("#linked-title").text_content())
    # A fresh page opened on the permalink opens it too.
    other = open_page(panel).page
    other.goto(page.url.split("#")[0] + f"#post-{needle_seq}")
    other.reload()
    other.locator("#linked-post .text").wait_for()
    page.click("#linked-close")
    assert not page.locator("#linked-post").is_visible()
    assert opened.errors == []


def test_wildcards_quotes_and_bidi_typed_in_the_box_are_plain_characters(
        run: tuple[RunDaemon, Panel], open_page: Any) -> None:
    daemon, panel = run
    needle_seq = next(seq for seq, (_r, who, _t) in enumerate(daemon.posts(), 1) if who == "rui")
    page = open_page(panel).page
    page.wait_for_selector("#thread .post", state="attached")
    for words in ("%", "0% o", '"quoted"', "l\u202ee"):
        search(page, words, "1 match")
        assert matches(page) == [needle_seq], words
    assert search(page, "_", "0 matches") == "0 matches in the whole thread, newest first"
    page.fill("#thread-search", "filler")
    search(page, "filler", "50 matches so far")
    assert len(matches(page)) == 50
    page.click("#search-more")
    page.wait_for_function(
        "() => document.querySelector('#search-summary').textContent.startsWith('100 matches')")
    assert matches(page) == sorted(matches(page), reverse=True) and len(set(matches(page))) == 100
    # The participant and kind filters are applied in the store too: rui's one post.
    page.fill("#thread-search", "")
    page.select_option("#thread-author", "rui")
    page.wait_for_function("() => document.querySelector('#search-summary').textContent"
                           ".startsWith('1 match in the whole')")
    page.select_option("#thread-author", "")
    page.select_option("#thread-kind", "message")
    page.wait_for_function("() => document.querySelector('#search-summary').textContent"
                           ".startsWith('50 matches so far')")
    page.select_option("#thread-kind", "")
    page.wait_for_function("() => document.querySelector('#search-results').hidden")


def test_the_search_is_a_get_under_the_panels_session(run: tuple[RunDaemon, Panel]) -> None:
    """C6: a read, no control queued; the read-only credential may search, no cookie may not."""
    daemon, panel = run
    before = daemon.controls()
    assert panel.request("GET", "/api/search?q=needle").status == 200
    assert panel.request("GET", "/api/search?q=needle", cookie=False).status == 401
    assert daemon.controls() == before
    assert Path(daemon.run_dir / "run.db").exists()


def test_the_search_results_and_the_linked_post_pass_axe_at_320_px(
        run: tuple[RunDaemon, Panel], browser: Any) -> None:
    """Issue 41 item 1's checks on what the search adds: axe-core finds no serious or critical
    rule broken with the matches and the linked post shown, and nothing scrolls sideways at
    320 px (long excerpts wrap)."""
    from test_browser_a11y import _serious

    daemon, panel = run
    needle_seq = next(seq for seq, (_r, who, _t) in enumerate(daemon.posts(), 1) if who == "rui")
    context = browser.new_context(viewport={"width": 320, "height": 900}, bypass_csp=True)
    try:
        page = context.new_page()
        page.set_default_timeout(30_000)
        page.goto(panel.url)
        page.wait_for_selector("#thread .post", state="attached")
        search(page, "needle", "1 match")
        page.click(f"#search-list a[href='#post-{needle_seq}']")
        page.locator("#linked-post .text").wait_for()
        assert _serious(page) == []
        widths = page.evaluate(
            "[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        assert widths[0] <= widths[1], widths
    finally:
        context.close()
