"""Opening a store never drops the locks this process already holds on it (C3, C6).

SQLite's locks on a file are POSIX record locks: they belong to the process and the file, and
closing ANY descriptor of that file in the process releases them all, silently. So a store
opened a second time in one process (an orchestrator that holds one and opens another, a test
reading the thread of a daemon it drives) must never be opened or read outside SQLite first.
When it was (a header check), the first connection lost its shared lock: another process that
closed its own connection then took the store for unused, checkpointed it and deleted the WAL
and the shared-memory index under the first one, whose reads then failed as "database disk
image is malformed" — seen by tests/e2e/test_store_layout_daemon.py after a daemon's kill -9.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from helpers.clock import T0 as NOW

from autodev_shell.store.run_store import NewPost, RunStore


def _locks_held(db: Path) -> list[str]:
    """This process's POSIX locks on `db`, as the kernel lists them."""
    inode = os.stat(db).st_ino
    held = []
    with open("/proc/locks", encoding="ascii") as table:
        for line in table:
            fields = line.split()
            if (fields[1] == "POSIX" and int(fields[4]) == os.getpid()
                    and fields[5].rsplit(":", 1)[-1] == str(inode)):
                held.append(" ".join(fields[3:]))
    return held


def _close_elsewhere(db: Path) -> None:
    """Another process opens the store and closes it: if it is then the last connection it
    knows of, SQLite checkpoints and deletes the WAL."""
    code = ("import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
            "c.execute('SELECT revision FROM run_state').fetchall(); c.close()")
    subprocess.run([sys.executable, "-c", code, str(db)], check=True, timeout=120)


def test_C3_opening_a_store_again_keeps_the_locks_of_the_one_held(tmp_path: Path) -> None:
    db = tmp_path / "run.db"
    held = RunStore.open(db, create=True, run_id="run-1", now=NOW)
    try:
        before = _locks_held(db)
        assert before, "a WAL connection holds a shared lock on its database"
        RunStore.open(db).close()
        RunStore.open(db, check=False).close()
        assert _locks_held(db) == before
    finally:
        held.close()


def test_C3_a_store_held_open_keeps_its_wal_and_its_commits(tmp_path: Path) -> None:
    db = tmp_path / "run.db"
    held = RunStore.open(db, create=True, run_id="run-1", now=NOW)
    try:
        held.commit(1, [NewPost("ana", "claude", "first", NOW, key="k1")], "{}",
                    persistence_state_json="{}", now=NOW)
        RunStore.open(db, check=False).close()  # e.g. the thread read for a status line
        _close_elsewhere(db)
        assert Path(f"{db}-wal").exists()  # not taken for unused: the WAL is still there
        held.commit(2, [NewPost("ana", "claude", "second", NOW, key="k2")], "{}",
                    persistence_state_json="{}", now=NOW)
    finally:
        held.close()
    with RunStore.open(db, check=True) as fresh:
        assert fresh.revision == 2
        assert [p.text for p in fresh.thread()] == ["first", "second"]
