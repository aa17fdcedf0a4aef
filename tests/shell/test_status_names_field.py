"""A value changed by hand that `autodev status` cannot read: its one line names the table and
column that hold it, the row and the value (C6: a clear error names the field), and status
changes nothing. The damage is done the way tests/shell/test_status_read.py does it."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from test_status_read import _cli, _daemon_run

#: damage (SQL run on a daemon-written store) → the words the line must hold.
NAMED = {
    "UPDATE run_state SET revision = 'two'": "run_state.revision (row 1) holds 'two', not an "
                                             "integer",
    "UPDATE run_state SET marker_at = 'yesterday'": "run_state.marker_at (row 1) holds "
                                                    "'yesterday', not a time",
    "INSERT OR REPLACE INTO heartbeat (id, at, pid) VALUES (1, '2026-12-01T08:00:00', 5)":
        "heartbeat.at (row 1) holds '2026-12-01T08:00:00', not a time with its UTC offset",
    "INSERT OR REPLACE INTO heartbeat (id, at, pid) VALUES (1, '2026-12-01T08:00:00+00:00', 'x')":
        "heartbeat.pid (row 1) holds 'x', not an integer",
}


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("damage", sorted(NAMED))
def test_C6_status_names_the_column_a_hand_edit_broke(tmp_path: Path, damage: str) -> None:
    import sqlite3

    run = _daemon_run(tmp_path, "")
    db = run / "run.db"
    with sqlite3.connect(db) as conn:
        conn.execute(damage)
    conn.close()
    before = _digest(db)
    code, _out, err = _cli(["status", "--run", str(run)])
    assert code == 2
    assert err.count("\n") <= 1 and "Traceback" not in err
    assert str(db) in err and NAMED[damage] in err, err
    assert _digest(db) == before
