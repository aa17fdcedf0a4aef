"""A call's output, captured with bounded memory whatever the CLI prints (SPEC C1, A5, A31).

`_Capture` is fed each chunk a CLI writes and keeps: a tail of stdout and of stderr (the stderr
tail led by a line saying what was cut, `_StderrTail`), the first bytes of a plain stdout, and the
structured events the core decides by (`_Events`; their types are the core's own list,
`autodev_core.detection.cli_events`) even once the tail has moved past them — a post event too long
to keep whole is kept cut, still valid JSON (`_CutLine`). One post keeps at most
`POST_MAX_BYTES`; beyond, the answer is cut with `CUT_MARKER`, never dropped.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable

from autodev_core.detection.cli_events import (
    EVENT_OPENING_KEYS,
    ITEM_DONE_EVENT,
    KEPT_EVENT_TYPES,
    MESSAGE_ITEM_TYPES,
    RESULT_EVENT,
)
from autodev_core.detection.reader import codex_block_after, stderr_cut_line

#: C1: bounded capture: the last bytes of each stream kept in memory.
STDOUT_TAIL_BYTES = 256 * 1024
STDERR_TAIL_BYTES = 64 * 1024
#: The bound of one post: at most this many bytes of a CLI's output make one post (A31). A model
#: may answer with anything (a generated file, a minified blob on one line), and while the call
#: runs, its answer is held in memory, then committed to the thread: 1 MiB holds any answer meant
#: to be read (a long report, a file of some 20 000 lines) while what one call holds stays a few
#: MiB whatever its CLI prints. A longer answer is cut, never dropped: the post keeps what fits,
#: with `CUT_MARKER` saying how many bytes were cut, and the lane says so too (C8).
POST_MAX_BYTES = 1024 * 1024
#: Where a post was cut: the number of bytes of the CLI's output left out, and the bound.
CUT_MARKER = "[autodev cut {cut} bytes of this answer here: one post keeps at most {limit} bytes]"
#: Plain-text stdout (codex `exec`, agy `-p`: the answer as it is) keeps its first bytes beside
#: its tail, so that a long answer's post is its start, the marker, then its end: head and tail
#: hold `POST_MAX_BYTES` together.
STDOUT_HEAD_BYTES = POST_MAX_BYTES - STDOUT_TAIL_BYTES
#: Structured events that carry a post (claude `result`, codex agent message) are kept whole up
#: to this size even when the tail has moved past them. A longer one is kept cut (still valid
#: JSON): its fields as they are, at most `POST_MAX_BYTES` of its strings, each cut string ended
#: by the marker. `EVENT_FIELDS_BYTES` bounds the rest of such a line (keys, numbers, markers);
#: an event beyond even that is no answer anyone wrote, and is dropped.
POST_EVENT_MAX_BYTES = POST_MAX_BYTES
EVENT_FIELDS_BYTES = 64 * 1024
#: Other kept events (claude `rate_limit_event`, codex `error`/`turn.failed`): size and count.
SMALL_EVENT_MAX_BYTES = 16 * 1024
SMALL_EVENTS_KEPT = 20

#: Receives every chunk the CLI writes, as it comes: ("stdout" | "stderr", bytes). Lanes use it.
Sink = Callable[[str, bytes], None]


def _alternatives(names: tuple[str, ...]) -> bytes:
    return b"|".join(re.escape(name.encode("ascii")) for name in names)


_EVENT_HEAD = re.compile(rb'^\s*\{\s*"type"\s*:\s*"(' + _alternatives(KEPT_EVENT_TYPES) + rb')"')
_AGENT_MESSAGE = re.compile(
    rb'"(?:item_)?type"\s*:\s*"(?:' + _alternatives(MESSAGE_ITEM_TYPES) + rb')"'
)
#: A line that opens like a structured event of a CLI: its stdout is a stream of events.
_STRUCTURED = re.compile(rb'^\s*\{\s*"(?:' + _alternatives(EVENT_OPENING_KEYS) + rb')"\s*:')
_RESULT = RESULT_EVENT.encode("ascii")
_ITEM_DONE = ITEM_DONE_EVENT.encode("ascii")

#: The first bytes a line that opens an event may have (whitespace, then `{`).
_MAY_OPEN_EVENT = frozenset(bytes([byte]) for byte in b"{ \t\r\x0b\x0c")
_QUOTE_OR_BACKSLASH = re.compile(rb'["\\]')
#: The text of a JSON string up to its closing quote (or the end of what was read).
_STRING_BODY = re.compile(rb'(?:[^"\\]+|\\.)*', re.DOTALL)
#: In an event kept cut, a string this short is kept whole whatever the budget (its fields bound
#: `EVENT_FIELDS_BYTES` still holds).
_SHORT_FIELD_BYTES = 1024


def cut_marker(cut: int) -> str:
    """The words that stand where `cut` bytes of an answer were left out (`CUT_MARKER`)."""
    return CUT_MARKER.format(cut=cut, limit=POST_MAX_BYTES)


def _incomplete_utf8(data: bytes | bytearray, floor: int = 0) -> int:
    """How many bytes at the end of `data` (not before `floor`) begin a UTF-8 character that
    is not all there."""
    for back in range(1, 4):
        at = len(data) - back
        if at < floor:
            return 0
        byte = data[at]
        if byte & 0xC0 == 0x80:  # a continuation byte: look further back for its lead
            continue
        need = 2 if byte >= 0xC0 else 1
        need = 3 if byte >= 0xE0 else need
        need = 4 if byte >= 0xF0 else need
        return back if need > back else 0
    return 0


class _Tail:
    """The last `limit` bytes of a stream, and how many bytes passed in all."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self.data += chunk
        excess = len(self.data) - self.limit
        if excess > 0:
            del self.data[:excess]

    @property
    def start(self) -> int:
        """Stream offset of the first byte still held."""
        return self.total - len(self.data)

    def text(self) -> str:
        data = bytes(self.data)
        if self.start > 0:  # cut mid-line: begin at the next full line
            newline = data.find(b"\n")
            data = data[newline + 1 :] if newline >= 0 else b""
        return data.decode("utf-8", errors="replace")


