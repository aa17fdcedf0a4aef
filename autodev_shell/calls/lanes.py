"""Lanes: the raw output of each participant's CLI calls, bounded and rotated (SPEC C8).

A lane is where a CLI's own words stay visible — an unauthenticated codex's error, say (A32) —
even when the core read the call as a plain failure. `autodev lane <id>` prints it.

One lane per participant: `<dir>/<id>.log`, rotated to `<id>.log.1`, `<id>.log.2` when it would
pass `LANE_MAX_BYTES`, so a lane never holds more than `LANE_FILES × LANE_MAX_BYTES` on disk.
Every byte the CLI writes goes in as it comes (`Lanes.sink` is `run_call`'s sink), between a
header line naming the call and a footer line with how it ended.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from autodev_core.errors import AutodevError

from ..private import open_private, private_dir
from .capture import Sink
from .run import CallResult

#: C8: one lane file's size before it rotates, and how many files a lane keeps.
LANE_MAX_BYTES = 1024 * 1024
LANE_FILES = 3
#: Arguments longer than this (the prompt) are shown by their length in a call's header line.
_ARG_SHOWN_CHARS = 120
_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")  # participant ids (C5): no path parts


class NoLaneError(AutodevError):
    """`autodev lane <id>` for a participant that has no lane (yet)."""


def _check_id(participant_id: str) -> str:
    if not isinstance(participant_id, str) or not _ID_RE.match(participant_id):
        raise ValueError(f"malformed participant id {participant_id!r}")
    return participant_id


#: Names of arguments and env entries whose values are secrets (matched in upper case, anywhere
#: in the name: `OPENAI_API_KEY`, `--auth-token`, `model_providers.x.http_headers.Authorization`).
SECRET_NAME_WORDS: Final = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE",
                            "AUTH", "CREDENTIAL", "COOKIE", "BEARER")
#: Values that look like keys or tokens whatever their name: `sk-…` (OpenAI, Anthropic), GitHub
#: `ghp_…`/`github_pat_…`, Slack `xox?-…`, AWS `AKIA…`, Google `AIza…`, JWTs, `Bearer …`.
_SECRET_VALUE = re.compile(
    r"(?:sk-[A-Za-z0-9_\-]{8,}|gh[pousr]_[A-Za-z0-9]{16,}|github_pat_[A-Za-z0-9_]{16,}"
    r"|xox[abposr]-[A-Za-z0-9\-]{8,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_\-]{20,}"
    r"|eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*"
    r"|(?<=Bearer )[A-Za-z0-9._\-+/=]{8,})"
)
REDACTED: Final = "***"


def _secret_name(name: str) -> bool:
    upper = name.upper()
    return any(word in upper for word in SECRET_NAME_WORDS)


def redact_argv(argv: Sequence[str]) -> list[str]:
    """`argv` as a lane may show it: the value of an `NAME=value` item or of an option named
    like a secret (`--api-key X`, `--token=X`) is `***`, and so is any value that looks like a
    key or token (`sk-…`)."""
    shown: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next and not arg.startswith("-"):
            shown.append(REDACTED)
            hide_next = False
            continue
        hide_next = False
        name, eq, _value = arg.partition("=")
        if eq and name and _secret_name(name.lstrip("-")) and " " not in name:
            shown.append(f"{name}={REDACTED}")
            continue
        if arg.startswith("-") and not eq and _secret_name(arg.lstrip("-")):
            shown.append(arg)  # `--api-key X`: X is the secret (a following option is not)
            hide_next = True
            continue
        shown.append(_SECRET_VALUE.sub(REDACTED, arg))
    return shown


#: `NAME=value` in free text where NAME is named like a secret (`OPENAI_API_KEY=…`).
_SECRET_ASSIGNMENT = re.compile(
    r"\b([A-Za-z0-9_.\-]*(?:" + "|".join(SECRET_NAME_WORDS) + r")[A-Za-z0-9_.\-]*)=([^\s\"',;]+)",
    re.IGNORECASE,
)


def secret_spans(text: str) -> list[tuple[int, int]]:
    """Where `text` (a line of a lane, docs/panel.md) holds a secret as `redact_argv` would hide it:
    a value that looks like a key or token, or the value of a `NAME=value` named like a secret.
    Sorted, not overlapping; each span is replaced by `REDACTED` when shown."""
    spans = [m.span() for m in _SECRET_VALUE.finditer(text)]
    spans += [m.span(2) for m in _SECRET_ASSIGNMENT.finditer(text)]
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _shown(argv: Sequence[str]) -> str:
    parts = []
    for arg in redact_argv(argv):
        if len(arg) > _ARG_SHOWN_CHARS or "\n" in arg:
            parts.append(f"<{len(arg)} chars>")
        else:
            parts.append(arg)
    return " ".join(parts)


def _reading(result: CallResult) -> str:
    """What a limit was read as, for the footer (docs/shell.md): two limited calls differ by
    the reset each notice gave, in UTC to the minute, or say the notice named none (A6)."""
    limit = result.classification.limit
    if result.classification.kind != "limit" or limit is None:
        return ""
    if limit.reset_at is None:
        return " (the notice named no reset: the default wait, A6)"
    return f" until {limit.reset_at.astimezone(UTC):%Y-%m-%d %H:%M} UTC (from the notice)"


def _files(directory: Path, participant_id: str, count: int) -> list[Path]:
    """The lane's files, newest first: `<id>.log`, `<id>.log.1`, …"""
    base = directory / f"{participant_id}.log"
    return [base] + [directory / f"{participant_id}.log.{i}" for i in range(1, count)]


