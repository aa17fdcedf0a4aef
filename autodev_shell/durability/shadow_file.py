"""The shadow file as one run's daemon keeps it (SPEC C3, B5, B6, B9).

`Durability` (durability/writes.py) writes `run.db.shadow.json` when a canonical commit
fails, and clears it once the store holds everything. `ShadowFile` is what it remembers about
that file between writes: the revision it last holds, the other runs' revisions it keeps (never
applied here, B9), what its byte cap left out, and whether it still holds every revision
pending — only then does it count as a recovery copy for the turn gate (B9). The file's content
(`checkpoint.ShadowCopy`) is read and written by autodev_shell/durability/checkpoint.py.

This module decides nothing: the state the shadow tier reports is reduced by the core.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from autodev_core.control.persistence import RecoveryCopy

from .checkpoint import PendingRevision, compact_shadow, remove_shadow, write_shadow
from .on_disk import SHADOW_TIER


class ShadowFile:
    """The shadow file of one run and what the daemon knows of it (see module doc)."""

    def __init__(self, file: Path, *, max_bytes: int, foreign: Sequence[PendingRevision] = (),
                 dropped: Sequence[str] = ()) -> None:
        self.file = file
        self.max_bytes = max_bytes
        #: The newest revision the file holds for the active run; 0 when it holds none.
        self.revision = 0
        #: Shadow revisions of other runs: kept in the file, never applied here (B9).
        self.foreign: tuple[PendingRevision, ...] = tuple(foreign)
        self.dropped: tuple[str, ...] = tuple(dropped)
        #: True when the byte cap dropped a revision of the active run from the shadow copy:
        #: the copy no longer holds everything pending, so it lets no turn start (B9).
        self.incomplete = False

    def recovery(self, pending: Sequence[PendingRevision]) -> RecoveryCopy | None:
        """The copy as the turn gate's recovery fact (B9), while it holds all of `pending`."""
        if self.revision > 0 and pending and not self.incomplete:
            return RecoveryCopy(pending[-1].run_id, self.revision, SHADOW_TIER)
        return None

    def write(self, pending: Sequence[PendingRevision], *, now: datetime,
              error: str) -> tuple[str, ...]:
        """Write every revision still `pending` (with the other runs' kept ones), bounded by
        the byte cap; returns what the cap newly left out. Raises `OSError` when the file
        cannot be written (the copy then holds nothing of this run)."""
        newest = pending[-1]
        entries = (*self.foreign, *pending)
        copy, dropped = compact_shadow(
            entries, active_run=newest.run_id, written_at=now,
            max_bytes=self.max_bytes, error=error, dropped=self.dropped,
        )
        held = {(p.run_id, p.revision) for p in copy.pending}
        newly_dropped = dropped[len(self.dropped):]
        try:
            write_shadow(self.file, copy)
        except OSError:
            self.revision = 0
            raise
        self.dropped = dropped
        self.foreign = tuple(p for p in self.foreign if (p.run_id, p.revision) in held)
        # The copy counts as a recovery copy only while it holds every pending revision (B9).
        self.incomplete = any((p.run_id, p.revision) not in held for p in pending)
        self.revision = newest.revision
        return newly_dropped

    def clear(self, *, active_run: str, now: datetime) -> str:
        """The store holds everything of this run: remove the file, or keep in it only the
        other runs' revisions (B9), bounded. Returns the error when it could not be written
        ("" otherwise); a stale shadow is harmless, `Durability.open` skips it."""
        self.revision = 0
        self.incomplete = False
        try:
            if self.foreign:  # Other runs' revisions stay in the file (B9), bounded.
                kept, self.dropped = compact_shadow(
                    self.foreign, active_run=active_run, written_at=now,
                    max_bytes=self.max_bytes, error="kept for another run",
                    dropped=self.dropped)
                write_shadow(self.file, kept)
            else:
                remove_shadow(self.file)
        except OSError as exc:
            return str(exc)
        return ""