#: Room left at the start of a cut stderr tail for the line saying so (`stderr_cut_line`).
_CUT_LINE_ROOM = 160
#: Of a stderr line that leaves the tail before it ends, this many bytes are held until it does:
#: enough to tell a transcript header (at most 360 characters) from a longer line.
_LINE_HEAD_BYTES = 2048


class _StderrTail(_Tail):
    """The end of stderr, led by a line saying how many bytes were not kept when some were
    (A5). For codex the line also says in which block of its transcript the tail starts (its
    own lines, the model's `codex` message, the echoed prompt…), which the core works out from
    the lines that left the tail (`codex_block_after`): a long message's header may be gone."""

    def __init__(self, limit: int, provider: str) -> None:
        super().__init__(limit)
        self.provider = provider
        self.block: str | None = None  # where the transcript is after the lines that left
        self.partial = bytearray()  # the start of a line that left the tail but has not ended

    def feed(self, chunk: bytes) -> None:
        excess = len(self.data) + len(chunk) - self.limit
        if excess > 0 and self.provider == "codex":
            self._leaving(bytes(self.data[:excess]) + chunk[: max(0, excess - len(self.data))])
        super().feed(chunk)

    def _leaving(self, data: bytes) -> None:
        """`data` leaves the tail: follow codex's transcript through its whole lines."""
        last = data.rfind(b"\n")
        if last < 0:
            self.partial += data[: max(0, _LINE_HEAD_BYTES - len(self.partial))]
            return
        lines = bytes(self.partial) + data[: last + 1]
        self.block = codex_block_after(lines.decode("utf-8", errors="replace"), self.block)
        self.partial = bytearray(data[last + 1 : last + 1 + _LINE_HEAD_BYTES])

    def text(self) -> str:
        data = bytes(self.data)
        if self.start == 0:
            return data.decode("utf-8", errors="replace")
        # Begin at a full line, leaving room for the line that says where the tail begins.
        newline = data.find(b"\n", _CUT_LINE_ROOM)
        start = newline + 1 if newline >= 0 else len(data)
        block = self.block
        if self.provider == "codex":
            before = bytes(self.partial) + data[:start]
            block = codex_block_after(before.decode("utf-8", errors="replace"), block)
        cut = stderr_cut_line(self.start + start, self.provider, block)
        return cut + "\n" + data[start:].decode("utf-8", errors="replace")


