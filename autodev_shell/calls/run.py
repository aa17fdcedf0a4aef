"""Provider adapters: the command line of a call, and running it (SPEC C1, A12, A37).

- `build_argv(provider, prompt, model)`: the argv of one call, from a `CommandTemplate`
  (defaults below; overridable per provider by the run's config, `templates_from_config`).
- `installed_providers()`: which CLIs this machine has (A12: an entry naming a missing CLI is
  skipped — the core decides that; the shell only reports what is installed).
- `run_call(argv, provider=…, input=…)`: spawn the CLI in a new process group, its stdin the
  prompt (`input`, for a template without `{prompt}`) or /dev/null, stream its stdout and
  stderr with bounded memory (a tail of each, the start of a plain stdout, the structured
  events that matter; one post keeps at most `POST_MAX_BYTES`, cut with a marker beyond),
  stop the whole group on timeout (SIGTERM, then SIGKILL), and — while it streams — ask the
  core's `classify_output` about the output so far: a CLI that retries the network by itself
  without end (A37: codex's `Reconnecting... waiting for network`) is stopped
  at once and reported as a network outage. The answer is a frozen `CallResult`. A CLI that
  cannot be started at all (not found, not executable, an argument list too long, a NUL byte in
  an argument) is a call that failed with its reason on stderr, never an exception (A28).
- `call_participant(...)`: the argv and stdin of one participant's call, run. A prompt is never
  one unbounded argv item: claude and codex read it on stdin; an argv prompt (agy's `-p`) longer
  than `ARGV_PROMPT_MAX_BYTES` goes into a private file that a short argv prompt points to.

No policy lives here: what a limit, an outage or a missing post means is the core's decision.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import math
import os
import re
import selectors
import shutil
import signal
import subprocess
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, tzinfo
from types import MappingProxyType
from typing import Any

import attrs

from autodev_core.detection.classification import Classification
from autodev_core.detection.posts import extract_post
from autodev_core.detection.reader import classify_output, codex_block_after, stderr_cut_line
from autodev_core.engine import PROVIDERS, Engine
from autodev_core.errors import ConfigError
from autodev_core.participant import Participant

from .clock import Clock, Interrupt, SystemClock, is_set, local_zone
from .processes import die_with_parent

# -- policy-free mechanics, in one place --------------------------------------------------------

#: C1: default per-call timeout (the agy watchdog, and the same bound for claude and codex).
#: The SPEC gives no number; an hour lets a long coding turn finish.
DEFAULT_CALL_TIMEOUT_SECONDS = 3600.0
#: C1: after SIGTERM to the group, this long before SIGKILL.
KILL_GRACE_SECONDS = 5.0
#: A37: how often the output so far is classified while the call streams.
CHECK_INTERVAL_SECONDS = 0.5
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
#: After the CLI exits, how long to wait for the pipes to close before killing what holds them.
DRAIN_SECONDS = 2.0
#: How often a `cancel` interrupt is asked while a call runs.
CANCEL_POLL_SECONDS = 0.2
_READ_CHUNK = 64 * 1024
#: The largest prompt passed as one argv item. Linux refuses any single argument over
#: MAX_ARG_STRLEN (32 pages: 128 KiB) with E2BIG; this leaves room below it, so a long
#: participant body plus the thread window never makes a call impossible to start. A longer
#: prompt goes into a private file the argv prompt points to (`call_participant`).
ARGV_PROMPT_MAX_BYTES = 96 * 1024
#: Exit codes reported when the CLI could not be started at all (as a shell reports them):
#: 127 not found, 126 found but not startable (permission, E2BIG, a NUL byte in an argument).
EXIT_NOT_FOUND = 127
EXIT_NOT_EXECUTABLE = 126

# -- command lines (C1) --------------------------------------------------------------------------

_PLACEHOLDER = re.compile(r"\{(binary|prompt|model)\}")
#: In `argv`, the item replaced by `model_args` when a model applies (else dropped).
MODEL_ARGS = "{model_args}"


def _str_tuple(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


@attrs.frozen
class CommandTemplate:
    """How to call one provider's CLI.

    `argv` items may hold `{binary}` and `{prompt}`; the item `{model_args}` stands where
    `model_args` go when the call names a model (`{model}` inside them), and disappears when it
    does not. `binary` is a command name looked up on PATH, or a path. An argv without
    `{prompt}` gives the prompt to the CLI on its standard input (`prompt_on_stdin`).
    """

    binary: str
    argv: tuple[str, ...] = attrs.field(converter=_str_tuple)
    model_args: tuple[str, ...] = attrs.field(converter=_str_tuple, default=())
    timeout_seconds: float = DEFAULT_CALL_TIMEOUT_SECONDS

    def __attrs_post_init__(self) -> None:
        if not self.binary.strip():
            raise ValueError("a command's binary must not be empty")
        if not self.argv:
            raise ValueError("a command's argv must not be empty")
        if any("{prompt}" in item for item in self.model_args):
            raise ValueError("{prompt} belongs in argv, not in model_args")
        if any("{model}" in item for item in self.argv):
            raise ValueError("{model} belongs in model_args, not in argv")
        if not math.isfinite(self.timeout_seconds) or self.timeout_seconds <= 0:
            raise ValueError("a command's timeout must be a positive, finite number of seconds")

    @property
    def prompt_on_stdin(self) -> bool:
        """True when no argv item holds `{prompt}`: the prompt goes to the CLI's stdin."""
        return not any("{prompt}" in item for item in self.argv)


