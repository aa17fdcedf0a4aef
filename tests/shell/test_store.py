"""The canonical SQLite store (SPEC C3, B1, B13, B19)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from helpers.clock import T0 as NOW
from helpers.faults import DiskSwitch, faulty_connection
from hypothesis import given
from hypothesis import strategies as st

from autodev_core.control.turn_input import TurnStart, bind_input_context, plan_turn_input
from autodev_core.serialization import from_json, to_json
from autodev_shell.store.run_store import (
    CONTROL_COMMANDS,
    SCHEMA_VERSION,
    NewPost,
    RunStore,
    Snapshot,
    StoreError,
)

REPO = Path(__file__).resolve().parents[2]


def post(text: str, key: str = "", participant: str = "ana") -> NewPost:
    return NewPost(participant=participant, engine="claude:sonnet", text=text, at=NOW, key=key)


def open_new(path: Path, **kwargs: object) -> RunStore:
    return RunStore.open(path, create=True, run_id="run-1", now=NOW, **kwargs)  # type: ignore[arg-type]


def commit(store: RunStore, revision: int, *posts: NewPost, state: str = "{}") -> None:
    store.commit(revision, posts, state, persistence_state_json="{}", now=NOW)


# --- layout and transactions ------------------------------------------------------------------


def test_C3_store_runs_in_wal_mode_with_full_sync(tmp_path: Path) -> None:
    switch = DiskSwitch()  # synchronous is the connection's own: ask the store's
    with open_new(tmp_path / "run.db", factory=faulty_connection(switch)):
        conn = switch.connection
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL


def test_C3_commit_writes_posts_state_and_marker_together(tmp_path: Path) -> None:
    with open_new(tmp_path / "run.db") as store:
        result = store.commit(1, (post("hello", "t1"), post("world", "t1b")), '{"turn": 1}',
                              persistence_state_json='{"p": 1}', now=NOW)
        assert (result.added, result.duplicates, result.replayed) == (2, 0, False)
        snap = store.snapshot()
    assert snap.revision == 1
    assert snap.scheduler_state_json == '{"turn": 1}'
    assert snap.persistence_state_json == '{"p": 1}'
    assert [p.text for p in snap.posts] == ["hello", "world"]
    assert [p.revision for p in snap.posts] == [1, 1]
    assert snap.marker is not None
    assert (snap.marker.run_id, snap.marker.revision, snap.marker.tier) == ("run-1", 1, "sqlite")


# The commit's write statements: BEGIN, the two posts, the run state with its marker (one row
# since layout 2, docs/performance.md), COMMIT; each one in turn fails.
@pytest.mark.parametrize("after", [0, 1, 2, 3, 4])
def test_C3_a_failed_commit_writes_nothing_of_its_revision(tmp_path: Path, after: int) -> None:
    switch = DiskSwitch()
    with open_new(tmp_path / "run.db", factory=faulty_connection(switch)) as store:
        commit(store, 1, post("kept", "k1"), state='{"r": 1}')
        # Let `after` write statements of the next commit through, then fail: mid-transaction.
        switch.fail(after=after)
        with pytest.raises(StoreError) as info:
            commit(store, 2, post("lost a", "k2"), post("lost b", "k3"), state='{"r": 2}')
        assert info.value.kind == "write-failed"
        assert str(tmp_path / "run.db") in str(info.value)
        switch.heal()
        snap = store.snapshot()
        assert snap.revision == 1
        assert snap.scheduler_state_json == '{"r": 1}'
        assert [p.text for p in snap.posts] == ["kept"]
        assert snap.marker is not None and snap.marker.revision == 1
        commit(store, 2, post("now a", "k2"))  # The store works again once the disk does.
        assert store.revision == 2


def test_C3_replayed_commit_never_duplicates_a_post(tmp_path: Path) -> None:
    with open_new(tmp_path / "run.db") as store:
        commit(store, 1, post("a", "turn-1/0"), state='{"r": 1}')
        commit(store, 2, post("b", "turn-2/0"), state='{"r": 2}')
        again = store.commit(1, (post("a", "turn-1/0"),), '{"r": "old"}',
                             persistence_state_json="{}", now=NOW)
        assert again.replayed and again.added == 0 and again.duplicates == 1
        snap = store.snapshot()
    assert snap.revision == 2 and snap.scheduler_state_json == '{"r": 2}'  # Never goes back.
    assert [p.key for p in snap.posts] == ["turn-1/0", "turn-2/0"]


def test_C3_posts_without_a_key_are_keyed_by_revision_and_place(tmp_path: Path) -> None:
    with open_new(tmp_path / "run.db") as store:
        commit(store, 3, post("x"), post("y"))
        commit(store, 3, post("x"), post("y"))
        assert [p.key for p in store.thread()] == ["r3.0", "r3.1"]


commits = st.lists(
    st.tuples(st.integers(1, 8), st.lists(st.sampled_from("abcdefgh"), max_size=3)),
    min_size=1, max_size=12,
)


@given(commits)
def test_C3_thread_matches_a_model_whatever_the_replays(ops: list[tuple[int, list[str]]]) -> None:
    """Any sequence of commits and replays: every key once, in first-commit order, and the
    revision is the highest committed."""
    with tempfile.TemporaryDirectory() as tmp, open_new(Path(tmp) / "run.db") as store:
        model: dict[str, int] = {}
        top = 0
        for revision, keys in ops:
            commit(store, revision, *(post(f"text {k}", k) for k in keys))
            top = max(top, revision)
            for k in keys:
                model.setdefault(k, revision)
        thread = store.thread()
        assert [p.key for p in thread] == list(model)
        assert [p.revision for p in thread] == list(model.values())
        assert [p.seq for p in thread] == sorted({p.seq for p in thread})
        assert store.revision == top


def test_C3_bad_commit_arguments_are_refused(tmp_path: Path) -> None:
    with open_new(tmp_path / "run.db") as store:
        with pytest.raises(ValueError):
            commit(store, 0, post("a"))
        with pytest.raises(ValueError):
            commit(store, True, post("a"))
        with pytest.raises(TypeError):
            store.commit(1, (), {"not": "text"}, persistence_state_json="{}",  # type: ignore[arg-type]
                         now=NOW)
        with pytest.raises(ValueError):
            NewPost("ana", "claude", "x", datetime(2026, 12, 1, 9, 0))  # naive


def test_C3_snapshot_round_trips_through_the_json_converter(tmp_path: Path) -> None:
    with open_new(tmp_path / "run.db", integrity_id="int-1", aliases=("alias-a",)) as store:
        commit(store, 1, post("é ✓ multi\nline", "k"), state='{"x": [1, 2]}')
        snap = store.snapshot()
    assert from_json(to_json(snap), Snapshot) == snap
    assert (snap.integrity_id, snap.aliases) == ("int-1", ("alias-a",))


def test_thread_reads_incrementally(tmp_path: Path) -> None:
    with open_new(tmp_path / "run.db") as store:
        commit(store, 1, post("a", "1"), post("b", "2"))
        first = store.thread()
        commit(store, 2, post("c", "3"))
        assert [p.text for p in store.thread(after_seq=first[-1].seq)] == ["c"]


# --- identity (B1) -------------------------------------------------------------------------


def test_B1_store_records_run_identity_and_aliases(tmp_path: Path) -> None:
    path = tmp_path / "run.db"
    with RunStore.open(path, create=True, run_id=" run-1 ", integrity_id="i-9", now=NOW) as store:
        store.add_alias("old-name", now=NOW)
        store.add_alias("old-name", now=NOW)
    with RunStore.open(path, create=True, run_id="other", now=NOW) as store:
        # An existing store keeps the run it was created for: `create` never re-owns it.
        assert (store.run_id, store.integrity_id, store.aliases()) == ("run-1", "i-9",
                                                                       ("old-name",))
    with pytest.raises(ValueError):
        RunStore.open(tmp_path / "new.db", create=True, now=NOW)


def test_B1_marker_carries_the_queued_run(tmp_path: Path) -> None:
    with open_new(tmp_path / "run.db") as store:
        store.commit(1, (), "{}", persistence_state_json="{}", now=NOW, run_id="alias-of-run-1")
        marker = store.marker()
    assert marker is not None
    assert marker.as_core().run_id == "alias-of-run-1" and marker.as_core().accepted


# --- corrupt, truncated, foreign files --------------------------------------------------------


def _one_sentence_naming(message: str, path: Path) -> None:
    assert str(path) in message
    assert "\n" not in message and "Traceback" not in message
    assert message.endswith(".")


def _refused(path: Path, kind: str) -> str:
    """`RunStore.open(path)` refuses the file as `kind`, in one sentence naming it."""
    with pytest.raises(StoreError) as info:
        RunStore.open(path)
    assert info.value.kind == kind, info.value
    _one_sentence_naming(str(info.value), path)
    return str(info.value)


def test_C3_missing_store_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "absent.db"
    _refused(path, "missing")


def test_C3_not_a_database_is_detected(tmp_path: Path) -> None:
    path = tmp_path / "run.db"
    path.write_text("these are notes, not a database\n" * 50)
    _refused(path, "corrupt")


def _filled(path: Path, revisions: int = 60) -> None:
    with open_new(path) as store:
        for r in range(1, revisions + 1):
            commit(store, r, post("p" * 800, f"k{r}"), state='{"pad": "' + "s" * 500 + '"}')


@pytest.mark.parametrize("fraction", [0.02, 0.3, 0.5, 0.9])
def test_C3_truncated_database_is_detected(tmp_path: Path, fraction: float) -> None:
    path = tmp_path / "run.db"
    _filled(path)
    size = path.stat().st_size
    with path.open("r+b") as handle:
        handle.truncate(int(size * fraction))
    _refused(path, "corrupt")


def test_C3_overwritten_pages_are_detected(tmp_path: Path) -> None:
    path = tmp_path / "run.db"
    _filled(path)
    with path.open("r+b") as handle:
        handle.seek(4096 * 3)
        handle.write(bytes(range(256)) * 32)
    _refused(path, "corrupt")


def test_C3_foreign_sqlite_database_is_not_a_store(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (x)")
    conn.commit()
    conn.close()
    _refused(path, "not-a-store")


def test_C3_store_from_a_newer_layout_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "run.db"
    open_new(path).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE run SET schema_version = ?", (SCHEMA_VERSION + 1,))
    conn.commit()
    conn.close()
    assert "newer" in _refused(path, "not-a-store")


def test_C3_integrity_check_reports_ok_on_a_sound_store(tmp_path: Path) -> None:
    path = tmp_path / "run.db"
    _filled(path, 5)
    with RunStore.open(path) as store:
        assert store.integrity_check() == ("ok",)


# --- heartbeat and controls --------------------------------------------------------------------


def test_C2_heartbeat_is_overwritten_in_place(tmp_path: Path) -> None:
    with open_new(tmp_path / "run.db") as store:
        assert store.last_heartbeat() is None
        store.heartbeat(NOW, pid=41)
        store.heartbeat(NOW + timedelta(seconds=30), pid=42)
        beat = store.last_heartbeat()
    assert beat is not None and (beat.at, beat.pid) == (NOW + timedelta(seconds=30), 42)


def test_C6_controls_from_another_process_are_taken_once_in_order(tmp_path: Path) -> None:
    path = tmp_path / "run.db"
    with open_new(path) as daemon:
        commit(daemon, 1, post("a", "a"))
        script = (
            "import sys\n"
            "from autodev_shell.store.run_store import RunStore\n"
            "with RunStore.open(sys.argv[1]) as s:\n"
            "    s.enqueue_control('pause')\n"
            "    s.enqueue_control('say', 'look at the tests')\n"
            "    s.enqueue_control('stop')\n"
        )
        subprocess.run([sys.executable, "-c", script, str(path)], check=True, cwd=REPO,
                       timeout=60)
        taken = daemon.take_controls(now=NOW)
        assert [(c.command, c.arg) for c in taken] == [
            ("pause", ""), ("say", "look at the tests"), ("stop", "")]
        assert daemon.take_controls(now=NOW) == ()
        daemon.enqueue_control("resume", now=NOW)
        assert [c.command for c in daemon.take_controls(now=NOW)] == ["resume"]


def test_C6_unknown_control_command_is_refused(tmp_path: Path) -> None:
    with open_new(tmp_path / "run.db") as store, pytest.raises(ValueError, match="unknown"):
        store.enqueue_control("reboot")
    assert {"stop", "pause", "resume", "say", "clear"} == CONTROL_COMMANDS


# --- turn inputs (B19) ------------------------------------------------------------------------


def test_B19_turn_input_is_kept_verbatim_and_bound_to_its_parent_text(tmp_path: Path) -> None:
    path = tmp_path / "run.db"
    record = bind_input_context("msg-7", "please fix the build", "CONTEXT\n  with  spaces \n")
    with open_new(path) as store:
        assert store.load_turn_input("msg-7") is None
        store.save_turn_input(record, now=NOW)
    with RunStore.open(path) as store:
        loaded = store.load_turn_input("msg-7")
    assert loaded == record
    retry = TurnStart(turn_type="retry", parent_input_id="msg-7",
                      parent_text="please fix the build")
    plan = plan_turn_input(retry, loaded)
    assert (plan.action, plan.context) == ("reapply", record.context)  # Verbatim, B19.
    edited = TurnStart(turn_type="retry", parent_input_id="msg-7", parent_text="fix the docs")
    assert plan_turn_input(edited, loaded).reason == "parent-text-changed"


def test_B19_saving_again_replaces_the_record(tmp_path: Path) -> None:
    with open_new(tmp_path / "run.db") as store:
        store.save_turn_input(bind_input_context("m", "a", "one"), now=NOW)
        store.save_turn_input(bind_input_context("m", "b", "two"), now=NOW)
        assert store.load_turn_input("m") == bind_input_context("m", "b", "two")


def test_C3_a_new_store_appears_only_with_its_schema(tmp_path: Path) -> None:
    """Another process (`autodev say` racing the daemon's first start) never finds a database
    at the store's path without its tables: the store is made aside and linked into place."""
    path = tmp_path / "run.db"
    switch = DiskSwitch()
    seen: list[tuple[str, str, bool]] = []
    switch.listeners.append(lambda database, sql: seen.append((database, sql, path.exists())))
    store = RunStore.open(path, create=True, run_id="r", now=datetime(2026, 12, 1, tzinfo=UTC),
                          factory=faulty_connection(switch))
    store.close()
    making = [(sql, there) for database, sql, there in seen if database != str(path)]
    assert any(sql.lstrip().startswith("CREATE TABLE") for sql, _ in making), seen
    assert [sql for sql, there in making if there] == []  # the path was empty all along
    reopened = RunStore.open(path)
    try:
        assert reopened.run_id == "r"
    finally:
        reopened.close()
    assert [p.name for p in tmp_path.iterdir() if "creating" in p.name] == []


def test_C3_any_text_a_cli_printed_is_stored(tmp_path: Path) -> None:
    """NUL bytes are kept as they are; a lone surrogate (a `\\ud800` JSON escape in a CLI's
    event, an undecodable byte in `autodev say`'s argument) cannot be UTF-8: it becomes U+FFFD
    instead of failing the write."""
    now = datetime(2026, 12, 1, 9, tzinfo=UTC)
    store = RunStore.open(tmp_path / "run.db", create=True, run_id="t", now=now)
    try:
        posts = [NewPost("ana", "claude", "a\x00b", now), NewPost("rui", "codex", "c\ud800d", now)]
        store.commit(1, posts, "{}", persistence_state_json="{}", now=now)
        store.enqueue_control("say", "hi \udcff", now=now)
        assert [p.text for p in store.thread()] == ["a\x00b", "c\ufffdd"]
        assert [c.arg for c in store.take_controls(now=now)] == ["hi \ufffd"]
    finally:
        store.close()
