"""Cutting a call's output into the pieces the detectors examine, and who wrote each (SPEC A5).

A piece is either the CLI's own words (examined whatever its length) or text a model may have
written (examined only when at most 300 characters after trimming):

- CLI words: stderr as a whole; structured events of the CLI on stdout — claude's
  `rate_limit_event`, `system` errors and a result's `errors`; codex's `error`, `turn.failed`
  and `error` items (`codex exec --json`, also the older `{"msg": {...}}` shape); agy's
  `AGY_ERROR: {json}` lines; any JSON object whose top level is an `error`.
- Model text: each `result` text and each assistant message (claude), each `agent_message`
  (codex), and all stdout that is not a structured event, taken together as one text.

Everything else in a structured event (tool output, reasoning, partial deltas, init data) is
neither: a command's output that mentions ECONNREFUSED is not the CLI failing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from json.scanner import make_scanner
from typing import Any, Literal, cast

import attrs

from . import _bounded
from ._sieve import (
    ESCAPE_ASCII,
    ESCAPE_KELVIN,
    SEPARATORS,
    as_latin1,
    latin1_spans,
    mentions,
)
from ._sieve import triggers_for as triggers_for
from .cli_events import ERROR_EVENTS, LIMIT_EVENT, MESSAGE_ITEM_TYPES, RESULT_EVENT, TURN_DONE_EVENT

# A5: text a model may have written is examined only up to this length, after trimming.
MODEL_TEXT_MAX_CHARS = 300
# Structured events are flattened to "key: value" lines to this depth and this many leaves.
_FLATTEN_DEPTH = 8
_FLATTEN_LEAVES = 400

Origin = Literal["cli", "model"]

# Terminal colour and cursor codes (CSI and OSC sequences): not words, whoever wrote them.
_ANSI = re.compile(r"\x1b\[[0-9;?]{0,32}[ -/]{0,4}[@-~]|\x1b\][^\x07\x1b]{0,512}(?:\x07|\x1b\\)?")


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text) if "\x1b" in text else text


@attrs.frozen
class Piece:
    """A text to examine; `origin` says whose words they are (A5)."""

    text: str
    origin: Origin
    where: str  # "stderr", "event", "result", "message", "stdout"


@attrs.frozen
class WindowUsage:
    """One usage window of a `rate_limit_event` (claude 2.1.332's `unifiedWindows`, from the
    API's `anthropic-ratelimit-unified-5h-*`/`-7d-*` headers): how much of it is used."""

    window: str  # `five_hour`, `seven_day`, … as the CLI names it
    utilization: float
    resets_at: float | None = None
    threshold: float | None = None


@attrs.frozen
class RateLimitEvent:
    """claude's `rate_limit_event` (A2): a limit when its status is rejected/blocked and it
    names its reset (`resetsAt`) or its window (`rateLimitType`) — one naming neither is the
    server's throttle, a failed call (A2, A28); on a healthy call (`allowed`,
    `allowed_warning`) its `utilization`, `rateLimitType` and `surpassedThreshold`, and each of
    its `unifiedWindows`, are usage readings (docs/limits.md)."""

    status: str
    resets_at: float | None
    text: str
    utilization: float | None = None
    window: str = ""
    threshold: float | None = None
    windows: tuple[WindowUsage, ...] = ()
    #: Whether the event names its reset or its window at all (even unreadably): a usage limit
    #: when rejected, not the server's throttle (A2).
    names_a_limit: bool = True


@attrs.frozen
class Output:
    """A call's output cut into pieces, plus what the events say about how the call ended."""

    pieces: tuple[Piece, ...]
    rate_limits: tuple[RateLimitEvent, ...]
    succeeded: bool  # a terminal success event was seen (claude result ok, codex turn.completed)


def _flatten(value: Any, key: str = "", depth: int = 0, out: list[str] | None = None) -> list[str]:
    lines: list[str] = [] if out is None else out
    if len(lines) >= _FLATTEN_LEAVES or depth > _FLATTEN_DEPTH:
        return lines
    if isinstance(value, dict):
        for k, v in value.items():
            _flatten(v, str(k), depth + 1, lines)
    elif isinstance(value, list):
        for v in value:
            _flatten(v, key, depth + 1, lines)
    elif value is not None:
        lines.append(f"{key}: {value}" if key else str(value))
    return lines


def _cli(value: Any) -> Piece:
    return Piece(text="\n".join(_flatten(value)), origin="cli", where="event")


def _text_of_content(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            block["text"]
            for block in content
            if isinstance(block, dict) and isinstance(block.get("text"), str)
        )
    return ""


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return float(value)
    except OverflowError:  # an integer too large for a float is no epoch
        return None


#: At most this many windows of one event are read (claude reports two or three).
_WINDOWS_MAX = 8


def _windows(value: Any) -> tuple[WindowUsage, ...]:
    """The usage windows of a `rate_limit_info.unifiedWindows` object: each `{name: {utilization,
    resetsAt, surpassedThreshold, …}}` with a numeric utilization; anything else is skipped."""
    if not isinstance(value, dict):
        return ()
    found: list[WindowUsage] = []
    for name, window in list(value.items())[:_WINDOWS_MAX]:
        if not isinstance(name, str) or not isinstance(window, dict):
            continue
        used = _number(window.get("utilization"))
        if used is None:
            continue
        found.append(WindowUsage(
            window=name[:40],
            utilization=used,
            resets_at=_number(window.get("resetsAt", window.get("reset"))),
            threshold=_number(window.get("surpassedThreshold")),
        ))
    return tuple(found)


_Said = Piece | RateLimitEvent | bool


def _event_pieces(event: dict[str, Any]) -> Iterator[_Said]:
    """Pieces of one structured event; True when the event is a terminal success."""
    kind = event.get("type")
    if kind == LIMIT_EVENT:
        yield from _rate_limit_event(event)
    elif kind in (RESULT_EVENT, "assistant", "system"):
        yield from _claude_event(kind, event)
    elif kind in ERROR_EVENTS or kind == TURN_DONE_EVENT or (
            isinstance(kind, str) and kind.startswith("item.")):
        yield from _codex_event(kind, event)
    elif kind is None and isinstance(event.get("msg"), dict):  # codex before `exec --json`
        yield from _older_codex_event(event["msg"])
    elif kind is None and "error" in event:  # a bare API error object printed by the CLI
        yield _cli(event)
    elif isinstance(event.get("method"), str) and isinstance(event.get("params"), dict):
        yield from _app_server_event(event["method"], event["params"])


def _rate_limit_event(event: dict[str, Any]) -> Iterator[_Said]:
    """claude's `rate_limit_event` (A2): the status alone decides (rejected/blocked are limits,
    allowed and allowed_warning are not), whatever the overage fields say."""
    info = event.get("rate_limit_info")
    if not isinstance(info, dict) or not isinstance(info.get("status"), str):
        return
    status = info["status"]
    resets = info.get("resetsAt")
    window = info.get("rateLimitType")
    yield RateLimitEvent(
        status=status,
        resets_at=_number(resets),
        text=f"rate_limit_event: status {status}, resetsAt {str(resets)[:20]}, "
        f"type {str(window)[:40]}",
        utilization=_number(info.get("utilization")),
        window=window[:40] if isinstance(window, str) else "",
        threshold=_number(info.get("surpassedThreshold")),
        windows=_windows(info.get("unifiedWindows")),
        names_a_limit=resets is not None or window is not None,
    )


def _claude_event(kind: str, event: dict[str, Any]) -> Iterator[_Said]:
    """claude's stream-json `result`, `assistant` and `system` events."""
    if kind == RESULT_EVENT:
        result = event.get("result")
        if isinstance(result, str):
            yield Piece(text=result, origin="model", where="result")
        errors = {k: event[k] for k in ("error", "errors") if event.get(k)}
        if errors:  # `error_during_execution` carries the CLI's own error text
            yield _cli(errors)
        if event.get("is_error") is False and event.get("subtype") == "success":
            yield True
    elif kind == "assistant":
        message = event.get("message")
        if isinstance(message, dict):
            text = _text_of_content(message.get("content"))
            if text:
                yield Piece(text=text, origin="model", where="message")
    elif event.get("subtype") in ("api_retry", "error") or "error" in event:  # system
        yield _cli({k: v for k, v in event.items() if k not in ("type", "subtype")})


def _codex_event(kind: str, event: dict[str, Any]) -> Iterator[_Said]:
    """codex `exec --json` events: errors, a finished turn, finished items."""
    if kind in ERROR_EVENTS:
        yield _cli({k: v for k, v in event.items() if k != "type"})
    elif kind == TURN_DONE_EVENT:
        yield True
    else:
        item = event.get("item")
        if not isinstance(item, dict):
            return
        item_type = item.get("type") or item.get("item_type")
        if item_type == "error":
            yield _cli(item)
        elif item_type in MESSAGE_ITEM_TYPES and isinstance(item.get("text"), str):
            yield Piece(text=item["text"], origin="model", where="message")


def _older_codex_event(msg: dict[str, Any]) -> Iterator[_Said]:
    """codex's events before `exec --json` (`{"msg": {"type": ...}}`)."""
    msg_type = msg.get("type")
    if msg_type in ("error", "stream_error"):
        yield _cli(msg)
    elif msg_type == "agent_message" and isinstance(msg.get("message"), str):
        yield Piece(text=msg["message"], origin="model", where="message")
    elif msg_type == "task_complete":
        yield True


def _app_server_event(method: str, params: dict[str, Any]) -> Iterator[_Said]:
    """codex app-server's JSON-RPC notifications."""
    if method == "error" or "error" in params:
        yield _cli(params)
    elif method == "turn/completed" and isinstance(params.get("turn"), dict):
        turn = params["turn"]
        if turn.get("status") == "failed":
            yield _cli(turn.get("error"))
        elif turn.get("status") == "completed":
            yield True


# The JSON decoder's own scanner, called directly: `json.loads` adds two whitespace regexes and
# three Python frames per line, a fifth of the cost of reading a stream-json transcript.
_SCAN_JSON: Callable[[str, int], tuple[Any, int]] = cast(Any, make_scanner)(json.JSONDecoder())


def _as_events(line: str) -> list[dict[str, Any]] | None:
    """The structured events on one stdout line, or None when it is not one (free text).

    `line` is stripped (no whitespace at either end), so it is one JSON value exactly when the
    scanner reads a value that ends where the line does — what `json.loads` accepts.
    """
    if not line or line[0] not in "{[":
        return None
    try:
        value, end = _SCAN_JSON(line, 0)
    except (StopIteration, ValueError, RecursionError):
        return None
    if end != len(line):
        return None
    candidates = value if isinstance(value, list) else [value]
    events = [
        v
        for v in candidates
        if isinstance(v, dict)
        and (
            isinstance(v.get("type"), str)
            or isinstance(v.get("msg"), dict)
            or "error" in v
            or (isinstance(v.get("method"), str) and isinstance(v.get("params"), dict))
        )
    ]
    return events or None


_AGY_ERROR = "AGY_ERROR:"


# `codex exec` writes a human transcript to stderr: the prompt it was given (`user`), the
# model's reasoning and messages (`thinking`, `codex`), commands and tools with their output
# (`exec`, `tool`), between its own lines (`ERROR:`, `warning:`, retries). Only the latter are
# the CLI's words; a prompt that quotes a notice must not make codex look limited (A5).
_TS = r"(?:\[\d{4}-\d{2}-\d{2}T[^\]\n]{1,30}\]\s*)?"
_CODEX_BLOCK = re.compile(
    _TS + r"(?P<head>user|thinking|codex|exec|tool|file update|apply_patch|apply patch"
    r"|proposed plan|plan update|turn diff)(?P<rest>\s.{0,300})?",
)
_CODEX_CLI_LINE = re.compile(
    _TS + r"(?:(?:ERROR|Error|error|warning|WARNING|deprecated|mcp|mcp startup)\s*:"
    r"|■|Reconnecting|stream error|stream disconnected|tokens used|OpenAI Codex v|--------"
    r"|Caused by)",
)
# A tail cut where the block is not known is read as a model's words (A5), as these are.
_MODEL_BLOCKS = frozenset({"thinking", "codex", "unknown"})
_HEADS_WITH_ARGUMENTS = frozenset({"exec", "tool"})  # `exec bash -lc ls in /tmp`


# Every head `_CODEX_BLOCK` can open a block with, as literal words: a stderr holding none of
# them opens no block, so its lines need not be matched one by one.
_BLOCK_WORDS = (
    "user", "thinking", "codex", "exec", "tool", "file update", "apply_patch", "apply patch",
    "proposed plan", "plan update", "turn diff",
)
# Line breaks `str.splitlines` knows besides "\n".
_LINE_BREAKS_BUT_NEWLINE = tuple("\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
# First characters of a line that opens a block: a timestamp's bracket or a head's first letter.
_BLOCK_FIRST = frozenset("[" + "".join(word[0] for word in _BLOCK_WORDS))


def _codex_block(line: str) -> str | None:
    """The transcript block a line opens (`user`, `codex`, `exec`, ...), if it opens one."""
    if len(line) > 360 or line[:1] not in _BLOCK_FIRST:
        return None
    head = _CODEX_BLOCK.fullmatch(line)
    if head is None:
        return None
    if head.group("rest") and head.group("head") not in _HEADS_WITH_ARGUMENTS:
        return None
    return head.group("head")


def _split_codex_stderr(stderr: str) -> tuple[str, list[str]]:
    """codex's own lines of its stderr transcript, and the model's message blocks."""
    own, said, _ = _split_codex_transcript(stderr)
    return own, said


def _split_codex_transcript(
    stderr: str, block: str | None = None
) -> tuple[str, list[str], str | None]:
    """codex's own lines of its stderr transcript, the model's message blocks, and the block the
    transcript is in at its end. `block` is the one it starts in (None: codex's own lines;
    `UNKNOWN_BLOCK`: unknown, read as a model's words until codex's next line or header)."""
    if block is None and not any(word in stderr for word in _BLOCK_WORDS):
        # No block opens: all codex's own.
        if not any(c in stderr for c in _LINE_BREAKS_BUT_NEWLINE):  # "\n".join(splitlines)
            return (stderr[:-1] if stderr.endswith("\n") else stderr), [], None
        return "\n".join(stderr.splitlines()), [], None
    own: list[str] = []
    said: list[list[str]] = [[]] if block in _MODEL_BLOCKS else []
    for line in stderr.splitlines():
        stripped = line.strip()
        opened = _codex_block(stripped)
        if opened is not None:
            block = opened
            if block in _MODEL_BLOCKS:
                said.append([])
            continue
        if block is not None and _CODEX_CLI_LINE.match(stripped[:80]) is not None:
            block = None
        if block is None:
            own.append(line)
        elif block in _MODEL_BLOCKS:
            said[-1].append(line)
    return "\n".join(own), ["\n".join(lines) for lines in said], block


# When the shell keeps only the end of a call's stderr, the tail's first line says so, and for
# codex in which part of its transcript the tail starts (see `stderr_cut_line`).
UNKNOWN_BLOCK = "unknown"
_STDERR_CUT = re.compile(
    r"\[autodev: (?P<cut>\d{1,20}) bytes of stderr before this line were not kept"
    r'(?:; codex was (?:in its "(?P<block>[a-z_ ]{1,20})" block|writing its (?P<own>own) lines))?\]'
)


def stderr_cut_line(cut: int, provider: str, block: str | None = UNKNOWN_BLOCK) -> str:
    """The line the shell puts before a stderr tail that left out `cut` bytes: for codex, it says
    which transcript block the tail starts in (`codex_block_after`), None for codex's own lines."""
    where = ""
    if provider == "codex" and block != UNKNOWN_BLOCK:
        where = "; codex was writing its own lines" if block is None else (
            f'; codex was in its "{block}" block'
        )
    return f"[autodev: {cut} bytes of stderr before this line were not kept{where}]"


def codex_block_after(text: str, block: str | None = None) -> str | None:
    """The block codex's stderr transcript is in after `text` (whole lines), when it was in
    `block` before it (None: codex's own lines). For the shell, which keeps a tail of stderr."""
    # The transitions of `_split_codex_transcript`, without gathering the lines.
    for line in strip_ansi(text).splitlines():
        stripped = line.strip()
        opened = _codex_block(stripped)
        if opened is not None:
            block = opened
        elif block is not None and _CODEX_CLI_LINE.match(stripped[:80]) is not None:
            block = None
    return block


def _cut_start(stderr: str) -> tuple[str, str | None]:
    """stderr without the shell's cut line, and the transcript block the rest starts in."""
    if not stderr.startswith("[autodev: "):
        return stderr, None
    first, _, rest = stderr.partition("\n")
    found = _STDERR_CUT.fullmatch(first.rstrip("\r"))
    if found is None:
        return stderr, None
    if found.group("own"):
        return rest, None
    block = found.group("block")
    return rest, block if block in _BLOCK_WORDS else UNKNOWN_BLOCK


def _json_object(text: str) -> bool:
    """Whether `text` is one JSON object (agy's error payload)."""
    if not text.startswith("{"):
        return False
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def _read_line(
    raw: str, pieces: list[Piece], rate_limits: list[RateLimitEvent], provider: str = ""
) -> bool | None:
    """Read one stdout line into `pieces` and `rate_limits`: None when it is free text (not a
    structured event of the CLI), else whether it was a terminal success."""
    line = raw.strip()
    # agy's own structured error line, `AGY_ERROR: {json}` (A4), perhaps after a timestamp.
    # Only agy prints one, and only with a JSON payload: the same words in claude's or codex's
    # output, or before plain text, are the model's (A5: a report quoting
    # "AGY_ERROR: Claude usage limit reached…" in claude's output read as a limit).
    marker = line.find(_AGY_ERROR, 0, 40 + len(_AGY_ERROR)) if provider in ("agy", "") else -1
    if marker != -1:
        payload = line[marker + len(_AGY_ERROR) :].strip()
        parsed = _as_events(payload)
        if parsed is not None:
            pieces.append(Piece(text=payload + "\n" + _cli(parsed).text, origin="cli",
                                where="event"))
            return False
        if _json_object(payload):  # agy's error object, with no event shape of its own
            pieces.append(Piece(text=payload, origin="cli", where="event"))
            return False
    events = _as_events(line)
    if events is None:
        return None
    if provider not in ("claude", ""):
        # `rate_limit_event` is claude's own event (A2): in codex's or agy's output such a line
        # is text their model wrote (A5), never a limit or a usage reading.
        events = [event for event in events if event.get("type") != LIMIT_EVENT]
        if not events:
            return None
    succeeded = False
    for event in events:
        for part in _event_pieces(event):
            if part is True:
                succeeded = True
            elif isinstance(part, RateLimitEvent):
                rate_limits.append(part)
            elif isinstance(part, Piece):
                pieces.append(part)
    return succeeded


def _stderr_pieces(stderr: str, provider: str) -> list[Piece]:
    pieces: list[Piece] = []
    stderr, block = _cut_start(stderr)
    if provider == "codex":
        stderr, messages, _ = _split_codex_transcript(stderr, block)
        pieces.extend(Piece(text=m, origin="model", where="message") for m in messages)
    if stderr.strip():
        pieces.append(Piece(text=stderr, origin="cli", where="stderr"))
    return pieces


def _cut(stdout: str, stderr: str, provider: str) -> Output:
    pieces: list[Piece] = []
    rate_limits: list[RateLimitEvent] = []
    succeeded = False
    free: list[str] = []
    for raw in stdout.splitlines():
        said = _read_line(raw, pieces, rate_limits, provider)
        if said is None:
            free.append(raw)
        elif said:
            succeeded = True
    free_text = "\n".join(free).strip()
    if free_text:
        pieces.append(Piece(text=free_text, origin="model", where="stdout"))
    pieces.extend(_stderr_pieces(stderr, provider))
    return Output(pieces=tuple(pieces), rate_limits=tuple(rate_limits), succeeded=succeeded)


def cut(stdout: str, stderr: str, provider: str = "") -> Output:
    """Cut stdout and stderr into pieces (A5), in the order they were written."""
    return _cut(strip_ansi(stdout), strip_ansi(stderr), provider)


# --- Reading only what can matter ---------------------------------------------------------
#
# A detector finds nothing in a piece that holds none of its keywords, so a piece without one
# may be left out. `cut_relevant` finds, on bytes, the stdout lines holding a trigger (a word
# every keyword contains, lower case: `_sieve.py`) and decodes only those; the rest of the
# output is read the full way when it could still matter.


def _short(text: str) -> bool:
    """Whether `text` is short enough to be read whole rather than sifted for triggers first."""
    return len(text) <= MODEL_TEXT_MAX_CHARS and _bounded.PRECHECKS


def _relevant_stdout(
    stdout: str, provider: str, triggers: tuple[bytes, ...]
) -> tuple[list[Piece], list[RateLimitEvent], bool] | None:
    """The pieces of the stdout lines holding a trigger; None when the full reader must run."""
    pieces: list[Piece] = []
    rate_limits: list[RateLimitEvent] = []
    succeeded = False
    if not stdout:
        return pieces, rate_limits, succeeded
    if provider == "agy":  # `429` is a keyword, and JSON may write that number as `4.29e2`
        return None
    if _short(stdout):
        # Short: any free text with a trigger is short enough to be examined, and then the
        # whole is read anyway (below); read it whole at once.
        return None
    kelvin = (ESCAPE_KELVIN,) if any(b"k" in trigger for trigger in triggers) else ()
    triggers = (*triggers, ESCAPE_ASCII, *kelvin)
    encoded = as_latin1(stdout, triggers)
    if encoded is None:
        return None
    raw, wide = encoded
    free_chars = 0
    free_seen = False
    for start, end in latin1_spans(raw, triggers):
        line = stdout[start:end]
        if wide and any(separator in line for separator in SEPARATORS):
            return None  # the line is several lines
        said = _read_line(line, pieces, rate_limits, provider)
        if said is None:
            free_seen = True
            free_chars += len(line.strip())
        elif said:
            succeeded = True
    # Free text is examined only as a whole, and only when short (A5): if the lines with a
    # keyword are already too long, it never is; else the whole of it is needed.
    if free_seen and free_chars <= MODEL_TEXT_MAX_CHARS:
        return None
    return pieces, rate_limits, succeeded


def cut_relevant(stdout: str, stderr: str, provider: str, triggers: tuple[bytes, ...]) -> Output:
    """`cut`, leaving out pieces that hold none of `triggers` (and none that do).

    A detector whose keywords each hold a trigger finds the same in both: the pieces left out
    hold no keyword, and those kept come in the same order. Rate-limit events and terminal
    successes are kept when their words (`limit`, `success`, `complete`) are among `triggers`.
    """
    stdout, stderr = strip_ansi(stdout), strip_ansi(stderr)
    read = _relevant_stdout(stdout, provider, triggers)
    if read is None:
        return _cut(stdout, stderr, provider)
    pieces, rate_limits, succeeded = read
    # codex's stderr is cut into the CLI's lines and the model's (a pass per block word):
    # not needed when it mentions no keyword. Other CLIs' stderr is one piece, read as is.
    if stderr and (provider != "codex" or _short(stderr) or mentions(stderr, triggers)):
        pieces.extend(_stderr_pieces(stderr, provider))
    return Output(pieces=tuple(pieces), rate_limits=tuple(rate_limits), succeeded=succeeded)


def examinable(piece: Piece) -> str | None:
    """The text of `piece` the detectors may read: model text only when short (A5)."""
    if piece.origin == "cli":
        return piece.text
    trimmed = piece.text.strip()
    if len(trimmed) > MODEL_TEXT_MAX_CHARS:
        return None
    return trimmed