DEFAULT_TEMPLATES: Mapping[str, CommandTemplate] = MappingProxyType(
    {
        # C1: `claude -p --output-format stream-json --verbose [--model <m>]`, the prompt on
        # stdin: with no prompt argument, `claude -p` reads it there (checked against real
        # claude 2.1 in tests/test_real_clis.py). No argv limit, and a prompt that begins with
        # `-` is never read as an option.
        "claude": CommandTemplate(
            binary="claude",
            argv=("{binary}", "-p", "--output-format", "stream-json", "--verbose", MODEL_ARGS),
            model_args=("--model", "{model}"),
        ),
        # C1: `codex exec [-m <m>]`, the prompt on stdin (`codex exec` reads its instructions
        # there when no prompt argument is given; checked against real codex 0.171). Plain
        # stdout is the final message.
        "codex": CommandTemplate(
            binary="codex",
            argv=("{binary}", "exec", MODEL_ARGS),
            model_args=("-m", "{model}"),
        ),
        # C1: `agy -p <prompt> [--model <m>]`, stdin from /dev/null: agy documents its prompt
        # only as the value of `-p`, and waits on an open stdin. A prompt too long for one
        # argument goes through a prompt file (`call_participant`).
        "agy": CommandTemplate(
            binary="agy",
            argv=("{binary}", "-p", "{prompt}", MODEL_ARGS),
            model_args=("--model", "{model}"),
        ),
    }
)


def _fill(item: str, values: Mapping[str, str]) -> str:
    # One pass, so a prompt that contains "{model}" is never substituted into.
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], item)


def build_argv(
    provider: str,
    prompt: str,
    model: str | None = None,
    templates: Mapping[str, CommandTemplate] = DEFAULT_TEMPLATES,
) -> tuple[str, ...]:
    """The argv of one call of `provider` (C1); `model` is the one the core chose (A13)."""
    if provider not in PROVIDERS:
        raise ValueError(f"unknown provider {provider!r} (known: {', '.join(PROVIDERS)})")
    template = templates[provider]
    # An argument cannot hold a NUL byte (the kernel ends it there; Popen refuses it): a post
    # that carried one reaches an argv prompt as U+FFFD instead.
    values = {"binary": template.binary, "prompt": prompt.replace("\x00", "\ufffd"),
              "model": model or ""}
    argv: list[str] = []
    for item in template.argv:
        if item == MODEL_ARGS:
            if model:
                argv.extend(_fill(arg, values) for arg in template.model_args)
            continue
        argv.append(_fill(item, values))
    return tuple(argv)


def argv_for(
    participant: Participant,
    entry: Engine,
    prompt: str,
    templates: Mapping[str, CommandTemplate] = DEFAULT_TEMPLATES,
) -> tuple[str, ...]:
    """The argv of `participant`'s call on `entry`: its pin on the primary only (A13)."""
    return build_argv(entry.provider, prompt, participant.model_for(entry), templates)


def prompt_on_stdin(
    provider: str, templates: Mapping[str, CommandTemplate] = DEFAULT_TEMPLATES
) -> bool:
    """True when `provider`'s CLI gets the prompt on stdin (its argv has no `{prompt}`)."""
    return templates[provider].prompt_on_stdin


def _strings(value: Any, field: str, source: str) -> tuple[str, ...]:
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{field} must be a list of strings", source=source)
    return tuple(value)


