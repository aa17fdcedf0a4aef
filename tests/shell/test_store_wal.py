"""The run store's WAL is given its working size by the first commit (SPEC C3; docs/performance.md).

A WAL grows by each commit's frames until SQLite's automatic checkpoint, then commits overwrite
it from its start. The store's first commit writes frames no reader takes (page number 0) past
the WAL's end up to that working size, so its later commits overwrite blocks the file already
has instead of growing it. What must hold, stated here from SQLite's WAL file format (a 32-byte
header, then frames of a 24-byte header and one page) and its pragmas, not from the store's
constants:

- after the first commit the WAL holds at least `wal_autocheckpoint` frames, and its size never
  changes over later commits, across automatic checkpoints and restarts of the WAL;
- the filling is never read as frames: a crash image (the files as a kill -9 leaves them,
  without the shared-memory index) opens with every committed revision, post and control, at
  any point;
- the filling never covers what another connection wrote first;
- a WAL that cannot be given its size (a full disk) is left as it was and the commit lands.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from helpers.clock import T0 as NOW
from helpers.faults import DiskSwitch, faulty_connection

from autodev_shell.store.run_store import NewPost, RunStore

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "store_v1" / "run.db"
PERSISTENCE = json.dumps({"pending_persist": True, "queued_revision": 0})


def wal(path: Path) -> Path:
    return Path(f"{path}-wal")


def watched(path: Path, **kwargs: Any) -> tuple[RunStore, sqlite3.Connection]:
    """The store at `path` and its own connection, whose settings (`wal_autocheckpoint`) are
    the connection's own (the `helpers.faults` seam)."""
    switch = DiskSwitch()
    store = RunStore.open(path, factory=faulty_connection(switch), **kwargs)
    return store, switch.connection


def working_size(conn: sqlite3.Connection) -> int:
    """The WAL's size once its automatic checkpoint is due, from the WAL format, as the store's
    connection `conn` has it set."""
    frames = int(conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0])
    page = int(conn.execute("PRAGMA page_size").fetchone()[0])
    return 32 + frames * (24 + page)


def restarts(path: Path) -> int:
    """The WAL header's checkpoint sequence number: it counts the WAL's restarts."""
    return int.from_bytes(wal(path).read_bytes()[12:16], "big")


def commit(store: RunStore, revision: int, text_chars: int = 200) -> None:
    at = NOW + timedelta(seconds=revision)
    post = NewPost("ana", "claude:sonnet", f"post {revision} " + "p" * text_chars, at,
                   key=f"turn-{revision}/0")
    state = json.dumps({"revision": revision, "pad": "s" * 1_000})
    store.commit(revision, (post,), state, persistence_state_json=PERSISTENCE, now=at)


def crash_image(path: Path, into: Path) -> Path:
    """The database and its WAL as a process killed now leaves them (its page cache is the
    file), without the shared-memory index, which the next opener rebuilds from the WAL."""
    into.mkdir()
    copy = into / path.name
    shutil.copyfile(path, copy)
    shutil.copyfile(wal(path), wal(copy))
    return copy


def read_back(path: Path) -> tuple[int, list[str], list[str], str]:
    """(revision, post keys, queued controls' args, integrity) read by a plain connection."""
    conn = sqlite3.connect(path)
    try:
        revision = int(conn.execute("SELECT revision FROM run_state").fetchone()[0])
        keys = [r[0] for r in conn.execute("SELECT post_key FROM posts ORDER BY seq")]
        controls = [r[0] for r in conn.execute("SELECT arg FROM controls ORDER BY id")]
        integrity = str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()
    return revision, keys, controls, integrity


def keys_up_to(revision: int) -> list[str]:
    return [f"turn-{r}/0" for r in range(1, revision + 1)]


