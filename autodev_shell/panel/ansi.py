"""A lane as the panel shows it (docs/panel.md): CLI output made safe to put in a page.

In this order, per line: decode (bad UTF-8 is U+FFFD), keep what a `\\r` redraw left last,
turn SGR colour codes into classes, drop every other escape and control character (cursor
moves, OSC titles and hyperlinks, DCS, C1 codes, bidi overrides), then hide secrets as the lane
headers do (`lanes.secret_spans`). What comes out is a list of spans `[classes, text]`: the page
puts each text in with `textContent`, never as HTML, so `<script>` in a lane is shown as text.

Each line also says whether it is a call's header or footer frame (`Lanes.begin_call` /
`Lanes.end_call`), so the page groups the lane by call.
"""

from __future__ import annotations

import codecs
import re
from typing import Any, Final

from ..calls.lanes import REDACTED, secret_spans

#: One escape sequence or control character, as a terminal would read it: CSI (7-bit and the
#: C1 form), OSC (ended by BEL or ST, or by the end of the line), DCS/SOS/PM/APC strings, other
#: two-character escapes, then single C0/C1 controls (tab kept) and bidi controls.
_ESCAPE: Final = re.compile(
    r"\x1b\[([0-?]*)([ -/]*)([@-~])"
    r"|\x9b([0-?]*)([ -/]*)([@-~])"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"
    r"|\x9d[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"
    r"|\x1b[ -/]*[0-~]?"
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)
#: An escape cut off at the end of a partial line: held back until the rest comes.
_UNFINISHED: Final = re.compile(
    r"(\x1b(\[[0-?]*[ -/]*|\][^\x07\x1b]*|[PX^_][^\x1b]*)?|\x9b[0-?]*)$")
#: `Lanes.begin_call`'s header and `Lanes.end_call`'s footer (C8).
_HEADER: Final = re.compile(r"^=== \d{4}-\d\d-\d\dT\S+ (\S+) on (\S+): ")
_FOOTER: Final = re.compile(r"^=== \d{4}-\d\d-\d\dT\S+ .*; read as ([\w-]+)")

Span = list[str]  # [classes, text]


class Style:
    """The SGR state: colours 0-15 and the attributes the page has classes for."""

    __slots__ = ("bg", "bold", "dim", "fg", "inverse", "italic", "underline")

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.fg: int | None = None
        self.bg: int | None = None
        self.bold = self.dim = self.italic = self.underline = self.inverse = False

    def classes(self) -> str:
        names = []
        if self.fg is not None:
            names.append(f"ansi-fg-{self.fg}")
        if self.bg is not None:
            names.append(f"ansi-bg-{self.bg}")
        for flag in ("bold", "dim", "italic", "underline", "inverse"):
            if getattr(self, flag):
                names.append(f"ansi-{flag}")
        return " ".join(names)

    def apply(self, params: str) -> None:
        codes = [int(p) if p.isdigit() else 0 for p in params.replace(":", ";").split(";")]
        i = 0
        while i < len(codes):
            code = codes[i]
            i += 1
            if code == 0:
                self.reset()
            elif code in (1, 2, 3, 4, 7):
                setattr(self, {1: "bold", 2: "dim", 3: "italic", 4: "underline",
                               7: "inverse"}[code], True)
            elif code == 22:
                self.bold = self.dim = False
            elif code == 23:
                self.italic = False
            elif code == 24:
                self.underline = False
            elif code == 27:
                self.inverse = False
            elif 30 <= code <= 37:
                self.fg = code - 30
            elif 90 <= code <= 97:
                self.fg = code - 90 + 8
            elif code == 39:
                self.fg = None
            elif 40 <= code <= 47:
                self.bg = code - 40
            elif 100 <= code <= 107:
                self.bg = code - 100 + 8
            elif code == 49:
                self.bg = None
            elif code in (38, 48) and i < len(codes):
                mode = codes[i]
                if mode == 5 and i + 1 < len(codes):
                    n = codes[i + 1]
                    i += 2
                    if n < 16:  # the 16 colours have classes; the rest is shown plain
                        if code == 38:
                            self.fg = n
                        else:
                            self.bg = n
                elif mode == 2:
                    i += 4  # 24-bit colour: shown plain (no inline style under the CSP)
                else:
                    i += 1


