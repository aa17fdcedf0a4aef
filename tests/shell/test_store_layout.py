"""The run store's layout 2 and the step from layout 1 (SPEC C3, B1, B8; docs/performance.md).

tests/fixtures/store_v1/run.db was written by the layout-1 store (how: make_run_db.py beside
it): run `run-v1`, three revisions of two posts each, a `say` taken by revision 2, a `pause`
still queued, a saved turn input and a heartbeat.
"""

from __future__ import annotations

import shutil
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from helpers.clock import T0 as NOW
from helpers.faults import DiskSwitch, faulty_connection

from autodev_shell.store.run_store import NewPost, RunStore, StoreError

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "store_v1" / "run.db"
WRITTEN = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)
V1_KEYS = [f"turn-{r}/{i}" for r in (1, 2, 3) for i in range(2)]


def old_store(tmp_path: Path) -> Path:
    path = tmp_path / "run.db"
    shutil.copyfile(FIXTURE, path)
    return path


def layout(path: Path) -> tuple[int, str]:
    """(schema_version, what `commit_marker` is), read by a plain connection."""
    conn = sqlite3.connect(path)
    try:
        version = conn.execute("SELECT schema_version FROM run").fetchone()[0]
        kind = conn.execute(
            "SELECT type FROM sqlite_master WHERE name = 'commit_marker'").fetchone()[0]
    finally:
        conn.close()
    return int(version), str(kind)


def shape(path: Path) -> dict[str, object]:
    """Every table's and view's columns, and the indexes, of the store at `path`."""
    conn = sqlite3.connect(path)
    try:
        objects = conn.execute(
            "SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name"
        ).fetchall()
        columns = {name: [tuple(row) for row in conn.execute(f"PRAGMA table_info({name})")]
                   for kind, name in objects if kind in ("table", "view")}
    finally:
        conn.close()
    return {"objects": objects, "columns": columns}


def new_post(text: str, key: str) -> NewPost:
    return NewPost("bo", "codex:gpt-5", text, NOW, key=key)


def test_C3_a_layout_1_store_opens_and_reads_as_it_was_written(tmp_path: Path) -> None:
    path = old_store(tmp_path)
    assert layout(path) == (1, "table")
    with RunStore.open(path) as store:
        assert store.integrity_check() == ("ok",)
        assert store.run_id == "run-v1" and store.integrity_id == "integrity-v1"
        assert store.aliases() == ("alias-v1",)
        assert store.revision == 3
        snap = store.snapshot()
        assert snap.scheduler_state_json == '{"turn": 3}'
        assert snap.persistence_state_json == '{"queued_revision": 3}'
        assert [p.key for p in snap.posts] == V1_KEYS
        assert [p.revision for p in snap.posts] == [1, 1, 2, 2, 3, 3]
        assert snap.posts[0].text == "post 1.0 " + "x" * 40
        assert snap.marker is not None
        assert (snap.marker.run_id, snap.marker.revision, snap.marker.tier, snap.marker.at) == (
            "run-v1", 3, "sqlite", WRITTEN + timedelta(minutes=3))
        assert store.committed_state().marker == snap.marker
        assert [c.command for c in store.pending_controls()] == ["pause"]
        record = store.load_turn_input("turn-4")
        assert record is not None and (record.bound_text, record.context) == (
            "bound text", "context")
        beat = store.last_heartbeat()
        assert beat is not None and beat.pid == 4242
    assert layout(path) == (1, "table")  # reading never migrates: only a commit does