def test_C3_the_first_commit_sizes_the_wal_and_later_commits_never_grow_it(
        tmp_path: Path) -> None:
    path = tmp_path / "run.db"
    store, conn = watched(path, create=True, run_id="run-1", now=NOW)
    with store:
        commit(store, 1)
        sized = wal(path).stat().st_size
        assert sized >= working_size(conn)
        sizes = set()
        revision = 1
        while restarts(path) < 2:  # past two automatic checkpoints and restarts of the WAL
            revision += 1
            commit(store, revision)
            sizes.add(wal(path).stat().st_size)
            assert revision < 5_000, "the WAL never restarted"
        assert store.revision == revision
    assert sizes == {sized}


def test_C3_a_layout_1_store_is_sized_by_the_commit_that_migrates_it(tmp_path: Path) -> None:
    path = tmp_path / "run.db"
    shutil.copyfile(FIXTURE, path)
    store, conn = watched(path)
    with store:
        commit(store, 4)  # migrates it to layout 2 and sizes its WAL
        sized = wal(path).stat().st_size
        assert sized >= working_size(conn)
        for revision in range(5, 40):
            commit(store, revision)
        assert wal(path).stat().st_size == sized
        assert store.revision == 39


@pytest.mark.parametrize("stop_at", [1, 2, 250, 600])
def test_C3_a_crash_image_of_a_sized_wal_holds_every_committed_revision(
        tmp_path: Path, stop_at: int) -> None:
    """Right after the sizing commit (the filling follows the first frames), and past the WAL's
    restarts (frames of the previous pass, then the filling, follow the current ones)."""
    path = tmp_path / "run.db"
    with RunStore.open(path, create=True, run_id="run-1", now=NOW) as store:
        for revision in range(1, stop_at + 1):
            commit(store, revision)
        copy = crash_image(path, tmp_path / "image")
        revision, keys, _controls, integrity = read_back(copy)
    assert (revision, integrity) == (stop_at, "ok")
    assert keys == keys_up_to(stop_at)


def _queue(path: Path, arg: str) -> None:
    """`autodev say` as another process does it: its own connection, one control queued."""
    script = (
        "import sys\n"
        "from autodev_shell.store.run_store import RunStore\n"
        "with RunStore.open(sys.argv[1]) as s:\n"
        "    s.enqueue_control('say', sys.argv[2])\n"
    )
    subprocess.run([sys.executable, "-c", script, str(path), arg], check=True, timeout=120)


def test_C3_C6_controls_queued_by_another_process_survive_around_the_sizing(
        tmp_path: Path) -> None:
    """A control another process queued before the first commit is in the WAL's first frames
    when that commit sizes it: the zeros go after them. Controls queued later land in the sized
    WAL like any commit's frames."""
    path = tmp_path / "run.db"
    store, conn = watched(path, create=True, run_id="run-1", now=NOW)
    with store:
        conn.execute("PRAGMA wal_autocheckpoint = 0")  # keep the first frames
        _queue(path, "before")
        conn.execute("PRAGMA wal_autocheckpoint = 1000")
        before = wal(path).stat().st_size
        assert before > 0
        commit(store, 1)
        assert wal(path).stat().st_size > before
        _queue(path, "after")
        commit(store, 2)
        assert [c.arg for c in store.pending_controls()] == ["before", "after"]
        copy = crash_image(path, tmp_path / "image")
    revision, keys, controls, integrity = read_back(copy)
    assert (revision, keys, controls, integrity) == (2, keys_up_to(2), ["before", "after"], "ok")


_CHILD = """
import json, sys
from datetime import UTC, datetime, timedelta
from autodev_shell.store.run_store import NewPost, RunStore
now = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
store = RunStore.open(sys.argv[1], create=True, run_id="run-1", now=now)
revision = 0
while True:
    revision += 1
    at = now + timedelta(seconds=revision)
    post = NewPost("ana", "claude", "p" * 200, at, key=f"turn-{revision}/0")
    store.commit(revision, (post,), json.dumps({"pad": "s" * 1000}),
                 persistence_state_json="{}", now=at)
    print(revision, flush=True)
"""