class _CutLine:
    """A structured event line too long to keep whole, kept as valid JSON all the same: its
    fields as they are, its strings kept until `POST_MAX_BYTES` of string bytes are, and each
    string cut there ended by the marker (with the bytes it lost). Fed the line piece by piece:
    it remembers only whether it is inside a string and after a backslash."""

    def __init__(self) -> None:
        self.out = bytearray()
        self.budget = POST_MAX_BYTES  # string bytes still to keep, over the whole line
        self.in_string = False
        self.escaped = False  # the previous byte was a backslash that opened an escape
        self.string_at = 0  # where the current string's text begins in `out`
        self.escape_at = -1  # where the last escape kept begins in `out`
        self.lost = 0  # bytes of the current string not kept
        self.kept = 0  # bytes of the current string kept
        self.cut = 0  # bytes of the whole line not kept
        self.overflow = False  # the line's other bytes alone passed their bound: dropped

    def feed(self, data: bytes) -> None:
        pos, size = 0, len(data)
        while pos < size and not self.overflow:
            if not self.in_string:
                quote = data.find(b'"', pos)
                end = size if quote < 0 else quote + 1
                self.out += data[pos:end]
                if quote >= 0:
                    self.in_string, self.string_at = True, len(self.out)
                    self.lost = self.kept = 0
                pos = end
                self.overflow = len(self.out) > POST_MAX_BYTES + EVENT_FIELDS_BYTES
            elif self.escaped:
                self._text(data[pos : pos + 1])
                self.escaped = False
                pos += 1
            elif self.lost:
                pos = self._skip(data, pos)
            else:
                found = _QUOTE_OR_BACKSLASH.search(data, pos)
                end = size if found is None else found.start()
                self._text(data[pos:end])
                pos = end
                if found is None:
                    break
                if data[end] == 0x5C:  # a backslash: the next byte is part of its escape
                    if self._room() > 0:
                        self.escape_at = len(self.out)
                    self._text(data[end : end + 1])
                    self.escaped = True
                else:
                    self._close_string()
                pos = end + 1

    def _skip(self, data: bytes, pos: int) -> int:
        """Inside a string already cut: find its end in one regex pass (escapes skipped whole),
        counting what is left out; the position to go on from."""
        body = _STRING_BODY.match(data, pos)
        end = body.end() if body is not None else pos
        self.lost += end - pos
        if end == len(data):
            return end
        if data[end] == 0x22:  # its closing quote
            self._close_string()
            return end + 1
        self.lost += 1  # a backslash, the last byte: its escape goes on in the next piece
        self.escaped = True
        return end + 1

    def _room(self) -> int:
        # A short field (a session id, a model name) is kept whole even once the budget is spent.
        return 0 if self.lost else max(self.budget, _SHORT_FIELD_BYTES - self.kept)

    def _text(self, piece: bytes) -> None:
        keep = piece[: self._room()]
        self.out += keep
        self.kept += len(keep)
        self.budget = max(0, self.budget - len(keep))
        self.lost += len(piece) - len(keep)

    def _close_string(self) -> None:
        if self.lost:
            # Cut between whole escapes and whole characters: drop a part-kept one too.
            if self.escape_at >= self.string_at:
                kept = len(self.out) - self.escape_at
                need = 6 if self.out[self.escape_at + 1 : self.escape_at + 2] == b"u" else 2
                if kept < need:
                    del self.out[self.escape_at :]
                    self.lost += kept
            partial = _incomplete_utf8(self.out, self.string_at)
            if partial:
                del self.out[-partial:]
                self.lost += partial
            self.out += b"\\n" + cut_marker(self.lost).encode("ascii")
            self.cut += self.lost
        self.out += b'"'
        self.in_string = False
        self.overflow = len(self.out) > POST_MAX_BYTES + EVENT_FIELDS_BYTES


