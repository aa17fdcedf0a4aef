"""Which stored value a reader could not read: run only after a read failed, to name the field.

A value changed by hand in `run.db` (a time without its offset, a revision as text) makes a
reader fail deep inside, with words that name no field. This module looks at the store's raw
columns with sqlite3 alone and names the first one that does not hold what the store writes
there, so the one line the user sees says `heartbeat.at`, not only `can't subtract
offset-naive and offset-aware datetimes`. It decides nothing and changes nothing.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Final

#: What the store writes in each column a reader converts: a time with its UTC offset, or an
#: integer. Nullable columns may also hold NULL. Columns a layout does not have are skipped.
_TIME: Final = "a time with its UTC offset"
_INTEGER: Final = "an integer"
COLUMNS: Final[tuple[tuple[str, str, str], ...]] = (
    ("run", "schema_version", _INTEGER),
    ("run", "created_at", _TIME),
    ("run_state", "revision", _INTEGER),
    ("run_state", "updated_at", _TIME),
    ("run_state", "marker_revision", _INTEGER),
    ("run_state", "marker_at", _TIME),
    ("commit_marker", "revision", _INTEGER),
    ("commit_marker", "at", _TIME),
    ("heartbeat", "at", _TIME),
    ("heartbeat", "pid", _INTEGER),
    ("call_process", "pid", _INTEGER),
    ("call_process", "pgid", _INTEGER),
    ("call_process", "ticks", _INTEGER),
    ("call_process", "started_at", _TIME),
    ("controls", "queued_at", _TIME),
    ("controls", "taken_at", _TIME),
    ("aliases", "added_at", _TIME),
    ("turn_inputs", "saved_at", _TIME),
    ("posts", "revision", _INTEGER),
    ("posts", "at", _TIME),
)


def _fits(value: object, kind: str) -> bool:
    if kind == _INTEGER:
        return type(value) is int
    if not isinstance(value, str):
        return False
    try:
        return datetime.fromisoformat(value).utcoffset() is not None
    except ValueError:
        return False


def first_unreadable(db: Path) -> str | None:
    """`table.column (row N) holds 'value', not <what the store writes>`, for the first such
    value in `db`, or None when every checked column holds what it should (or the file cannot
    be read at all: the caller's own words then stand)."""
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    except sqlite3.Error:
        return None
    try:
        for table, column, kind in COLUMNS:
            have = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
            if column not in have:
                continue
            rows = conn.execute(
                f"SELECT rowid, {column} FROM {table} WHERE {column} IS NOT NULL")
            for rowid, value in rows:
                if not _fits(value, kind):
                    shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
                    return f"{table}.{column} (row {rowid}) holds {shown}, not {kind}"
    except sqlite3.Error:
        return None
    finally:
        conn.close()
    return None