def templates_from_config(
    config: Mapping[str, Any] | None, *, source: str = "<config>", field: str = "commands"
) -> Mapping[str, CommandTemplate]:
    """The templates of a run: the defaults, overridden per provider by `config`.

    `config` maps a provider to either an argv list (`["codex", "exec", "{prompt}"]`, its first
    item the binary) or a mapping with any of `binary`, `argv`, `model_args`, `timeout`
    (seconds). Mistakes raise `ConfigError` naming `source` and the field.
    """
    merged = dict(DEFAULT_TEMPLATES)
    if not config:
        return MappingProxyType(merged)
    if not isinstance(config, Mapping):
        raise ConfigError(f"{field} must map a provider to its command", source=source)
    for provider, value in config.items():
        where = f"{field}.{provider}"
        if provider not in PROVIDERS:
            raise ConfigError(
                f"{where}: unknown provider {provider!r} (known: {', '.join(PROVIDERS)})",
                source=source,
            )
        base = DEFAULT_TEMPLATES[provider]
        try:
            if isinstance(value, list | tuple):
                argv = _strings(value, where, source)
                if not argv:
                    raise ConfigError(f"{where} must not be empty", source=source)
                merged[provider] = attrs.evolve(base, binary=argv[0], argv=("{binary}", *argv[1:]))
                continue
            if not isinstance(value, Mapping):
                raise ConfigError(f"{where} must be a list or a mapping", source=source)
            unknown = set(value) - {"binary", "argv", "model_args", "timeout"}
            if unknown:
                raise ConfigError(
                    f"{where}: unknown key {sorted(unknown)[0]!r} "
                    "(known: binary, argv, model_args, timeout)",
                    source=source,
                )
            changes: dict[str, Any] = {}
            if "binary" in value:
                if not isinstance(value["binary"], str):
                    raise ConfigError(f"{where}.binary must be a string", source=source)
                changes["binary"] = value["binary"]
            if "argv" in value:
                changes["argv"] = _strings(value["argv"], f"{where}.argv", source)
            if "model_args" in value:
                changes["model_args"] = _strings(value["model_args"], f"{where}.model_args", source)
            if "timeout" in value:
                timeout = value["timeout"]
                if (
                    isinstance(timeout, bool)
                    or not isinstance(timeout, int | float)
                    or not math.isfinite(timeout)
                    or timeout <= 0
                ):
                    raise ConfigError(
                        f"{where}.timeout must be a positive number of seconds, not {timeout!r}",
                        source=source,
                    )
                changes["timeout_seconds"] = float(timeout)
            merged[provider] = attrs.evolve(base, **changes)
        except ValueError as exc:
            if isinstance(exc, ConfigError):
                raise
            raise ConfigError(f"{where}: {exc}", source=source) from None
    return MappingProxyType(merged)


def resolve_binary(template: CommandTemplate, path: str | None = None) -> str | None:
    """The full path of the template's binary, or None when this machine does not have it."""
    return shutil.which(template.binary, path=path)


def installed_providers(
    templates: Mapping[str, CommandTemplate] = DEFAULT_TEMPLATES, *, path: str | None = None
) -> frozenset[str]:
    """The providers whose CLI is on PATH (or at its configured path) (A12)."""
    return frozenset(p for p in PROVIDERS if p in templates and resolve_binary(templates[p], path))


# -- running a call -------------------------------------------------------------------------------


@attrs.frozen
class CallResult:
    """What one call did.

    `stdout` is what the detectors and `extract_post` read. A stream of events: the structured
    events kept (whole, or a post event cut to `POST_MAX_BYTES`) that the tail no longer holds,
    then the stdout tail (at most `STDOUT_TAIL_BYTES`, starting at a line boundary when cut).
    Plain text: all of it, or its first `STDOUT_HEAD_BYTES`, the cut marker and its tail.
    `post_cut_bytes` says how many bytes of the answer the post left out.
    `stdout_bytes`/`stderr_bytes` count everything the CLI wrote.
    `exit_code` is the process's own (negative: killed by that signal; 127/126: could not start).
    `post` is set only when the call ended by itself with exit code 0 and its output carries one.
    """

    provider: str
    argv: tuple[str, ...]
    started_at: datetime
    ended_at: datetime
    exit_code: int
    stdout: str
    stderr: str
    stdout_bytes: int
    stderr_bytes: int
    timed_out: bool
    stopped_early: bool
    cancelled: bool
    classification: Classification
    post: str | None
    pid: int | None
    #: Why the sink stopped receiving output (it raised), or None.
    sink_error: str | None = None
    #: How many bytes of the answer the post left out (0: whole; see `POST_MAX_BYTES`).
    post_cut_bytes: int = 0

    @property
    def killed(self) -> bool:
        """The shell ended the call (timeout, early stop, cancel) rather than the CLI."""
        return self.timed_out or self.stopped_early or self.cancelled

    @property
    def stdout_dropped(self) -> bool:
        return self.stdout_bytes > STDOUT_TAIL_BYTES

    @property
    def stderr_dropped(self) -> bool:
        return self.stderr_bytes > STDERR_TAIL_BYTES


