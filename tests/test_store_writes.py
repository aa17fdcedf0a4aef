"""What committing a revision writes (issue 13): counted in bytes, not timed."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from autodev_shell.store import NewPost, RunStore

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