class Lanes:
    """The lanes of one run, in `directory`."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        max_bytes: int = LANE_MAX_BYTES,
        files: int = LANE_FILES,
    ) -> None:
        if max_bytes <= 0 or files < 1:
            raise ValueError("a lane needs a positive size and at least one file")
        self.directory = Path(directory)
        self.max_bytes = max_bytes
        self.files = files
        self._lock = threading.Lock()
        #: Why the last append failed (a full disk), or "" when it worked.
        self.write_error = ""

    def path(self, participant_id: str) -> Path:
        """The lane's current file."""
        return self.directory / f"{_check_id(participant_id)}.log"

    def _rotate(self, participant_id: str) -> None:
        paths = _files(self.directory, participant_id, self.files)
        paths[-1].unlink(missing_ok=True)
        for newer, older in zip(reversed(paths[:-1]), reversed(paths[1:]), strict=True):
            if newer.exists():
                newer.replace(older)

    def append(self, participant_id: str, data: bytes | str) -> None:
        """Append raw output to the lane, rotating first when it would pass `max_bytes`."""
        chunk = data.encode("utf-8", errors="replace") if isinstance(data, str) else bytes(data)
        if not chunk:
            return
        if len(chunk) > self.max_bytes:
            chunk = chunk[-self.max_bytes :]  # one huge write keeps its tail
        path = self.path(participant_id)
        with self._lock:
            try:
                private_dir(self.directory)
                try:
                    size = path.stat().st_size
                except FileNotFoundError:
                    size = 0
                if size and size + len(chunk) > self.max_bytes:
                    self._rotate(participant_id)
                with os.fdopen(open_private(path, os.O_WRONLY | os.O_APPEND), "ab") as handle:
                    handle.write(chunk)
            except OSError as exc:
                # A lane is a view of the CLI's output, never a reason to stop a call or the
                # daemon (a full disk): what it could not take is lost from the lane only.
                self.write_error = str(exc)
            else:
                self.write_error = ""

    def sink(self, participant_id: str) -> Sink:
        """A `run_call` sink that appends every chunk the CLI writes to this lane."""
        _check_id(participant_id)

        def write(_stream: str, chunk: bytes) -> None:
            self.append(participant_id, chunk)

        return write

    def begin_call(
        self,
        participant_id: str,
        *,
        engine: str,
        argv: Sequence[str],
        at: datetime,
        stdin_chars: int | None = None,
    ) -> None:
        """The call's header line; `stdin_chars`: the prompt went on stdin, this long."""
        fed = f" <{stdin_chars} chars on stdin>" if stdin_chars is not None else ""
        self.append(
            participant_id,
            f"\n=== {at.isoformat(timespec='seconds')} {participant_id} on {engine}: "
            f"{_shown(argv)}{fed}\n",
        )

    def end_call(self, participant_id: str, result: CallResult) -> None:
        how = f"exit {result.exit_code}"
        if result.timed_out:
            how = "timed out; process group killed"
        elif result.stopped_early:
            how = f"stopped early: {result.classification.kind} ({result.classification.text})"
        elif result.cancelled:
            how = "cancelled"
        posted = ""
        if result.post is not None:
            posted = "; posted"
            if result.post_cut_bytes:  # C8: a long answer was cut to one post's bound
                posted += f", cut by {result.post_cut_bytes} bytes"
        self.append(
            participant_id,
            f"\n=== {result.ended_at.isoformat(timespec='seconds')} {how}; "
            f"read as {result.classification.kind}{_reading(result)}{posted}\n",
        )

    def read(self, participant_id: str) -> str:
        return read_lane(self.directory, participant_id, files=self.files)


def read_lane(
    directory: str | os.PathLike[str], participant_id: str, *, files: int = LANE_FILES
) -> str:
    """The whole lane, oldest output first (for `autodev lane <id>`)."""
    paths = _files(Path(directory), _check_id(participant_id), files)
    chunks = [p.read_bytes() for p in reversed(paths) if p.exists()]
    if not chunks:
        raise NoLaneError(f"no lane for {participant_id!r} in {directory}: it has made no call yet")
    return b"".join(chunks).decode("utf-8", errors="replace")