#: Receives every chunk the CLI writes, as it comes: ("stdout" | "stderr", bytes). Lanes use it.
Sink = Callable[[str, bytes], None]

_EVENT_HEAD = re.compile(
    rb'^\s*\{\s*"type"\s*:\s*"(result|rate_limit_event|item\.completed|turn\.failed'
    rb'|turn\.completed|error)"'
)
_AGENT_MESSAGE = re.compile(rb'"(?:item_)?type"\s*:\s*"(?:agent_message|assistant_message)"')
#: A line that opens like a structured event of a CLI: its stdout is a stream of events.
_STRUCTURED = re.compile(rb'^\s*\{\s*"(?:type|msg|method|error)"\s*:')
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
            kind.group(1) == b"result"
            or (kind.group(1) == b"item.completed" and _AGENT_MESSAGE.search(self.partial))
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
        if kind == b"result" or (kind == b"item.completed" and _AGENT_MESSAGE.search(line)):
            self.post = (offset, line, cut)
        elif kind != b"item.completed" and len(line) <= SMALL_EVENT_MAX_BYTES:
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


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _stop_group(proc: subprocess.Popen[bytes], grace: float) -> None:
    """SIGTERM to the whole group, then SIGKILL to whatever is left of it (C1)."""
    _signal_group(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace)
    # Grandchildren may outlive (or ignore) the TERM the leader obeyed: kill the group.
    _signal_group(proc.pid, signal.SIGKILL)
    proc.wait()


def _not_started(
    provider: str,
    argv: tuple[str, ...],
    clock: Clock,
    local_tz: tzinfo,
    code: int,
    why: str,
    sink: Sink | None,
) -> CallResult:
    """A call whose CLI could not be started: a failed call (A28), its reason on stderr and in
    the sink (the lane, C8)."""
    now = clock.now()
    stderr = f"{argv[0] if argv else provider}: {why}\n"
    if sink is not None:
        with contextlib.suppress(Exception):  # a lane that cannot be written fails nothing
            sink("stderr", stderr.encode("utf-8", errors="replace"))
    return CallResult(
        provider=provider, argv=argv, started_at=now, ended_at=now, exit_code=code, stdout="",
        stderr=stderr, stdout_bytes=0, stderr_bytes=len(stderr), timed_out=False,
        stopped_early=False, cancelled=False,
        classification=classify_output(
            provider, stderr=stderr, exit_code=code, now=now, local_tz=local_tz
        ),
        post=None, pid=None,
    )


def _why_not_started(exc: BaseException, args: tuple[str, ...]) -> tuple[int, str]:
    """The exit code and reason of a CLI that could not be started (127 not found, else 126)."""
    if isinstance(exc, OSError):
        where = exc.filename if exc.filename not in (None, "", args[0] if args else None) else None
        if exc.errno == errno.ENOENT and where is None:
            return EXIT_NOT_FOUND, "command not found"
        reason = exc.strerror or str(exc)
        if exc.errno == errno.E2BIG:
            total = sum(len(a.encode("utf-8", errors="replace")) + 1 for a in args)
            longest = max((len(a.encode("utf-8", errors="replace")) for a in args), default=0)
            reason += f" ({total} bytes of arguments, the longest {longest})"
        elif where is not None:
            reason += f" ({where})"
        code = EXIT_NOT_FOUND if exc.errno == errno.ENOENT else EXIT_NOT_EXECUTABLE
        return code, f"cannot start: {reason}"
    return EXIT_NOT_EXECUTABLE, f"cannot start: {exc}"