class _Events:
    """Structured stdout lines kept whole (claude `result`/`rate_limit_event`, codex messages and
    errors), so a post or a limit survives a chatty call whose tail moved past it. A post event
    too long to keep whole is kept cut (`_CutLine`). Also tells whether stdout is a stream of
    events at all (`structured`), or plain text."""

    def __init__(self) -> None:
        self.partial = bytearray()
        self.skipping = False  # inside an over-long line: drop it until its end
        self.cutting: _CutLine | None = None  # inside an over-long post event: keep it cut
        self.line_start = 0  # stream offset of the line being assembled
        self.total = 0
        self.structured = False
        self.post: tuple[int, bytes, int] | None = None  # offset, line, bytes cut from it
        self.small: deque[tuple[int, bytes]] = deque(maxlen=SMALL_EVENTS_KEPT)

    def feed(self, chunk: bytes) -> None:
        pos = 0
        while True:
            newline = chunk.find(b"\n", pos)
            end = len(chunk) if newline < 0 else newline
            if self.cutting is not None:
                self.cutting.feed(chunk[pos:end])
                if self.cutting.overflow:
                    self.cutting, self.skipping = None, True
            elif not self.skipping:
                self.partial += chunk[pos:end]
                if len(self.partial) > POST_EVENT_MAX_BYTES:
                    self._too_long()
            if newline < 0:
                break
            self._end_line()
            pos = newline + 1
            self.line_start = self.total + pos
        self.total += len(chunk)

    def _too_long(self) -> None:
        head = bytes(self.partial[:256])
        self.structured = self.structured or _STRUCTURED.match(head) is not None
        kind = _EVENT_HEAD.match(head)
        if kind is not None and (
            kind.group(1) == _RESULT
            or (kind.group(1) == _ITEM_DONE and _AGENT_MESSAGE.search(self.partial))
        ):
            self.cutting = _CutLine()
            self.cutting.feed(bytes(self.partial))
        else:
            self.skipping = True
        self.partial.clear()

    def _end_line(self) -> None:
        if self.cutting is not None:
            self._line(self.line_start, bytes(self.cutting.out), self.cutting.cut)
        elif not self.skipping:
            self._line(self.line_start, bytes(self.partial), 0)
        self.partial.clear()
        self.cutting = None
        self.skipping = False

    def finish(self) -> None:
        """The stream ended: a last line without a newline still counts."""
        if self.partial or self.cutting is not None:
            self._end_line()
        self.partial.clear()

    def _line(self, offset: int, line: bytes, cut: int) -> None:
        if line[:1] not in _MAY_OPEN_EVENT:  # most plain lines: no regex at all
            return
        if not self.structured and _STRUCTURED.match(line[:256]):
            self.structured = True
        head = _EVENT_HEAD.match(line[:256])
        if head is None:
            return
        kind = head.group(1)
        if kind == _RESULT or (kind == _ITEM_DONE and _AGENT_MESSAGE.search(line)):
            self.post = (offset, line, cut)
        elif kind != _ITEM_DONE and len(line) <= SMALL_EVENT_MAX_BYTES:
            self.small.append((offset, line))

    def lines_before(self, offset: int) -> list[bytes]:
        """The kept lines that start before stream offset `offset`, in stream order."""
        kept = [*self.small, *([self.post[:2]] if self.post else [])]
        return [line for at, line in sorted(kept) if at < offset]

    def retained_bytes(self) -> int:
        cutting = len(self.cutting.out) if self.cutting is not None else 0
        post = len(self.post[1]) if self.post else 0
        return len(self.partial) + cutting + post + sum(len(line) for _, line in self.small)


