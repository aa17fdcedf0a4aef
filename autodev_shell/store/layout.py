"""The run store's layout versions and the step from layout 1 to layout 2 (SPEC C3;
docs/performance.md).

Layout 2 keeps the commit marker in the run state's row, so a revision's commit rewrites one
row instead of a row and a second table, and drops the index of posts by revision, which no
query used: a short revision writes about five 1 KiB pages to the WAL instead of about seven.
`commit_marker` stays readable under its name, as a view of that row, so every reader works on
both layouts.

A layout-1 store (written before layout 2's commit work) opens and reads as it is; the first
revision committed to it migrates it inside that revision's own transaction, so a store is
never left half migrated, only a writer migrates (never `autodev status`), and a failing disk
fails the commit as it would have failed anyway. A store's page size is fixed when it is made:
a migrated store keeps its own (4 KiB in layout 1, 1 KiB since).
"""

from __future__ import annotations

import sqlite3
from typing import Final

#: The layout this code writes (`run.schema_version`).
LAYOUT: Final = 2

#: The commit marker (C3) as a view of the run state's row.
MARKER_VIEW: Final = """
CREATE VIEW commit_marker (id, run_id, revision, tier, at) AS
    SELECT id, marker_run_id, marker_revision, marker_tier, marker_at FROM run_state
    WHERE marker_run_id IS NOT NULL;
"""

_TO_LAYOUT_2: Final = (
    "ALTER TABLE run_state ADD COLUMN marker_run_id TEXT",
    "ALTER TABLE run_state ADD COLUMN marker_revision INTEGER",
    "ALTER TABLE run_state ADD COLUMN marker_tier TEXT",
    "ALTER TABLE run_state ADD COLUMN marker_at TEXT",
    "UPDATE run_state SET (marker_run_id, marker_revision, marker_tier, marker_at) = "
    "(SELECT run_id, revision, tier, at FROM commit_marker WHERE id = 1) WHERE id = 1",
    "DROP TABLE commit_marker",
    MARKER_VIEW.strip().rstrip(";"),
    "DROP INDEX IF EXISTS posts_by_revision",
    f"UPDATE run SET schema_version = {LAYOUT} WHERE id = 1",
)


def stored_layout(conn: sqlite3.Connection) -> int:
    """The layout the open store was written in."""
    row = conn.execute("SELECT schema_version FROM run WHERE id = 1").fetchone()
    return int(row[0])


def migrate(conn: sqlite3.Connection) -> None:
    """Bring the store to `LAYOUT`, inside the write transaction the caller holds (read again
    under its lock: another process may have migrated it since this one opened it)."""
    if stored_layout(conn) < LAYOUT:
        for statement in _TO_LAYOUT_2:
            conn.execute(statement)