def run_call(
    argv: Sequence[str],
    *,
    provider: str,
    timeout: float = DEFAULT_CALL_TIMEOUT_SECONDS,
    clock: Clock | None = None,
    local_tz: tzinfo | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    sink: Sink | None = None,
    cancel: Interrupt = None,
    check_interval: float = CHECK_INTERVAL_SECONDS,
    kill_grace: float = KILL_GRACE_SECONDS,
    input: str | bytes | None = None,
    started: Callable[[int], None] | None = None,
) -> CallResult:
    """Run one CLI call to its end, its timeout, an early stop (A37) or `cancel`.

    The CLI runs in its own process group (C1) and, on Linux, dies with the calling process
    (`processes.die_with_parent`); `started` is told its pid (= its process group id) as soon
    as it runs, so the daemon can record it (issue 9.7).

    `timeout` is in real seconds. `clock` stamps the call and gives `now` to the detectors;
    `local_tz` is the machine's zone for clock times in notices (A3). `input` is written to the
    CLI's stdin (as the CLI reads it, while its output streams), which is then closed; without
    it stdin is /dev/null. Never raises for what the CLI does; a CLI that cannot be started at
    all (not found, not executable, arguments too long, a NUL byte in an argument or the
    environment) ends with exit code 127 (or 126) and its reason on stderr and in the sink.
    """
    if provider not in PROVIDERS:
        raise ValueError(f"unknown provider {provider!r} (known: {', '.join(PROVIDERS)})")
    clock = clock or SystemClock()
    local_tz = local_tz or local_zone()
    args = tuple(argv)
    feed = input.encode("utf-8", errors="replace") if isinstance(input, str) else input
    try:
        proc = subprocess.Popen(
            args,
            # C1: agy gets /dev/null (it waits on an open stdin); a prompt on stdin is closed
            # once written, so codex never waits for more.
            stdin=subprocess.DEVNULL if feed is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # C1: its own process group, killed as a whole
            env=dict(env) if env is not None else None,
            cwd=cwd,
            close_fds=True,
            # No CLI outlives a daemon killed with -9 (issue 9.7).
            preexec_fn=functools.partial(die_with_parent, os.getpid()),
        )
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        # ENOENT, EACCES, E2BIG, a NUL byte in argv or env…: the call failed, the run goes on.
        code, why = _why_not_started(exc, args)
        return _not_started(provider, args, clock, local_tz, code, why, sink)
    if started is not None:
        try:
            started(proc.pid)
        except BaseException:
            _stop_group(proc, kill_grace)
            raise
    started_at = clock.now()
    capture = _Capture(sink, provider)
    assert proc.stdout is not None and proc.stderr is not None
    selector = selectors.DefaultSelector()
    for stream, name in ((proc.stdout, "stdout"), (proc.stderr, "stderr")):
        os.set_blocking(stream.fileno(), False)
        selector.register(stream, selectors.EVENT_READ, name)
    pending = memoryview(feed or b"")
    if proc.stdin is not None:
        if pending:
            os.set_blocking(proc.stdin.fileno(), False)
            selector.register(proc.stdin, selectors.EVENT_WRITE, "stdin")
        else:
            proc.stdin.close()

    def close_stdin() -> None:
        if proc.stdin is not None and not proc.stdin.closed:
            with contextlib.suppress(KeyError):
                selector.unregister(proc.stdin)
            with contextlib.suppress(OSError):
                proc.stdin.close()

    deadline = time.monotonic() + timeout
    next_check = time.monotonic() + check_interval
    next_cancel_check = 0.0
    timed_out = stopped_early = cancelled = False
    early: Classification | None = None
    exited_at: float | None = None

    def read_ready(wait: float) -> None:
        nonlocal pending
        for key, _ in selector.select(timeout=max(wait, 0.0)):
            if key.data == "stdin":
                try:
                    written = os.write(key.fd, pending[:_READ_CHUNK])
                except BlockingIOError:
                    continue
                except OSError:  # the CLI closed its stdin (or exited): it reads no more
                    close_stdin()
                    continue
                pending = pending[written:]
                if not pending:
                    close_stdin()
                continue
            try:
                chunk = os.read(key.fd, _READ_CHUNK)
            except BlockingIOError:
                continue
            if chunk:
                capture.feed(str(key.data), chunk)
            else:
                selector.unregister(key.fileobj)

    try:
        while selector.get_map():
            now_mono = time.monotonic()
            read_ready(min(check_interval, max(deadline - now_mono, 0.0), 0.25))
            now_mono = time.monotonic()
            if proc.poll() is not None:
                # The CLI exited; its pipes may still be held by a child it left behind.
                exited_at = exited_at if exited_at is not None else now_mono
                if now_mono - exited_at > DRAIN_SECONDS:
                    _signal_group(proc.pid, signal.SIGKILL)
                    break
                continue
            if cancel is not None and now_mono >= next_cancel_check:
                # A callable cancel may query a store: ask it a few times a second, not per chunk.
                next_cancel_check = now_mono + CANCEL_POLL_SECONDS
                if is_set(cancel):
                    cancelled = True
                    break
            if now_mono >= deadline:
                timed_out = True
                break
            if capture.changed and now_mono >= next_check:
                next_check = now_mono + check_interval
                capture.changed = False
                seen = classify_output(
                    provider,
                    stdout=capture.stdout_text(),
                    stderr=capture.stderr_text(),
                    exit_code=None,
                    now=clock.now(),
                    local_tz=local_tz,
                )
                if seen.kind == "network":  # A37: it would retry without end
                    stopped_early, early = True, seen
                    break
        # Both pipes closed but the CLI runs on: wait for it, still bounded by timeout and cancel.
        while not (timed_out or stopped_early or cancelled) and proc.poll() is None:
            if time.monotonic() >= deadline:
                timed_out = True
            elif is_set(cancel):
                cancelled = True
            else:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=CANCEL_POLL_SECONDS)
        if proc.poll() is None:
            _stop_group(proc, kill_grace)
        # Whatever the group wrote before it died.
        drain_until = time.monotonic() + DRAIN_SECONDS
        while selector.get_map() and time.monotonic() < drain_until:
            read_ready(0.05)
    finally:
        close_stdin()
        selector.close()
        proc.stdout.close()
        proc.stderr.close()
        if proc.poll() is None:  # only on an unexpected error above
            _stop_group(proc, kill_grace)
    exit_code = proc.wait()
    capture.finish()
    ended_at = clock.now()
    stdout, stderr = capture.stdout_text(), capture.stderr_text()
    killed = timed_out or stopped_early or cancelled
    classification = early or classify_output(
        provider,
        stdout=stdout,
        stderr=stderr,
        exit_code=None if killed else exit_code,
        now=ended_at,
        local_tz=local_tz,
    )
    post = extract_post(provider, stdout) if not killed and exit_code == 0 else None
    post_cut_bytes = capture.post_cut_bytes() if post is not None else 0
    return CallResult(
        provider=provider, argv=args, started_at=started_at, ended_at=ended_at,
        exit_code=exit_code, stdout=stdout, stderr=stderr, stdout_bytes=capture.out.total,
        stderr_bytes=capture.err.total, timed_out=timed_out, stopped_early=stopped_early,
        cancelled=cancelled, classification=classification, post=post, pid=proc.pid,
        sink_error=capture.sink_error, post_cut_bytes=post_cut_bytes,
    )