def test_C3_the_first_commit_brings_a_layout_1_store_to_layout_2(tmp_path: Path) -> None:
    path = old_store(tmp_path)
    with RunStore.open(path) as store:
        pause = store.pending_controls()[0].id
        result = store.commit(4, (new_post("after the move", "turn-4/0"),), '{"turn": 4}',
                              persistence_state_json='{"queued_revision": 4}', now=NOW,
                              taken_controls=(pause,))
        assert not result.replayed and result.added == 1
    assert layout(path) == (2, "view")
    fresh = tmp_path / "fresh.db"
    RunStore.open(fresh, create=True, run_id="other", now=NOW).close()
    assert shape(path) == shape(fresh)  # a migrated store is laid out as a new one
    with RunStore.open(path) as store:
        assert store.integrity_check() == ("ok",)
        snap = store.snapshot()
        assert snap.revision == 4 and snap.scheduler_state_json == '{"turn": 4}'
        assert [p.key for p in snap.posts] == [*V1_KEYS, "turn-4/0"]
        assert snap.marker is not None
        assert (snap.marker.run_id, snap.marker.revision, snap.marker.tier, snap.marker.at) == (
            "run-v1", 4, "sqlite", NOW)
        assert store.pending_controls() == ()
        store.commit(5, (), '{"turn": 5}', persistence_state_json="{}", now=NOW)
        assert store.revision == 5


def test_C3_a_replay_into_a_layout_1_store_keeps_its_marker(tmp_path: Path) -> None:
    path = old_store(tmp_path)
    with RunStore.open(path) as store:
        again = store.commit(2, (new_post("late", "turn-2/0"), new_post("new", "turn-2/9")),
                             '{"turn": "old"}', persistence_state_json="{}", now=NOW)
        assert again.replayed and again.added == 1 and again.duplicates == 1
        snap = store.snapshot()
    assert layout(path) == (2, "view")
    assert snap.revision == 3 and snap.scheduler_state_json == '{"turn": 3}'
    assert snap.marker is not None and (snap.marker.revision, snap.marker.at) == (
        3, WRITTEN + timedelta(minutes=3))
    assert [p.key for p in snap.posts] == [*V1_KEYS, "turn-2/9"]


@pytest.mark.parametrize("failing", ["ALTER", "DROP", "CREATE VIEW", "INSERT", "COMMIT"])
def test_C3_a_failed_first_commit_leaves_a_layout_1_store_whole(tmp_path: Path,
                                                                failing: str) -> None:
    path = old_store(tmp_path)
    switch = DiskSwitch()
    with RunStore.open(path, factory=faulty_connection(switch)) as store:
        switch.fail((failing,))
        with pytest.raises(StoreError) as info:
            store.commit(4, (new_post("lost", "turn-4/0"),), '{"turn": 4}',
                         persistence_state_json="{}", now=NOW)
        assert info.value.kind == "write-failed"
        switch.heal()
        assert layout(path) == (1, "table")
        snap = store.snapshot()
        assert snap.revision == 3 and [p.key for p in snap.posts] == V1_KEYS
        assert snap.marker is not None and snap.marker.revision == 3
        store.commit(4, (new_post("kept", "turn-4/0"),), '{"turn": 4}',
                     persistence_state_json="{}", now=NOW)
        assert store.revision == 4 and store.marker() is not None
    assert layout(path) == (2, "view")


def test_C3_two_writers_on_a_layout_1_store_migrate_it_once(tmp_path: Path) -> None:
    path = old_store(tmp_path)
    with RunStore.open(path) as first, RunStore.open(path) as second:
        first.commit(4, (new_post("one", "turn-4/0"),), '{"turn": 4}',
                     persistence_state_json="{}", now=NOW)
        second.commit(5, (new_post("two", "turn-5/0"),), '{"turn": 5}',
                      persistence_state_json="{}", now=NOW)
        marker = first.marker()
        assert marker is not None and marker.revision == 5
        assert [p.key for p in first.thread()][-2:] == ["turn-4/0", "turn-5/0"]
        assert first.integrity_check() == ("ok",)


def test_C3_a_snapshot_imported_into_a_layout_2_store_keeps_its_marker(tmp_path: Path) -> None:
    path = old_store(tmp_path)
    with RunStore.open(path) as store:
        snap = store.snapshot()
    restored = tmp_path / "restored.db"
    with RunStore.open(restored, create=True, run_id="run-v1", now=NOW) as store:
        store.import_snapshot(snap, now=NOW)
        again = store.snapshot()
    assert again.marker == snap.marker and again.posts == snap.posts
    assert again.revision == 3 and again.scheduler_state_json == snap.scheduler_state_json