def test_C3_a_store_killed_mid_run_reopens_with_every_revision_it_confirmed(
        tmp_path: Path) -> None:
    """kill -9 of a process committing into its sized WAL, past its first restart."""
    path = tmp_path / "run.db"
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(path)],
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    confirmed = 0
    try:
        for line in child.stdout:
            confirmed = int(line)
            if confirmed >= 300:
                break
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=120)
    assert confirmed >= 300
    with RunStore.open(path) as store:  # the integrity check runs as it opens
        revision = store.revision
        keys = [p.key for p in store.thread()]
    assert revision >= confirmed
    assert keys == keys_up_to(revision)


def _disk_with_room(real: Any, *, room: int, how: str) -> Any:
    """`os.pwrite` (which only the sizing calls: SQLite writes through its own code) on a disk
    with `room` bytes left past where the first write starts: a write past that fails with
    ENOSPC having written nothing, or writes what fits and returns the short count."""
    limit: list[int] = []

    def pwrite(fd: int, data: bytes, offset: int) -> int:
        if not limit:
            limit.append(offset + room)
        fits = max(0, min(len(data), limit[0] - offset))
        if fits == len(data):
            return int(real(fd, data, offset))
        if how == "short" and fits:
            return int(real(fd, data[:fits], offset))
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    return pwrite


@pytest.mark.parametrize("how", ["error", "short"])
@pytest.mark.parametrize("room", [0, 1_000, 64 * 1024])
def test_C3_a_wal_the_disk_cannot_size_is_left_as_it_was_and_the_commit_lands(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str, room: int) -> None:
    monkeypatch.setattr(os, "pwrite", _disk_with_room(os.pwrite, room=room, how=how))
    path = tmp_path / "run.db"
    store, conn = watched(path, create=True, run_id="run-1", now=NOW)
    with store:
        commit(store, 1)
        first = wal(path).stat().st_size
        page = int(conn.execute("PRAGMA page_size").fetchone()[0])
        assert 0 < first < 32 + 20 * (24 + page)  # one commit's few frames, no filling
        for revision in range(2, 6):
            commit(store, revision)
        assert wal(path).stat().st_size > first  # it grows as it did before sizing
        assert store.revision == 5
        copy = crash_image(path, tmp_path / "image")
    assert read_back(copy) == (5, keys_up_to(5), [], "ok")


def test_C3_the_sizing_writes_a_memory_page_at_a_time(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel sizes a file's page-cache entries by the writes that made them, and a
    commit's small write into a large entry costs time in proportion to the entry (measured:
    twice the kernel time per commit after one 1 MB write). So the sizing writes as SQLite
    does, never across a 4 KiB boundary of the file."""
    writes: list[tuple[int, int]] = []
    real = os.pwrite

    def pwrite(fd: int, data: bytes, offset: int) -> int:
        writes.append((offset, len(data)))
        return real(fd, data, offset)

    monkeypatch.setattr(os, "pwrite", pwrite)
    path = tmp_path / "run.db"
    store, conn = watched(path, create=True, run_id="run-1", now=NOW)
    with store:
        commit(store, 1)
        wanted = working_size(conn)
        assert wal(path).stat().st_size >= wanted
    assert sum(length for _offset, length in writes) >= wanted - 32 - 10 * 1048
    assert all(offset // 4096 == (offset + length - 1) // 4096 for offset, length in writes)


def test_C3_a_wal_a_huge_revision_grew_is_cut_back_to_its_working_size(tmp_path: Path) -> None:
    """A huge message makes a WAL far larger than its working size; once SQLite restarts the
    log after a checkpoint, the file is that working size again (not its largest size for the
    rest of the run)."""
    path = tmp_path / "run.db"
    with RunStore.open(path, create=True, run_id="run-1", now=NOW) as store:
        commit(store, 1)
        sized = wal(path).stat().st_size
        commit(store, 2, text_chars=8_000_000)
        grown = wal(path).stat().st_size
        assert grown > sized + 7_000_000
        before, revision = restarts(path), 2
        while restarts(path) == before or revision < 4:
            revision += 1
            commit(store, revision)
            assert revision < 5_000, "the WAL never restarted"
        assert wal(path).stat().st_size == sized
    assert read_back(path)[:2] == (revision, keys_up_to(revision))