def _redact(spans: list[Span]) -> list[Span]:
    plain = "".join(text for _cls, text in spans)
    hidden = secret_spans(plain)
    if not hidden:
        return spans
    out: list[Span] = []
    at = 0
    for cls, text in spans:
        start = at
        at += len(text)
        kept: list[str] = []
        for i, ch in enumerate(text, start):
            inside = next(((s, e) for s, e in hidden if s <= i < e), None)
            if inside is None:
                kept.append(ch)
            elif i == inside[0]:
                kept.append(REDACTED)
        if kept:
            out.append([cls, "".join(kept)])
    return out


def line_spans(line: str, style: Style) -> list[Span]:
    """One line (no `\\n`) as spans, `style` carried on to the next line."""
    if "\r" in line:
        line = line.rstrip("\r").rsplit("\r", 1)[-1]  # what a redraw left on the screen
    spans: list[Span] = []

    def add(text: str) -> None:
        if not text:
            return
        cls = style.classes()
        if spans and spans[-1][0] == cls:
            spans[-1][1] += text
        else:
            spans.append([cls, text])

    at = 0
    for match in _ESCAPE.finditer(line):
        add(line[at:match.start()])
        at = match.end()
        final = match.group(3) or match.group(6)
        intermediates = match.group(2) if match.group(3) else match.group(5)
        if final == "m" and not intermediates:
            style.apply(match.group(1) if match.group(3) else match.group(4) or "")
    add(line[at:])
    return _redact(spans)


def kind_of(plain: str) -> str:
    if _HEADER.match(plain):
        return "header"
    if _FOOTER.match(plain):
        return "footer"
    return "out"


def piece(line: str, style: Style, *, newline: bool) -> dict[str, Any]:
    """A lane line for the page: `{kind, spans, nl}`. A header starts with no colour."""
    if line.startswith("=== "):
        probe = _ESCAPE.sub("", line)
        if kind_of(probe) == "header":
            style.reset()
    spans = line_spans(line, style)
    plain = "".join(text for _cls, text in spans)
    found = kind_of(plain)
    out: dict[str, Any] = {"kind": found, "spans": spans, "nl": newline}
    if found == "header":
        head = _HEADER.match(plain)
        assert head is not None
        out["participant"], out["engine"] = head.group(1), head.group(2)
    elif found == "footer":
        foot = _FOOTER.match(plain)
        assert foot is not None
        out["read_as"] = foot.group(1)
    return out


def render_text(text: str) -> list[dict[str, Any]]:
    """A whole text (a lane's tail) as pieces, from a plain style."""
    style = Style()
    lines = text.split("\n")
    out = [piece(line, style, newline=True) for line in lines[:-1]]
    if lines[-1]:
        out.append(piece(lines[-1], style, newline=False))
    return out


class LaneDecoder:
    """A lane's bytes as they come, turned into pieces: whole lines at once, a partial line when
    `flush` is asked (output without a newline yet), an escape cut in two held back."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = ""
        self.style = Style()

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        self._pending += self._decoder.decode(data)
        if "\n" not in self._pending:
            return []
        *lines, self._pending = self._pending.split("\n")
        return [piece(line, self.style, newline=True) for line in lines]

    @property
    def pending(self) -> bool:
        return bool(self._pending)

    @property
    def pending_text(self) -> str:
        return self._pending

    def flush(self) -> list[dict[str, Any]]:
        """The partial line so far (the page appends what follows to it)."""
        text = self._pending
        cut = _UNFINISHED.search(text)
        keep = "" if cut is None or not cut.group(0) else cut.group(0)
        text = text[: len(text) - len(keep)]
        self._pending = keep
        if not text:
            return []
        return [piece(text, self.style, newline=False)]
