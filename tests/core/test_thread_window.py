"""The thread window of a turn's prompt (issue 9 item 3): bounded in posts and in UTF-8 bytes
whatever the posts hold; oldest dropped first; a huge post cut with a marker."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from autodev_core.control.thread_window import thread_window

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
