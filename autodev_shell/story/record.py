"""The run's structured lines kept for its story (docs/timeline.md): `autodev.log.jsonl`.

`autodev.log` holds the SPEC's lines for people (or JSON with `--json`); this file always holds
the same lines as data, one JSON object each (C7's fields: `at`, `kind`, `event`, `message` and
the line's structured fields), with the status changes, controls and notes, whatever `--json`
says, so `autodev timeline` and the panel can draw any run.
"""

from __future__ import annotations

import json
import os
from contextlib import suppress
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TextIO

from ..private import open_private

if TYPE_CHECKING:
    from autodev_core.scheduler import Log

#: Beside `autodev.log` (named after it, so `make_private` keeps it 0600).
EVENTS_FILE: Final = "autodev.log.jsonl"


class EventsFile:
    """Appends each line the daemon logs, as data, to the run's events file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: TextIO | None = None
        try:
            self._file = os.fdopen(open_private(path, os.O_WRONLY | os.O_APPEND), "a",
                                   encoding="utf-8")
        except OSError:  # a folder the daemon cannot add a file to: the run goes on, untold
            self._file = None

    def _write(self, record: dict[str, Any]) -> None:
        if self._file is None:
            return
        with suppress(OSError):  # a full disk: autodev.log says so; the story has a gap
            self._file.write(json.dumps(record, ensure_ascii=False) + "\n")
            self._file.flush()

    def entry(self, log: Log) -> None:
        from autodev_core.scheduler.effects import log_fields

        record: dict[str, Any] = dict(log_fields(log))
        record["event"] = record.pop("kind")
        record["kind"] = "log"
        self._write(record)

    def status(self, at: datetime, status: str) -> None:
        self._write({"at": at.isoformat(), "kind": "status", "status": status,
                     "message": f"status: {status}"})

    def control(self, at: datetime, command: str) -> None:
        self._write({"at": at.isoformat(), "kind": "control", "control": command,
                     "message": f"{command} requested"})

    def note(self, at: datetime, message: str) -> None:
        self._write({"at": at.isoformat(), "kind": "note", "message": message})

    def close(self) -> None:
        if self._file is not None:
            with suppress(OSError):
                self._file.close()
            self._file = None


def read_events(path: Path) -> list[dict[str, Any]]:
    """The records of an events file (or of an `autodev.log` written with `--json`), skipping
    lines that are not JSON objects (a line cut by a crash, a human log line)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    records = []
    for line in text.splitlines():
        if not line.startswith("{"):
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("at"), str):
            records.append(record)
    return records
