"""A store another process holds locked is busy, never corrupt (SPEC C3, C6, B14).

A fresh clone's soak (tests/e2e/test_daemon_soak_odd_messages.py)
once froze the daemon (SIGSTOP) while it
held the run store's lock, and `autodev status` then called the sound store "corrupt or
truncated" and advised `autodev restore`: `RunStore.open` took every SQLite error it met while
opening for a damaged file, "database is locked" after the 5 s busy timeout included. A store is
called corrupt only when SQLite says its pages are (`corrupt`, `not a database`, `malformed`,
an integrity check that is not `ok`); a lock held past the busy timeout is `StoreError` kind
"busy", and `autodev status` says so in one line with exit 75 (EX_TEMPFAIL: try again).
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from helpers.clock import T0 as NOW
from helpers.faults import DiskSwitch, faulty_connection

from autodev_shell.store.run_store import NewPost, RunStore, StoreError

#: The statements `RunStore.open` runs on an existing store, in order (configure, check,
#: schema): any of them may meet another process's lock.
OPEN_STATEMENTS = (
    "PRAGMA journal_mode", "PRAGMA synchronous", "PRAGMA busy_timeout", "PRAGMA foreign_keys",
    "PRAGMA integrity_check", "SELECT name FROM sqlite_master", "SELECT schema_version",
    "SELECT revision",
)
#: The result codes SQLite gives when it waited for a lock in vain: BUSY, LOCKED and their
#: extended codes (BUSY_RECOVERY: another process rebuilds the WAL index after a crash).
BUSY = {"SQLITE_BUSY": 5, "SQLITE_LOCKED": 6, "SQLITE_BUSY_RECOVERY": 261,
        "SQLITE_BUSY_SNAPSHOT": 517, "SQLITE_LOCKED_SHAREDCACHE": 262}
#: And the ones that do say the file is damaged.
DAMAGED = {"SQLITE_CORRUPT": (11, "database disk image is malformed"),
           "SQLITE_NOTADB": (26, "file is not a database")}


def _store(path: Path) -> Path:
    with RunStore.open(path, create=True, run_id="run-1", now=NOW) as store:
        post = NewPost(participant="ana", engine="claude:sonnet", text="a sound post", at=NOW,
                       key="k1")
        store.commit(1, (post,), '{"turn": 1}',
                     persistence_state_json="{}", now=NOW)
    return path


@pytest.mark.parametrize("statement", OPEN_STATEMENTS)
@pytest.mark.parametrize("code", BUSY.values(), ids=list(BUSY))
def test_C3_a_lock_met_while_opening_is_busy_not_corrupt(tmp_path: Path, statement: str,
                                                        code: int) -> None:
    path = _store(tmp_path / "run.db")
    switch = DiskSwitch()
    switch.fail((statement,), error="database is locked", code=code)
    with pytest.raises(StoreError) as info:
        RunStore.open(path, factory=faulty_connection(switch))
    assert switch.raised == 1, f"{statement} was never run by RunStore.open"
    assert info.value.kind == "busy"
    message = str(info.value)
    assert str(path) in message and "is busy" in message and "Try again." in message
    assert "corrupt" not in message.replace("nothing says the store is damaged", "")
    assert "\n" not in message


@pytest.mark.parametrize("statement", OPEN_STATEMENTS)
@pytest.mark.parametrize("name", DAMAGED)
def test_C3_damage_met_while_opening_is_still_corrupt(tmp_path: Path, statement: str,
                                                      name: str) -> None:
    code, text = DAMAGED[name]
    path = _store(tmp_path / "run.db")
    switch = DiskSwitch()
    switch.fail((statement,), error=text, code=code)
    with pytest.raises(StoreError) as info:
        RunStore.open(path, factory=faulty_connection(switch))
    assert info.value.kind == "corrupt", info.value


def test_C3_a_lock_met_reading_an_open_store_is_busy(tmp_path: Path) -> None:
    path = _store(tmp_path / "run.db")
    switch = DiskSwitch()
    with RunStore.open(path, factory=faulty_connection(switch)) as store:
        switch.fail(("SELECT",), error="database is locked", code=sqlite3.SQLITE_BUSY)
        with pytest.raises(StoreError) as info:
            store.thread()
        assert info.value.kind == "busy" and "is busy" in str(info.value)


# --- a real lock, held by a stopped process ---------------------------------------------------

#: Holds the store's lock as a daemon stopped with SIGSTOP mid-write would: exclusive locking
#: mode keeps the lock its first write took until the connection closes, so every reader waits
#: for it and gives up after its busy timeout.
#: With "mid-write" it stops inside a write transaction instead: readers go on (WAL), and every
#: other writer waits for it. (Exclusive locking mode cannot be taken while another connection
#: has the store open, since in WAL mode each open connection holds a shared lock on the file.)
HOLDER = textwrap.dedent("""
    import sqlite3, sys, time
    conn = sqlite3.connect(sys.argv[1], isolation_level=None)
    mid_write = sys.argv[2:] == ["mid-write"]
    if not mid_write:
        conn.execute("PRAGMA locking_mode = EXCLUSIVE")
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("UPDATE run_state SET revision = revision")
    if not mid_write:
        conn.execute("COMMIT")
    print("held", flush=True)
    time.sleep(600)
