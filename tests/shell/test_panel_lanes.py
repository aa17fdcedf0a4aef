"""Lanes as the panel shows them (docs/panel.md, C8): SGR colours become classes, every other
escape and control character is dropped, secrets are hidden as in lane headers, calls are
told apart by their frames, and a lane read in pieces shows as read whole."""

from __future__ import annotations

import os
import string
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("starlette")

from autodev_shell.calls.lanes import Lanes
from autodev_shell.panel.ansi import LaneDecoder, Style, line_spans, render_text
from autodev_shell.panel.live import LaneFollower


def spans(line: str) -> list[list[str]]:
    return line_spans(line, Style())


def plain(pieces: list[dict[str, object]]) -> str:
    return "".join("".join(t for _c, t in p["spans"]) + ("\n" if p["nl"] else "")  # type: ignore[attr-defined]
                   for p in pieces)


@pytest.mark.parametrize(("line", "expected"), [
    ("\x1b[31mred\x1b[0m plain", [["ansi-fg-1", "red"], ["", " plain"]]),
    ("\x1b[1;92mok\x1b[22m!", [["ansi-fg-10 ansi-bold", "ok"], ["ansi-fg-10", "!"]]),
    ("\x1b[38;5;4mblue\x1b[39m", [["ansi-fg-4", "blue"]]),
    ("\x1b[38;5;200mno class\x1b[m", [["", "no class"]]),
    ("\x1b[38;2;1;2;3mtrue\x1b[0m", [["", "true"]]),
    ("\x1b[44;4mbg\x1b[49;24m", [["ansi-bg-4 ansi-underline", "bg"]]),
])
def test_sgr_colours_become_classes(line: str, expected: list[list[str]]) -> None:
    assert spans(line) == expected


@pytest.mark.parametrize(("line", "expected"), [
    ("\x1b[2K\x1b[1Aup\x1b[10;20Hthere", "upthere"),  # cursor moves and erases
    ("\x1b]0;window title\x07shown", "shown"),  # an OSC title
    ("\x1b]8;;javascript:alert(1)\x1b\\link\x1b]8;;\x1b\\", "link"),  # an OSC 8 hyperlink
    ("\x9b31mC1 CSI\x9b0m", "C1 CSI"),
    ("\x1bPqsixel\x1b\\after", "after"),  # DCS
    ("bell\x07 back\x08space\x7f", "bell backspace"),
    ("\u202eevil\u202c \u2066iso\u2069", "evil iso"),  # bidi controls
    ("progress 10%\rprogress 99%\r", "progress 99%"),  # a redraw: what it left last
    ("tab\tkept", "tab\tkept"),
    ("\x1b[?25lhidden cursor\x1b[?25h", "hidden cursor"),
    ("\x1b=\x1b>\x1b(Bcharset", "charset"),
])
def test_every_other_escape_is_dropped(line: str, expected: str) -> None:
    assert "".join(text for _c, text in spans(line)) == expected


def test_markup_stays_text() -> None:
    """The page puts span text in with textContent: markup is kept as characters (the DOM
    escapes it), never interpreted; here it must come through unchanged."""
    line = '<script>alert(1)</script><img src=x onerror="alert(2)"><a href="javascript:x">'
    assert spans(line) == [["", line]]


@pytest.mark.parametrize(("line", "shown"), [
    ("key sk-abcdefghijklmnop end", "key *** end"),
    ("\x1b[31msk-abcd\x1b[0mefghijkl after", "*** after"),  # split across colours
    ("export OPENAI_API_KEY=abc123", "export OPENAI_API_KEY=***"),
    ("Authorization: Bearer abcdefghijklmnop", "Authorization: Bearer ***"),
    ("token ghp_abcdefghijklmnopqrstuvwxyz", "token ***"),
    ("nothing secret here", "nothing secret here"),
])
def test_secrets_are_hidden_as_in_lane_headers(line: str, shown: str) -> None:
    assert "".join(text for _c, text in spans(line)) == shown


