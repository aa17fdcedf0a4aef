"""The shadow copy: its format, and the file as one run's daemon keeps it (SPEC C3, B5, B6, B9).

The file (`<db>.shadow.json`, `ShadowCopy`) holds the revisions the canonical store could not
commit, so nothing is lost while it is down; it is a recovery-only tier (B5-B6) and never
confirms anything. It is written whole atomically (`files.py`) and bounded (`compact_shadow`).

`Durability` (durability/writes.py) writes `run.db.shadow.json` when a canonical commit
fails, and clears it once the store holds everything. `ShadowFile` is what it remembers about
that file between writes: the revision it last holds, the other runs' revisions it keeps (never
applied here, B9), what its byte cap left out, and whether it still holds every revision
pending — only then does it count as a recovery copy for the turn gate (B9).

This module decides nothing: the state the shadow tier reports is reduced by the core.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Final

import attrs

from autodev_core.control.persistence import RecoveryCopy
from autodev_core.serialization import to_json

from ..store.thread import NewPost
from .files import FILE_VERSION, atomic_write_text, format_check, fsync_dir, read_file
from .paths import SHADOW_FORMAT, SHADOW_TIER


@attrs.frozen
class PendingRevision:
    """A revision the canonical store has not committed yet: what the commit would write."""

    revision: int
    run_id: str
    posts: tuple[NewPost, ...]
    scheduler_state_json: str
    queued_at: datetime


@attrs.frozen
class ShadowCopy:
    """Everything that could not be committed, oldest revision first: the active run's
    revisions and those kept for other runs (never applied to the active one, B9).

    `dropped` names what the byte cap left out (`run 'r' revision 7 (2 posts)`), oldest first,
    accumulated across rewrites so the file says what it no longer holds.
    """

    written_at: datetime
    pending: tuple[PendingRevision, ...]
    error: str = ""
    format: str = attrs.field(default=SHADOW_FORMAT, validator=format_check(SHADOW_FORMAT))
    version: int = FILE_VERSION
    dropped: tuple[str, ...] = ()

    @property
    def revision(self) -> int:
        """The newest revision the shadow holds (0 when empty)."""
        return max((p.revision for p in self.pending), default=0)


#: Default cap on the shadow file's size: the newest revisions that fit are kept (C3).
SHADOW_MAX_BYTES: Final = 8 * 1024 * 1024
#: How many names of dropped revisions the file keeps (the newest ones).
DROPPED_NAMES_KEPT: Final = 50


def describe_pending(entry: PendingRevision) -> str:
    return f"run {entry.run_id!r} revision {entry.revision} ({len(entry.posts)} posts)"


def compact_shadow(
    entries: tuple[PendingRevision, ...], *, active_run: str, written_at: datetime,
    max_bytes: int = SHADOW_MAX_BYTES, error: str = "", dropped: tuple[str, ...] = (),
) -> tuple[ShadowCopy, tuple[str, ...]]:
    """The shadow copy of `entries`, bounded (C3).

    A revision's scheduler state is superseded by the next revision of the same run, so only
    the newest state of each run is kept (older ones are written empty and replayed with the
    newest; posts are all kept): the file grows with posts, not with revisions. When it is
    still over `max_bytes`, whole revisions are dropped, other runs' first and then the oldest
    ones, until it fits; the newest revision of each run is never dropped, and each dropped
    one is named in `dropped` (after the names already there, each once; the file keeps the
    newest `DROPPED_NAMES_KEPT`). Returns the copy and every name dropped so far.
    """
    newest: dict[str, int] = {}
    for entry in entries:
        newest[entry.run_id] = max(newest.get(entry.run_id, 0), entry.revision)
    kept = [
        entry if entry.revision == newest[entry.run_id]
        else attrs.evolve(entry, scheduler_state_json="")
        for entry in entries
    ]
    names = list(dropped)
    known = set(names)

    def copy() -> ShadowCopy:
        return ShadowCopy(written_at, tuple(kept), error,
                          dropped=tuple(names[-DROPPED_NAMES_KEPT:]))

    while len(to_json(copy()).encode("utf-8")) > max_bytes:
        droppable = [e for e in kept if e.revision != newest[e.run_id]]
        if not droppable:
            break
        others = [e for e in droppable if e.run_id != active_run]
        victim = (others or droppable)[0]
        kept.remove(victim)
        name = describe_pending(victim)
        if name not in known:
            known.add(name)
            names.append(name)
    return copy(), tuple(names)


def write_shadow(path: Path, shadow: ShadowCopy) -> None:
    """Write the shadow copy atomically. Raises OSError when even that fails."""
    atomic_write_text(path, to_json(shadow))


def read_shadow(path: Path) -> ShadowCopy | None:
    result: ShadowCopy | None = read_file(path, ShadowCopy, "shadow")
    return result


def remove_shadow(path: Path) -> bool:
    """Delete the shadow copy once the canonical store holds all of it; True if it existed."""
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    fsync_dir(path.parent)
    return True



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
