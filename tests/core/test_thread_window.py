"""The thread window of a turn's prompt (issue 9 item 3): bounded in posts and in UTF-8 bytes
whatever the posts hold; oldest dropped first; a huge post cut with a marker."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from autodev_core.control.thread_window import CUT_MARKER, post_line, thread_window

AUTHORS = st.sampled_from(["ana", "rui", "user", "eva"])
TEXTS = st.one_of(
    st.text(max_size=300),
    st.text(alphabet=st.sampled_from(["x", "é", "\x00", "\ufffd", "😀", "\n"]), max_size=5000),
)
POSTS = st.lists(st.tuples(AUTHORS, TEXTS), max_size=40)


def _bytes(lines: tuple[str, ...]) -> int:
    return sum(len(line.encode("utf-8")) + 1 for line in lines)


@given(POSTS, st.integers(0, 30), st.integers(0, 20_000), st.integers(0, 8_000))
def test_the_window_never_passes_its_bounds(
    posts: list[tuple[str, str]], max_posts: int, max_bytes: int, max_post_bytes: int
) -> None:
    lines = thread_window(posts, max_posts=max_posts, max_bytes=max_bytes,
                          max_post_bytes=max_post_bytes)
    assert _bytes(lines) <= max_bytes
    shown = [line for line in lines if line.startswith("@")]
    assert len(shown) <= max_posts
    assert all(len(line.encode("utf-8")) <= max_post_bytes for line in shown)


@given(POSTS, st.integers(1, 30))
def test_a_roomy_window_shows_the_newest_posts_whole_in_order(
    posts: list[tuple[str, str]], max_posts: int
) -> None:
    lines = thread_window(posts, max_posts=max_posts, max_bytes=10**7, max_post_bytes=10**6)
    newest = posts[-max_posts:]
    assert [line for line in lines if line.startswith("@")] == [f"@{a}: {t}" for a, t in newest]
    hidden = len(posts) - len(newest)
    if hidden:
        assert lines[0] == f"({hidden} older post{'s' if hidden != 1 else ''} not shown)"
    else:
        assert len(lines) == len(newest)


@given(POSTS, st.integers(500, 20_000))
def test_posts_shown_are_the_newest_ones_and_cut_posts_keep_their_start(
    posts: list[tuple[str, str]], max_bytes: int
) -> None:
    lines = thread_window(posts, max_posts=40, max_bytes=max_bytes, max_post_bytes=max_bytes // 4)
    shown = [line for line in lines if line.startswith("@")]
    newest = posts[len(posts) - len(shown):]  # a suffix of the thread: older ones dropped first
    for line, (author, text) in zip(shown, newest, strict=True):
        whole = f"@{author}: {text}"
        if line != whole:
            head, _, marker = line.rpartition(" […")
            assert whole.startswith(head)
            cut = len(whole.encode("utf-8")) - len(head.encode("utf-8"))
            assert marker == f"{cut} more bytes of this post not shown]"
    if len(shown) < len(posts):
        assert lines[0].endswith("not shown)")


def test_two_70_kb_posts_fit_a_64_kib_window_with_their_starts() -> None:
    posts = [("ana", "a" * 70_000), ("rui", "b" * 70_000), ("ana", "short")]
    lines = thread_window(posts, max_posts=20, max_bytes=64 * 1024, max_post_bytes=16 * 1024)
    assert _bytes(lines) <= 64 * 1024
    assert lines[-1] == "@ana: short"
    assert lines[0].startswith("@ana: aaaa") and "more bytes of this post not shown]" in lines[0]
    assert lines[1].startswith("@rui: bbbb")


# -- the edges of the byte bounds (docs/loop.md: the thread window) -----------------------------


def _note_room(count: int) -> int:
    """The room the window keeps for its first line, in the form for the whole thread hidden:
    `(N older posts not shown)` and its newline — reserved whether or not a post is hidden."""
    return len(f"({count} older post{'s' if count != 1 else ''} not shown)".encode()) + 1


def test_a_post_that_fits_its_share_exactly_is_shown_whole() -> None:
    for text in ("hello", "é😀\x00", "a" * 3000):
        whole = f"@ana: {text}"
        size = len(whole.encode("utf-8"))
        assert post_line("ana", text, max_bytes=size) == whole
        assert post_line("ana", text, max_bytes=size - 1) != whole


def test_a_cut_post_with_its_multibyte_marker_stays_within_its_share() -> None:
    """The marker `[…N more bytes …]` holds `…`, three bytes in UTF-8: it is counted in bytes,
    so the cut line, marker and all, is at most the share."""
    assert len(CUT_MARKER.encode("utf-8")) > len(CUT_MARKER)
    for size in (1_000, 5_000, 99_990):
        line = post_line("ana", "a" * size, max_bytes=300)
        assert line.endswith(" more bytes of this post not shown]")
        assert len(line.encode("utf-8")) <= 300
    (line,) = thread_window([("ana", "a" * 5_000)], max_posts=5, max_bytes=10_000,
                            max_post_bytes=300)
    assert len(line.encode("utf-8")) <= 300


@given(st.text(alphabet=st.sampled_from(["x", "é", "😀", "\x00"]), max_size=30),
       st.integers(0, 5_000), st.text(alphabet=st.sampled_from(["x", "é", "😀"]), max_size=30),
       st.integers(60, 2_000))
def test_a_post_line_never_passes_its_share_and_is_cut_only_when_longer(
    start: str, filler: int, end: str, max_bytes: int
) -> None:
    """Posts on both sides of their share, cut in ASCII or inside a multi-byte character."""
    text = start + "x" * filler + end
    whole = f"@ana: {text}"
    line = post_line("ana", text, max_bytes=max_bytes)
    assert len(line.encode("utf-8")) <= max_bytes
    assert (line == whole) == (len(whole.encode("utf-8")) <= max_bytes)


@given(st.lists(st.tuples(AUTHORS, st.text(alphabet=st.sampled_from(["x", "é", "😀"]),
                                             min_size=60, max_size=100)),
                min_size=1, max_size=12),
       st.data())
def test_a_window_that_fits_its_byte_budget_exactly_shows_those_posts_whole(
    posts: list[tuple[str, str]], data: st.DataObject
) -> None:
    """The newest `k` posts whose lines and newlines take exactly the window's bytes, less the
    room kept for the `(N older posts not shown)` line, are all shown, whole. (Posts of at
    least 60 characters: a window with less room than a cut marker shows no post at all.)"""
    k = data.draw(st.integers(1, len(posts)))
    newest = [f"@{a}: {t}" for a, t in posts[-k:]]
    max_bytes = _bytes(tuple(newest)) + _note_room(len(posts))
    lines = thread_window(posts, max_posts=len(posts), max_bytes=max_bytes,
                          max_post_bytes=10**6)
    assert [line for line in lines if line.startswith("@")] == newest
    assert _bytes(lines) <= max_bytes


def test_a_window_with_room_for_the_note_alone_shows_the_note() -> None:
    posts = [("ana", "a" * 100)] * 3
    assert thread_window(posts, max_posts=3, max_bytes=_note_room(3),
                         max_post_bytes=1_000) == ("(3 older posts not shown)",)
    assert thread_window(posts, max_posts=3, max_bytes=_note_room(3) - 1,
                         max_post_bytes=1_000) == ()