def call_participant(
    participant: Participant,
    entry: Engine,
    prompt: str,
    *,
    templates: Mapping[str, CommandTemplate] = DEFAULT_TEMPLATES,
    prompt_dir: str | os.PathLike[str] | None = None,
    **kwargs: Any,
) -> CallResult:
    """Run `participant`'s call on `entry` with its template's timeout (keyword arguments go to
    `run_call`).

    The prompt goes where the template puts it: on stdin when its argv has no `{prompt}`, else
    in argv — unless it is longer than `ARGV_PROMPT_MAX_BYTES`, when it is written to a private
    file (mode 0600, in `prompt_dir`, default the system's temporary directory) for the call's
    length, and the argv prompt is one line asking the CLI to read that file.
    """
    template = templates[entry.provider]
    kwargs.setdefault("timeout", template.timeout_seconds)
    if template.prompt_on_stdin:
        argv = argv_for(participant, entry, prompt, templates)
        return run_call(argv, provider=entry.provider, input=prompt, **kwargs)
    if len(prompt.encode("utf-8", errors="replace")) <= ARGV_PROMPT_MAX_BYTES:
        argv = argv_for(participant, entry, prompt, templates)
        return run_call(argv, provider=entry.provider, **kwargs)
    handle, path = tempfile.mkstemp(
        prefix=f"prompt-{participant.id}-", suffix=".md",
        dir=os.fspath(prompt_dir) if prompt_dir is not None else None,
    )
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(prompt.encode("utf-8", errors="replace"))
        pointer = (
            f"Your instructions for this turn are too long for a command line, so they are in "
            f"the file {path}. Read that whole file now and follow it exactly."
        )
        argv = argv_for(participant, entry, pointer, templates)
        return run_call(argv, provider=entry.provider, **kwargs)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
