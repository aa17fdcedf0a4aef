"""What committing a revision writes (docs/performance.md): counted in bytes, not timed."""

from __future__ import annotations

import json
import statistics
import struct
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from helpers.faults import DiskSwitch, faulty_connection

from autodev_shell.store.run_store import NewPost, RunStore

IO = Path("/proc/self/io")
BASE = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def _written() -> int:
    fields = dict(line.split(": ") for line in IO.read_text().splitlines())
    return int(fields["wchar"])


@pytest.mark.skipif(not IO.exists(), reason="needs Linux's /proc/self/io")
def test_C3_a_small_revision_writes_at_most_8_KiB(tmp_path: Path) -> None:
    """A short post and a small run state (~1.3 KB of payload) cost at most 8 KiB of writes:
    the WAL holds whole pages, so the page size and the pages touched decide it."""
    store = RunStore.open(tmp_path / "run.db", create=True, run_id="r", now=BASE)
    persistence = json.dumps({"pending_persist": True, "queued_revision": 0})

    def commit(revision: int) -> None:
        at = BASE + timedelta(seconds=revision)
        post = NewPost("ana", "claude", "p" * 200, at, key=f"turn-{revision}/0")
        state = json.dumps({"revision": revision, "pad": "s" * 1_000})
        store.commit(revision, (post,), state, persistence_state_json=persistence, now=at)

    try:
        for revision in range(1, 11):  # the store's first pages
            commit(revision)
        before = _written()
        for revision in range(11, 51):
            commit(revision)
        per_revision = (_written() - before) / 40
    finally:
        store.close()
    assert per_revision <= 8 * 1024, per_revision


def wal_commits(path: Path) -> list[list[int]]:
    """The page numbers of the WAL's frames, one list per committed transaction (the WAL file
    format: a 32-byte header, then frames of a 24-byte header and one page; a frame whose
    second field is non-zero ends a transaction; the log ends at the first frame whose page
    number is 0 or whose salts are not the header's)."""
    data = Path(f"{path}-wal").read_bytes()
    page = struct.unpack(">I", data[8:12])[0]
    salts = data[16:24]
    commits: list[list[int]] = []
    frames: list[int] = []
    offset = 32
    while offset + 24 + page <= len(data):
        number, ends = struct.unpack(">II", data[offset:offset + 8])
        if number == 0 or data[offset + 8:offset + 16] != salts:
            break
        frames.append(number)
        if ends:
            commits.append(frames)
            frames = []
        offset += 24 + page
    return commits


def test_C3_a_short_revision_rewrites_the_posts_key_and_state_pages_only(tmp_path: Path) -> None:
    """A revision of one short post and a run state that fits a page writes three pages to the
    WAL: the post's, its key's, and the run state's (the marker lives in that row). Nothing
    else, bar the file header and a parent page when the thread's tree grows a leaf."""
    path = tmp_path / "run.db"
    switch = DiskSwitch()  # the store's own connection, through the `helpers.faults` seam
    with RunStore.open(path, create=True, run_id="run-1", now=BASE,
                       factory=faulty_connection(switch)) as store:
        switch.connection.execute("PRAGMA wal_autocheckpoint = 0")  # keep every frame
        for revision in range(1, 41):
            post = NewPost("ana", "claude", "p" * 200, BASE, key=f"turn-{revision}/0")
            store.commit(revision, (post,),
                         '{"pad": "' + "s" * 300 + '"}', persistence_state_json="{}",
                         now=BASE + timedelta(seconds=revision))
        commits = wal_commits(path)[-30:]
    assert len(commits) == 30
    assert statistics.median(len(frames) for frames in commits) == 3
    assert max(len(frames) for frames in commits) <= 5