""")


@contextmanager
def _held_by_a_stopped_process(db: Path, *how: str) -> Iterator[None]:
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(db), *how],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        os.kill(holder.pid, signal.SIGSTOP)
        yield
    finally:
        os.kill(holder.pid, signal.SIGCONT)
        holder.kill()
        holder.wait()


def _autodev(run_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "autodev_shell.cli", *args,
                           "--run", str(run_dir)], capture_output=True, text=True, timeout=120)


def _status(run_dir: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return _autodev(run_dir, "status", *extra)


def test_C6_status_of_a_store_a_stopped_process_holds_says_busy_and_changes_nothing(
        tmp_path: Path) -> None:
    db = _store(tmp_path / "run.db")
    before = db.read_bytes()
    with _held_by_a_stopped_process(db):
        with pytest.raises(StoreError) as info:
            RunStore.open(db)
        assert info.value.kind == "busy"
        for extra in ((), ("--json",)):
            said = _status(tmp_path, *extra)
            assert said.returncode == 75, said
            assert said.stdout == ""
            lines = said.stderr.splitlines()
            assert len(lines) == 1 and lines[0].startswith(f"autodev: The run store {db} is busy")
            assert "restore" not in said.stderr and "Traceback" not in said.stderr
            assert "corrupt" not in said.stderr
    assert db.read_bytes() == before
    said = _status(tmp_path, "--json")  # the lock gone, the same store reads as it was
    assert said.returncode == 0, said.stderr
    assert json.loads(said.stdout)["persistence"]["revision"] == 1


def test_C6_a_control_said_while_a_stopped_process_holds_the_store_is_refused_whole(
        tmp_path: Path) -> None:
    """`autodev say` (and pause, resume, stop) cannot queue while the lock is held: one busy
    line, exit 75, and nothing of it queued, so the operator knows to say it again."""
    db = _store(tmp_path / "run.db")
    with _held_by_a_stopped_process(db):
        said = _autodev(tmp_path, "say", "are you there?")
        assert said.returncode == 75, said
        lines = said.stderr.splitlines()
        assert len(lines) == 1 and " is busy (" in lines[0], said.stderr
        assert "corrupt" not in said.stderr and "restore" not in said.stderr
    with RunStore.open(db) as store:
        assert store.pending_controls() == ()
    assert _autodev(tmp_path, "say", "are you there?").returncode == 0
    with RunStore.open(db) as store:
        assert [c.arg for c in store.pending_controls()] == ["are you there?"]


def test_B14_a_commit_that_meets_a_held_lock_is_busy_and_writes_nothing(tmp_path: Path) -> None:
    """A daemon's store, open when another process froze inside a write transaction (a second
    tool writing the same store, stopped with SIGSTOP): its commit waits out the busy timeout
    and fails as `busy`, rolled back whole, so the run knows its state did not reach the disk
    (B14); the same commit lands once the lock is gone."""
    db = _store(tmp_path / "run.db")
    post = NewPost(participant="ana", engine="claude:sonnet", text="the second post", at=NOW,
                   key="k2")
    with RunStore.open(db) as store:
        with _held_by_a_stopped_process(db, "mid-write"):
            assert store.revision == 1  # a reader is not held up (WAL)
            with pytest.raises(StoreError) as info:
                store.commit(2, (post,), '{"turn": 2}', persistence_state_json="{}", now=NOW)
            assert info.value.kind == "busy", info.value
            assert "nothing was read or written" in str(info.value)
        assert store.revision == 1
        store.commit(2, (post,), '{"turn": 2}', persistence_state_json="{}", now=NOW)
    with RunStore.open(db) as store:
        assert store.revision == 2
        assert [p.text for p in store.thread()][-1] == "the second post"
