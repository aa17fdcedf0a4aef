"""`autodev status` read straight from the run's SQLite file, without opening a `RunStore`
(C6, docs/performance.md).

Opening a `RunStore` loads attrs (the store's records are attrs classes) and the persistence
line loads the core's planner (attrs classes too): together more than a bare interpreter's
start, for a command that shows a dozen values. `read_status` reads those values with sqlite3
and json alone, in one read transaction, and checks the file as `RunStore.open(check=False)`
does (header, tables, run record, layout version).

It answers only for what a run normally holds: a store the daemon wrote, its scheduler state
as the serializer writes it (`stored_status.read_stored_status`), no shadow copy on disk, and a
persistence state either settled or left "queued" by the last commit and covered by that
commit's own marker (see `_persistence_line`). Anything else (an error, a damaged or older
field, a shadow copy, a write of another run or not covered) returns None and the command
takes the full path (`report._status` over a `RunStore`, the core's planner), which decides
what to show or which error to print. One error it says itself: a store another process held
locked past the busy timeout (`StoreError` kind "busy"), which the full path would wait for as
long again. tests/shell/test_status_read.py holds the two paths to
the same output and exit code on stored states the real code writes, the odd ones included.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Any, Final, NamedTuple

from autodev_core.names import PERSISTENCE_FIELDS

from ..durability.paths import SHADOW_SUFFIX
from ..store.layout import LAYOUT
from ..store.sql import _TABLES, BUSY_TIMEOUT_MS, busy_error, is_busy
from .stored import StoredStatus, read_stored_status

#: The store's own tier (`store.CANONICAL_TIER`), which the default tier table holds canonical
#: (B5); restated for the same reason and held equal by the tests.
STORE_TIER: Final = "sqlite"
#: `PersistenceState`'s fields as the serializer writes them, each with its JSON type (the
#: core's dependency-free `names`).
_PERSISTENCE_FIELDS: Final = PERSISTENCE_FIELDS


class StatusReading(NamedTuple):
    """What `autodev status` reads of a run's store (the lock, the heartbeat's stand-in and the
    sharing file are read beside it, `report._facts`)."""

    run_id: str
    store: str
    state: StoredStatus | None
    readable: bool
    beat_at: datetime | None
    beat_pid: int | None
    revision: int
    persistence: str
    posts: int


class _Unusual(Exception):
    """Something the fast reader does not vouch for: the full path reads the store."""


def read_status(db: Path, *, read_only: bool = False) -> StatusReading | None:
    """The values `autodev status` shows of the store at `db`, or None when anything is not as
    a run normally holds it (the caller then opens a `RunStore` and asks the core).
    `read_only`: through a `mode=ro` connection (the panel, docs/panel.md)."""
    try:
        return _read(db, read_only)
    except sqlite3.Error as exc:
        if is_busy(exc):  # the full path would wait as long again for the same lock
            raise busy_error(db, exc) from None
        return None  # the full path meets it too and decides
    except Exception:  # whatever it is, the full path meets it too and decides
        return None


def _read(db: Path, read_only: bool = False) -> StatusReading:
    # A missing or empty file: the full path says so (a foreign one fails SQLite's first
    # statement below). Never opened here but by SQLite: closing any other descriptor of the
    # file would drop the process's SQLite locks on it (see `RunStore.open`).
    if db.stat().st_size == 0:
        raise _Unusual("an empty file")
    try:  # as `on_disk._read_shadow` looks: anything but "no such file" is for the full path
        db.with_name(db.name + SHADOW_SUFFIX).stat()
    except FileNotFoundError:
        pass
    else:
        raise _Unusual("a shadow copy to read")
    if read_only:
        from urllib.parse import quote

        conn = sqlite3.connect(f"file:{quote(str(db))}?mode=ro", uri=True, isolation_level=None,
                               timeout=BUSY_TIMEOUT_MS / 1000)
    else:
        conn = sqlite3.connect(str(db), isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
    try:
        mode = conn.execute("PRAGMA journal_mode").fetchone()
        if mode is None or str(mode[0]).lower() != "wal":
            raise _Unusual("not in WAL mode")  # the full path switches it
        conn.execute("BEGIN")
        try:
            return _rows(conn, db)
        finally:
            conn.execute("COMMIT")
    finally:
        conn.close()


def _rows(conn: sqlite3.Connection, db: Path) -> StatusReading:
    names = {r[0] for r in conn.execute(  # commit_marker is a view from layout 2 on
        "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
    if not names.issuperset(_TABLES):
        raise _Unusual("a table is missing")
    run = conn.execute("SELECT run_id, integrity_id, schema_version FROM run WHERE id = 1"
                       ).fetchone()
    state = conn.execute("SELECT revision, scheduler_json, persistence_json FROM run_state "
                         "WHERE id = 1").fetchone()
    if run is None or state is None or _of(run[2], int) > LAYOUT:
        raise _Unusual("no run record, or a newer layout")
    for (alias,) in conn.execute("SELECT alias FROM aliases"):
        _of(alias, str)  # checked as the identity reads them; equal ids need no alias
    marker = conn.execute("SELECT run_id, revision, tier, at FROM commit_marker WHERE id = 1"
                          ).fetchone()
    beat = conn.execute("SELECT at, pid FROM heartbeat WHERE id = 1").fetchone()
    posts = _of(conn.execute("SELECT COUNT(*) FROM posts").fetchone()[0], int)
    text = _of(state[1], str)
    stored = None if not text or text == "{}" else read_stored_status(text)
    if marker is not None:  # read as the store reads it, or left to the full path's error
        for value, kind in zip(marker, (str, int, str, str), strict=True):
            _of(value, kind)
        datetime.fromisoformat(marker[3])
    beat_at = None if beat is None else datetime.fromisoformat(_of(beat[0], str))
    if beat_at is not None and beat_at.utcoffset() is None:
        raise _Unusual("a heartbeat without its offset")
    active = str(run[1]).strip() or str(run[0]).strip()  # B1: the integrity id wins
    return StatusReading(
        run_id=str(run[0]),
        store=str(db),
        state=stored,
        readable=True,
        beat_at=beat_at,
        beat_pid=None if beat is None else _of(beat[1], int),
        revision=_of(state[0], int),
        persistence=_persistence_line(_of(state[2], str), marker, active),
        posts=posts,
    )


def _persistence_line(text: str, marker: tuple[Any, ...] | None, active: str) -> str:
    """`describe_persistence` of the committed persistence state once B8 has settled it, for
    the two states a daemon leaves behind:

    - nothing pending: the state says what is confirmed;
    - the write of the last commit still marked queued (it was stored before its own
      acceptance, B6) for the active run, and the marker committed with it, of that same run and
      the store's canonical tier, at or above both the queued and the accepted revision: B8
      clears the flag, and the marker's revision is confirmed by the store's tier.

    Any other state (a write of another run or of none, a marker behind or of another tier,
    fields the serializer would not write) is `_Unusual`: the core's planner decides it."""
    data = json.loads(text or "{}")
    if type(data) is not dict or not _PERSISTENCE_FIELDS.keys() >= data.keys():
        raise _Unusual("persistence state not as the serializer writes it")
    for key, value in data.items():
        _of(value, _PERSISTENCE_FIELDS[key])
    accepted = data.get("last_accepted_revision", 0)
    tier = data.get("accepted_tier", "").strip().lower() or "none"
    if data.get("pending_persist", False):
        queued = data.get("queued_revision", 0)
        run = data.get("queued_run_id", "").strip()
        if not (queued > 0 and run and run == active and marker is not None
                and marker[0].strip() == run and marker[2].strip().lower() == STORE_TIER
                and marker[1] >= max(queued, accepted)):
            raise _Unusual("a write B8 does not settle from the marker alone")
        accepted, tier = marker[1], STORE_TIER
    if accepted > 0:
        return f"revision {accepted} confirmed by {tier}"
    return "nothing confirmed yet"


def _of(value: Any, kind: type) -> Any:
    if type(value) is not kind:
        raise _Unusual(f"expected {kind.__name__}, found {value!r}")
    return value
