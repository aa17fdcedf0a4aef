"""Where the daemon's log lines go (SPEC C7): the core's lines with their structured fields,
status changes, controls taken and the shell's own notes, written to stderr and the run's log
file, as text or (`--json`) one JSON object per line.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from contextlib import suppress
from datetime import datetime, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TextIO

from autodev_core.scheduler.effects import LOG_FIELDS, log_fields

from ..private import open_private

if TYPE_CHECKING:
    from autodev_core.scheduler import Log


class LogSink(Protocol):
    """Where log lines go: the core's lines (`line`, or `entry` with their structured fields),
    status changes (`status`), controls taken (`control`) and the shell's own notes (`note`)."""

    def line(self, at: datetime, message: str) -> None: ...

    def entry(self, log: Log) -> None: ...

    def status(self, at: datetime, status: str) -> None: ...

    def control(self, at: datetime, command: str) -> None: ...

    def note(self, at: datetime, message: str) -> None: ...



class StreamLog:
    """Log lines to a stream (stderr) and a log file; JSON lines with `json_lines` (C7)."""

    def __init__(
        self,
        zone: tzinfo,
        *,
        stream: TextIO | None = None,
        file: Path | None = None,
        json_lines: bool = False,
    ) -> None:
        self.zone = zone
        self.stream = stream
        self.json_lines = json_lines
        self._file = (
            os.fdopen(open_private(file, os.O_WRONLY | os.O_APPEND), "a", encoding="utf-8")
            if file is not None
            else None
        )
        self.lines: list[tuple[datetime, str]] = []
        #: The last write to the log file failed (a full disk, say).
        self.file_failed = False

    def _stamp(self, at: datetime) -> str:
        return at.astimezone(self.zone).strftime("%Y-%m-%dT%H:%M:%S")

    def _write(
        self, at: datetime, message: str, kind: str, fields: Mapping[str, object] | None = None
    ) -> None:
        text = f"{self._stamp(at)} {message}"
        if self.json_lines:
            record: dict[str, object] = {
                "at": at.isoformat(), "local": self._stamp(at), "kind": kind, "message": message,
            }
            if fields:
                record.update(fields)
            text = json.dumps(record, ensure_ascii=False)
        elif kind in ("status", "control"):
            return  # the human log holds the SPEC's lines; these are for programs (C7)
        if self.stream is not None:
            self.stream.write(text + "\n")
            self.stream.flush()
        if self._file is not None:
            try:
                self._file.write(text + "\n")
                self._file.flush()
            except OSError as exc:  # a full disk never stops the daemon; stderr still has it
                if not self.file_failed and self.stream is not None:
                    self.stream.write(f"{self._stamp(at)} the log file cannot be written "
                                      f"({exc}); lines go to stderr only until it can\n")
                    self.stream.flush()
                self.file_failed = True
            else:
                self.file_failed = False

    def line(self, at: datetime, message: str) -> None:
        self.lines.append((at, message))
        self._write(at, message, "log")

    def entry(self, log: Log) -> None:
        """A core line with its structured fields (C7: `event` is the `Log.kind`)."""
        self.lines.append((log.at, log.message))
        record = log_fields(log)
        fields: dict[str, object] = {"event": record.pop("kind")}
        fields.update((name, value) for name, value in record.items()
                      if name not in ("at", "message"))
        self._write(log.at, log.message, "log", fields)

    def status(self, at: datetime, status: str) -> None:
        self._write(at, f"status: {status}", "status", {"status": status})

    def control(self, at: datetime, command: str) -> None:
        self._write(at, f"{command} requested", "control", {"control": command})

    def note(self, at: datetime, message: str) -> None:
        self._write(at, message, "note")

    def close(self) -> None:
        if self._file is not None:
            with suppress(OSError):  # lines the disk never took are on stderr already
                self._file.close()
            self._file = None

__all__ = ["LOG_FIELDS", "LogSink", "StreamLog"]
