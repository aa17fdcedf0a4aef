"""Which of the thread a turn's prompt shows: the newest posts, bounded in posts and in bytes.

A post may be anything a CLI printed — 70 KB, 10 MB, NUL bytes — so the window is bounded in
UTF-8 bytes as well as in posts: the oldest posts are dropped first, and a single post longer
than its share is cut (its start kept) with a marker saying how much was left out. Whatever the
thread holds, the window's lines together never pass `max_bytes` (newlines included), so a prompt
built from it stays small enough for a command line and a model's context. Pure: the shell
passes the posts and the bounds in.
"""

from __future__ import annotations

from collections.abc import Sequence

#: Appended to a post cut to fit its share (`{cut}`: bytes left out).
CUT_MARKER = " […{cut} more bytes of this post not shown]"


def _utf8_head(text: str, limit: int) -> str:
    """The longest start of `text` whose UTF-8 form is at most `limit` bytes (never half a
    character)."""
    data = text.encode("utf-8", errors="replace")
    if len(data) <= limit:
        return text
    return data[: max(limit, 0)].decode("utf-8", errors="ignore")


def _size(line: str) -> int:
    return len(line.encode("utf-8", errors="replace"))


def post_line(author: str, text: str, *, max_bytes: int) -> str:
    """`@author: text`, cut to at most `max_bytes` UTF-8 bytes with a marker when longer."""
    line = f"@{author}: {text}"
    size = _size(line)
    if size <= max_bytes:
        return line
    # The marker's own length depends on the number it shows; size it for the largest.
    marker_room = _size(CUT_MARKER.format(cut=size))
    head = _utf8_head(line, max_bytes - marker_room)
    return head + CUT_MARKER.format(cut=size - _size(head))


def _hidden_note(count: int) -> str:
    return f"({count} older post{'s' if count != 1 else ''} not shown)"


def thread_window(
    posts: Sequence[tuple[str, str]],
    *,
    max_posts: int,
    max_bytes: int,
    max_post_bytes: int,
) -> tuple[str, ...]:
    """The lines showing the newest `posts` ((author, text), oldest first) that fit.

    At most `max_posts` posts; each line at most `max_post_bytes` UTF-8 bytes (cut with
    `CUT_MARKER`); all lines, a newline after each, at most `max_bytes`. Older posts are
    dropped first, and a first line `(N older posts not shown)` says how many.
    """
    if max_posts < 0 or max_bytes < 0 or max_post_bytes < 0:
        raise ValueError("the window's bounds must not be negative")
    note_room = _size(_hidden_note(len(posts))) + 1  # the note's longest form, reserved
    budget = max_bytes - note_room
    share = min(max_post_bytes, budget - 1)
    kept: list[str] = []
    used = 0
    if share > _size(CUT_MARKER.format(cut=10**15)):  # else no room to show a post usefully
        for author, text in reversed(posts[-max_posts:] if max_posts else ()):
            line = post_line(author, text, max_bytes=share)
            cost = _size(line) + 1
            if used + cost > budget:
                break
            kept.append(line)
            used += cost
    kept.reverse()
    hidden = len(posts) - len(kept)
    if hidden and note_room <= max_bytes:
        kept.insert(0, _hidden_note(hidden))
    return tuple(kept)
