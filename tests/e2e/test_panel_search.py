"""The panel's search over the whole thread (issue 41 leftovers; docs/panel.md "Search and
filters"): `GET /api/search` reads the run's store, not the posts a page holds; it is bounded
(matches per answer, posts read per answer) and paginated (`next`); a participant and a kind
filter it in the store too; a search's `%`, `_`, `\\`, quotes, NUL, bidi and C1 characters are
plain characters; it answers under the GET routes' rules (C6: read-only, the cookie).
`GET /api/post/SEQ` opens one post whole (a permalink to a post the page does not hold)."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

pytest.importorskip("starlette")

from helpers.panels import START, add_posts, make_run, panel_factory, scheduler_json

from autodev_shell.panel import store_reads
from autodev_shell.panel.security import read_only_token
from autodev_shell.panel.store_reads import EXCERPT_CHARS, USER, RunReader
from autodev_shell.store.run_store import NewPost, RunStore

__all__ = ["panel_factory"]


def _lower_ascii(text: str) -> str:
    return text.translate({c: c + 32 for c in range(ord("A"), ord("Z") + 1)})


def model(posts: list[tuple[int, str, str, str]], words: str, author: str,
          kind: str) -> list[int]:
    """The seqs a search must find, newest first: (seq, author, engine, text) rows whose text,
    author or engine holds the words, case ignored — ASCII letters folded for a search of
    printable ASCII (SQLite's LIKE), every letter by str.lower otherwise."""
    plain = words.isascii() and words.isprintable()
    fold = _lower_ascii if plain else str.lower
    needle = fold(words)
    return [seq for seq, who, engine, text in reversed(posts)
            if (not author or who == author)
            and (kind != "message" or who == USER) and (kind != "post" or who != USER)
            and any(needle in fold(field) for field in (text, who, engine))]


def search_all(reader: RunReader, words: str, author: str, kind: str,
               limit: int) -> list[dict[str, Any]]:
    """Every page of a search, following `next` to the thread's start."""
    found: list[dict[str, Any]] = []
    before: int | None = None
    for _ in range(1000):
        page = reader.search(words, author=author, kind=kind, before=before, limit=limit)
        assert len(page["posts"]) <= limit
        found += page["posts"]
        if page["next"] is None:
            return found
        assert before is None or page["next"] < before  # every page goes further back
        before = page["next"]
    raise AssertionError("the search never reached the thread's start")


ALPHABET = st.sampled_from([*"aAbB%_\\'\" \x00\x85\u202e\u2066éÉİK", "ab", "a%b"])
TEXTS = st.lists(st.tuples(st.sampled_from(["ana", "rui", USER]),
                           st.lists(ALPHABET, max_size=8).map("".join)),
                 min_size=0, max_size=12)


@settings(max_examples=60, deadline=None)
# Sweep seed 2066494581: SQLite's LIKE stops at a NUL in a post's text.
@example(texts=[("ana", "\x00b")], words="b", author="", kind="", scan=1, limit=1)
@given(texts=TEXTS, words=st.lists(ALPHABET, min_size=0, max_size=3).map("".join),
       author=st.sampled_from(["", "ana", USER]), kind=st.sampled_from(["", "post", "message"]),
       scan=st.integers(1, 6), limit=st.integers(1, 4))
def test_the_search_finds_exactly_what_a_plain_reading_of_the_thread_finds(
        tmp_path_factory: pytest.TempPathFactory, texts: list[tuple[str, str]], words: str,
        author: str, kind: str, scan: int, limit: int) -> None:
    """Property: followed page by page (`next`), with the store read a window of `scan` posts
    at a time and `limit` matches to a page, the search returns exactly the posts a plain
    reading of every post finds, newest first, each once; wildcards, quotes, NUL, bidi and C1
    characters in the search match only themselves."""
    run = tmp_path_factory.mktemp("search") / "run"
    run.mkdir()
    rows = [(seq, who, "claude", text) for seq, (who, text) in enumerate(texts, 1)]
    with RunStore.open(run / "run.db", create=True, run_id="search", now=START) as store:
        store.commit(1, [NewPost(participant=who, engine=engine, text=text, at=START,
                                 key=f"p{seq}") for seq, who, engine, text in rows],
                     scheduler_json(), persistence_state_json="{}", now=START)
    reader = RunReader(run)
    old = store_reads.SEARCH_SCAN
    store_reads.SEARCH_SCAN = scan
    try:
        found = search_all(reader, words, author, kind, limit)
    finally:
        store_reads.SEARCH_SCAN = old
        reader.close()
    assert [p["seq"] for p in found] == model(rows, words, author, kind)
    for post in found:
        text = rows[post["seq"] - 1][3]
        assert post["excerpt"] == text  # short texts are sent whole
        assert "text" not in post


def test_wildcards_and_quotes_match_themselves(tmp_path: Path) -> None:
    run = make_run(tmp_path, texts=["100% done", "100 percent done", "snake_case", "snakeXcase",
                                    "it's \"quoted\"", "back\\slash", "backslash",
                                    "evil\u202eexe.txt", "c1\x85here"])
    reader = RunReader(run)
    try:
        def seqs(words: str) -> list[int]:
            return [p["seq"] for p in reader.search(words)["posts"]]

        assert seqs("0% d") == [1]
        assert seqs("%") == [1]
        assert seqs("e_c") == [3]
        assert seqs("_") == [3]
        assert seqs("it's \"q") == [5]
        assert seqs("'") == [5]
        assert seqs("k\\s") == [6]
        assert seqs("\\") == [6]
        assert seqs("l\u202ee") == [8]
        assert seqs("\x85") == [9]
        assert seqs("\x00") == []  # SQLite's LIKE would end the pattern there: all would match
        assert seqs("SNAKE") == [4, 3]  # case ignored
        assert seqs("ÉVIL") == []
    finally:
        reader.close()


def test_an_excerpt_is_bounded_and_centred_on_the_match(tmp_path: Path) -> None:
    text = "x" * 5000 + "needle" + "y" * 5000
    run = make_run(tmp_path, texts=[text])
    reader = RunReader(run)
    try:
        (post,) = reader.search("NEEDLE")["posts"]
        assert "needle" in post["excerpt"] and len(post["excerpt"]) == EXCERPT_CHARS
        assert post["cut_before"] and post["cut_after"]
        whole = reader.post(1)
        assert whole is not None and whole["text"] == text
        assert reader.post(2) is None
    finally:
        reader.close()


# --- the route, through the real `autodev panel` ------------------------------------------------


def test_the_route_searches_the_whole_thread_a_bounded_page_at_a_time(
        tmp_path: Path, panel_factory: Any) -> None:
    """A match older than any page the page would hold (post 1 of 1,200) is found; answers are
    paginated (`limit` at most 50, `next` to go on); the filters are applied in the store; the
    read-only credential may search, no cookie may not."""
    texts = [f"post {i}" for i in range(1200)]
    texts[0] = "the needle, 100% old"
    run = make_run(tmp_path, texts=texts, per_revision=7)
    add_posts(run, ["a needle said by the operator"], author=USER)
    panel = panel_factory(run)

    def get(query: dict[str, str], **kw: Any) -> Any:
        return panel.request("GET", "/api/search?" + urlencode(query), **kw)

    answer = get({"q": "NEEDLE"})
    assert answer.status == 200, answer
    assert [p["seq"] for p in answer.json()["posts"]] == [1201, 1]
    assert answer.json()["next"] is None
    oldest = answer.json()["posts"][1]
    assert oldest["author"] == "ana" and oldest["kind"] == "post" and oldest["revision"] == 1
    assert oldest["excerpt"] == "the needle, 100% old"
    assert [p["seq"] for p in get({"q": "needle", "kind": "post"}).json()["posts"]] == [1]
    assert [p["seq"] for p in get({"q": "needle", "author": USER}).json()["posts"]] == [1201]
    assert [p["seq"] for p in get({"q": "needle", "kind": "message"}).json()["posts"]] == [1201]
    assert [p["seq"] for p in get({"q": "0%"}).json()["posts"]] == [1]
    page = get({"q": "post 1", "limit": "1000"}).json()  # "post 1", "post 1x", "post 1xx"…
    assert len(page["posts"]) == 50 and page["next"] == page["posts"][-1]["seq"]
    rest = get({"q": "post 1", "before": str(page["next"])}).json()
    assert rest["posts"][0]["seq"] < page["next"]
    assert get({"author": "rui", "limit": "3"}).json()["posts"][0]["author"] == "rui"
    assert panel.request("GET", "/api/post/1").json()["text"] == "the needle, 100% old"
    assert panel.request("GET", "/api/post/99999").status == 404
    assert panel.request("GET", f"/api/post/{2**64}").status == 404  # past SQLite's integers
    huge = get({"q": "needle", "before": str(2**64)})
    assert huge.status == 200 and [p["seq"] for p in huge.json()["posts"]] == [1201, 1]
    assert get({"q": "needle", "before": "-3"}).json() == {"posts": [], "next": None,
                                                           "from": -3, "to": 0}
    for bad, says in (({"q": "x" * 501}, "at most 500"), ({"q": "x", "kind": "other"}, "kind"),
                      ({}, "nothing to search for"), ({"q": "x", "before": "y"}, "whole")):
        refused = get(bad)
        assert refused.status == 400 and says in refused.json()["error"], (bad, refused)
    watch = {"Cookie": f"autodev_panel={read_only_token(panel.token)}"}
    assert get({"q": "needle"}, cookie=False, headers=watch).status == 200
    assert get({"q": "needle"}, cookie=False).status == 401
    assert panel.request("GET", "/api/post/1", cookie=False).status == 401
    assert panel.request("GET", "/api/search?q=" + quote("\u202e%_'\"")).status == 200