class _Capture:
    """What a call's output leaves in memory: bounded whatever the CLI prints (C1)."""

    def __init__(self, sink: Sink | None, provider: str = "") -> None:
        self.out = _Tail(STDOUT_TAIL_BYTES)
        self.err = _StderrTail(STDERR_TAIL_BYTES, provider)
        self.head: bytearray | None = bytearray()  # plain stdout's first bytes (None: events)
        self.events = _Events()
        self.sink = sink
        self.sink_error: str | None = None
        self.changed = False

    def feed(self, stream: str, chunk: bytes) -> None:
        if self.sink is not None:
            try:
                self.sink(stream, chunk)
            except Exception as exc:  # a lane that cannot be written must not fail the call
                self.sink = None
                self.sink_error = f"{type(exc).__name__}: {exc}"
        if stream == "stdout":
            if self.head is not None and len(self.head) < STDOUT_HEAD_BYTES:
                self.head += chunk[: STDOUT_HEAD_BYTES - len(self.head)]
            self.out.feed(chunk)
            self.events.feed(chunk)
            if self.events.structured:
                self.head = None  # a stream of events: its posts are events, kept whole or cut
        else:
            self.err.feed(chunk)
        self.changed = True

    def finish(self) -> None:
        """The stream ended (a last line without a newline still counts)."""
        self.events.finish()
        if self.events.structured:
            self.head = None

    def retained_bytes(self) -> int:
        """The bytes this capture holds: bounded whatever the CLI printed (C1)."""
        head = len(self.head) if self.head is not None else 0
        return len(self.out.data) + len(self.err.data) + head + self.events.retained_bytes()

    def _plain_cut(self) -> tuple[bytes, int, bytes] | None:
        """Plain stdout longer than a post: its kept start, the bytes cut, its kept end."""
        if self.head is None or self.out.start <= len(self.head):
            return None
        head = bytes(self.head)
        head = head[: len(head) - _incomplete_utf8(head)]
        tail = bytes(self.out.data)
        skip = 0
        while skip < min(3, len(tail)) and tail[skip] & 0xC0 == 0x80:
            skip += 1
        tail = tail[skip:]
        return head, self.out.total - len(head) - len(tail), tail

    def post_cut_bytes(self) -> int:
        """How many bytes of the answer its post left out (0: the post is whole)."""
        plain = self._plain_cut()
        if plain is not None:
            return plain[1]
        if self.head is None and self.events.post is not None:
            return self.events.post[2]
        return 0

    def stdout_text(self) -> str:
        tail = self.out.text()
        if self.out.start == 0:
            return tail
        if self.head is not None:  # plain text: the whole answer, or its start, marker, end
            plain = self._plain_cut()
            if plain is None:
                whole = bytes(self.head[: self.out.start]) + bytes(self.out.data)
                return whole.decode("utf-8", errors="replace")
            head, cut, end = plain
            return (f"{head.decode('utf-8', errors='replace')}\n{cut_marker(cut)}\n"
                    f"{end.decode('utf-8', errors='replace')}")
        # Events the tail no longer holds whole (anything that began before its first line).
        first_line = self.out.start + (bytes(self.out.data).find(b"\n") + 1)
        kept = self.events.lines_before(first_line)
        head_text = "\n".join(line.decode("utf-8", errors="replace") for line in kept)
        return f"{head_text}\n{tail}" if head_text else tail

    def stderr_text(self) -> str:
        return self.err.text()