def test_calls_are_told_apart_by_their_frames(tmp_path: Path) -> None:
    from autodev_core.detection import classify_output  # noqa: F401 (the lane's own words)

    lanes = Lanes(tmp_path)
    at = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
    lanes.begin_call("ana", engine="claude:opus", argv=["claude", "-p", "x"], at=at)
    lanes.append("ana", "=== not a frame\nhello\n")
    lanes.append("ana", "\n=== 2026-12-01T09:00:05+00:00 exit 0; read as other; posted\n")
    pieces = render_text(lanes.read("ana"))
    kinds = [(p["kind"], "".join(t for _c, t in p["spans"])[:20]) for p in pieces if p["spans"]]
    assert [k for k, _ in kinds] == ["header", "out", "out", "footer"]
    header = next(p for p in pieces if p["kind"] == "header")
    assert header["participant"] == "ana" and header["engine"] == "claude:opus"
    footer = next(p for p in pieces if p["kind"] == "footer")
    assert footer["read_as"] == "other"


def test_a_header_starts_without_the_previous_calls_colour() -> None:
    text = "\x1b[31munclosed red\n=== 2026-12-01T09:00:00+00:00 ana on claude: claude -p\nout\n"
    pieces = render_text(text)
    assert pieces[1]["kind"] == "header" and pieces[1]["spans"][0][0] == ""
    assert pieces[2]["spans"] == [["", "out"]]


# --- properties ---------------------------------------------------------------------------------

_CONTROL = set(map(chr, [*range(0, 9), *range(11, 32), *range(127, 160)])) | set(
    "\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_LANE_TEXT = st.lists(st.sampled_from(
    [*string.printable, "\x1b", "\x1b[", "\x1b]", "\x07", "\x9b", "\u202e", "é", "\r",
     "[31m", "[0m", ";", "sk-", "ghp_", "KEY=", "=== ", "abcdefgh"]),
    max_size=120).map("".join)


@given(_LANE_TEXT)
def test_no_control_character_ever_reaches_the_page(text: str) -> None:
    for piece in render_text(text):
        for cls, shown in piece["spans"]:
            assert not (set(shown) & _CONTROL), repr(shown)
            assert "\n" not in shown
            assert all(c.startswith("ansi-") for c in cls.split())


@given(st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cs", "Cf")), max_size=200))
def test_plain_text_without_secrets_comes_through_unchanged(text: str) -> None:
    from autodev_shell.calls.lanes import secret_spans

    if secret_spans(text):
        return
    assert plain(render_text(text + "\n")) == text + "\n"


@given(_LANE_TEXT, st.lists(st.integers(min_value=1, max_value=40), max_size=20))
def test_a_lane_read_in_pieces_shows_as_read_whole(text: str, cuts: list[int]) -> None:
    data = (text + "\n").encode("utf-8")
    decoder = LaneDecoder()
    pieces: list[dict[str, object]] = []
    at = 0
    for size in cuts:
        pieces += decoder.feed(data[at:at + size])
        at += size
    pieces += decoder.feed(data[at:])
    assert pieces == render_text(data.decode("utf-8"))


def test_a_rotated_lane_is_followed_across_the_rotation(tmp_path: Path) -> None:
    lanes = Lanes(tmp_path, max_bytes=64)
    lanes.append("ana", b"first line\n")
    follower = LaneFollower(tmp_path, "ana")
    assert "first line" in plain(follower.snapshot()["pieces"])
    lanes.append("ana", b"second line\n")
    lanes.append("ana", b"x" * 50 + b"\n")  # passes 64 bytes: .log rotates to .log.1
    assert (tmp_path / "ana.log.1").exists()
    lanes.append("ana", b"after rotation\n")
    assert plain(follower.poll()) == "second line\n" + "x" * 50 + "\nafter rotation\n"
    os.truncate(tmp_path / "ana.log", 0)  # shrunk in place: started again from 0
    lanes.append("ana", b"again\n")
    assert plain(follower.poll()) == "again\n"
