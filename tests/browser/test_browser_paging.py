"""Issue 23, item 3: older posts are paged. A copy of the demo run whose thread is grown through
the store's API (one post per revision, as the daemon commits) to a few hundred posts: the page
opens on the newest page, "Load older posts" adds the pages before it in order, none twice,
until the first post; the reader's place in the thread stays where it was."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from browser_helpers import Panel

from autodev_shell.store.run_store import NewPost, RunStore

POSTS = 320


@pytest.fixture(scope="module")
def panel(browser: Any, demo_run: Path, tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[Panel]:
    root = tmp_path_factory.mktemp("paging")
    run = root / "run"
    shutil.copytree(demo_run / "run", run)
    (run / "panel.token").unlink(missing_ok=True)
    store = RunStore.open(run / "run.db")
    try:
        state = store.committed_state()
        revision, now = state.revision, datetime.now(UTC)
        for _ in range(POSTS - store.post_count()):
            revision += 1
            store.commit(revision, (NewPost("rui", "codex", f"post of revision {revision}", now,
                                            key=f"paging-{revision}"),),
                         state.scheduler_state_json,
                         persistence_state_json=state.persistence_state_json, now=now)
    finally:
        store.close()
    started = Panel(run, log=root / "panel.stderr").start()
    yield started
    started.stop()


REVISIONS = "Array.from(document.querySelectorAll('#thread .post')).map(p => +p.dataset.revision)"
SEQS = "Array.from(document.querySelectorAll('#thread .post')).map(p => +p.dataset.seq)"


def test_older_posts_are_loaded_a_page_at_a_time_to_the_first(panel: Panel,
                                                              open_page: Any) -> None:
    import sqlite3

    conn = sqlite3.connect(f"file:{panel.run_dir / 'run.db'}?mode=ro", uri=True)
    try:
        stored = [int(s) for (s,) in conn.execute("SELECT seq FROM posts ORDER BY seq")]
    finally:
        conn.close()
    assert len(stored) == POSTS
    page = open_page(panel).page
    # The first page arrives as one `post` event per post, oldest first: it is whole once the
    # newest post is shown (reading it sooner saw a part of it, [271, 272], on a loaded machine).
    page.wait_for_function(f"() => {SEQS}.includes({stored[-1]})")
    first = page.evaluate(SEQS)
    assert first == stored[-len(first):], "the page opens on the newest posts, in order"
    assert len(first) < POSTS
    shown = first
    for _ in range(POSTS):  # each click adds one page at the top
        if shown[0] == stored[0]:
            break
        # The reader has scrolled up to the oldest post shown, then asks for older ones.
        page.locator("#thread").hover()
        page.mouse.wheel(0, -100_000)
        page.wait_for_function("() => document.querySelector('#thread').scrollTop < 5")
        top = page.evaluate(
            "() => { const p = document.querySelector('#thread .post');"
            " return [p.dataset.seq, p.getBoundingClientRect().top]; }")
        page.click("#older-posts")
        page.wait_for_function(f"() => {SEQS}[0] < {shown[0]}")
        more = page.evaluate(SEQS)
        assert more == stored[-len(more):], "older posts out of order, missing or twice"
        assert len(more) > len(shown)
        # The post that was on top is where it was on the screen (no jump).
        moved = page.evaluate(
            f"() => document.querySelector('#thread .post[data-seq=\"{top[0]}\"]')"
            ".getBoundingClientRect().top")
        assert abs(moved - top[1]) < 40, (top, moved)
        shown = more
    assert shown == stored
    page.click("#older-posts")  # nothing older: said, nothing added
    page.wait_for_function(
        "() => /no older/.test(document.querySelector('#older-result')?.textContent || '')")
    assert page.evaluate(SEQS) == stored


def test_a_burst_keeps_the_thread_bounded_and_its_last_post_shown(panel: Panel,
                                                                  open_page: Any) -> None:
    """Issue 41 (bursts): 1,800 posts committed 300 at a time while a page follows the thread.
    The page shows the burst's last post, holds at most 1,000 posts (whole revisions: the
    oldest left first), none twice and in order; "Load older posts" still pages back from the
    oldest it kept."""
    page = open_page(panel).page
    store = RunStore.open(panel.run_dir / "run.db")
    try:
        state = store.committed_state()
        revision, now = state.revision, datetime.now(UTC)
        for _ in range(6):
            revision += 1
            store.commit(revision, tuple(
                NewPost("eva", "agy", f"burst {revision}.{i}", now, key=f"burst-{revision}-{i}")
                for i in range(300)), state.scheduler_state_json,
                persistence_state_json=state.persistence_state_json, now=now)
    finally:
        store.close()
    page.wait_for_function(
        f"() => {{ const p = document.querySelector('#thread').lastElementChild;"
        f" return p && p.textContent.includes('burst {revision}.299'); }}", timeout=60_000)
    seqs = page.evaluate(SEQS)
    assert len(seqs) <= 1000, len(seqs)
    assert seqs == sorted(set(seqs)), "a post twice or out of order"
    revisions = page.evaluate(REVISIONS)
    kept = [r for r in revisions if r == revisions[0]]
    assert len(kept) == 300, "a revision cut in two at the thread's top"
    page.click("#older-posts")
    page.wait_for_function(f"() => Math.min(...{REVISIONS}) < {revisions[0]}")
