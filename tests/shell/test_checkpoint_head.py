"""`autodev status` reads only the head of the checkpoint (SPEC B14, C6; docs/performance.md).

The checkpoint's revision and time are written before its payload (docs/store.md, "The
checkpoint file"), so status reads a bounded prefix however long the thread is; a checkpoint
written by an earlier version (one JSON document) is still read, whole, as before.
"""

from __future__ import annotations

import json
import shutil
import zlib
from datetime import timedelta
from pathlib import Path

import pytest
from helpers.clock import T0 as NOW
from hypothesis import given, settings
from hypothesis import strategies as st

from autodev_shell.cli import main
from autodev_shell.durability.checkpoint import (
    read_checkpoint,
    restore_from_checkpoint,
    write_checkpoint,
)
from autodev_shell.durability.files import ReplicaFileError
from autodev_shell.durability.paths import checkpoint_path
from autodev_shell.status.replica_status import read_checkpoint_head, replica_facts
from autodev_shell.store.run_store import NewPost, RunStore

FIXTURE = Path(__file__).parents[1] / "fixtures" / "checkpoint_v1" / "run.db.checkpoint.json"


def _bytes_read() -> int:
    """Bytes this process has read through system calls so far (Linux)."""
    text = Path("/proc/self/io").read_text()
    return int(dict(line.split(": ") for line in text.splitlines())["rchar"])


def _head(revision: int, written_at: str, payload: bytes, *, version: int = 2) -> bytes:
    # The head as docs/store.md spells it, built here on its own (not by the writer).
    head = {"format": "autodev-checkpoint", "version": version, "kind": "base",
            "revision": revision, "written_at": written_at, "bytes": len(payload),
            "crc32": zlib.crc32(payload)}
    return json.dumps(head).encode() + b"\n"


def _store(run: Path, revisions: int, *, text: str = "a post") -> RunStore:
    run.mkdir(exist_ok=True)
    store = RunStore.open(run / "run.db", create=True, run_id="r", now=NOW)
    for rev in range(1, revisions + 1):
        store.commit(rev, (NewPost("ana", "codex", text, NOW, key=f"k{rev}"),), "{}",
                     persistence_state_json="{}", now=NOW, run_id="r")
    return store


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="counts reads through /proc")
def test_C6_status_reads_a_bounded_head_of_a_large_checkpoint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    run = tmp_path / "run"
    _store(run, 3).close()
    # A sound head over 4 MB that are not JSON: status must not read (nor parse) them.
    payload = b"x" * (4 << 20)
    path = checkpoint_path(run / "run.db")
    path.write_bytes(_head(3, "2026-12-01T09:00:00+00:00", payload) + payload + b"\n")
    read_checkpoint_head(path)  # once, so that nothing it imports is counted
    before = _bytes_read()
    revision, written_at, readable = read_checkpoint_head(path)
    read = _bytes_read() - before
    assert (revision, written_at, readable) == (3, "2026-12-01T09:00:00+00:00", True)
    assert read <= 8 * 1024, read
    assert main(["status", "--run", str(run)]) == 0
    assert "checkpoint: revision 3, level with the store" in capsys.readouterr().out
    # What status does not read, a restore does: the payload is not a snapshot.
    with pytest.raises(ReplicaFileError, match=r"base \(frame 1, at byte 0\) is not a snapshot"):
        read_checkpoint(path)


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="counts reads through /proc")
def test_C6_status_of_a_daemon_written_checkpoint_reads_no_more_for_a_longer_thread(
    tmp_path: Path,
) -> None:
    counts = []
    for posts in (5, 400):
        run = tmp_path / f"run-{posts}"
        with _store(run, posts, text="p" * 1500) as store:
            assert write_checkpoint(store, checkpoint_path(store.path), now=NOW).ok
        path = checkpoint_path(run / "run.db")
        assert path.stat().st_size > posts * 1500
        read_checkpoint_head(path)
        before = _bytes_read()
        assert read_checkpoint_head(path)[0] == posts
        counts.append(_bytes_read() - before)
    assert counts[1] <= counts[0] + 64 and counts[1] <= 4 * 1024, counts


def test_B14_a_checkpoint_written_by_an_earlier_version_is_still_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    # The fixture was written by `write_checkpoint` before the head came first (version 1).
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(FIXTURE, checkpoint_path(run / "run.db"))
    ckpt = read_checkpoint(checkpoint_path(run / "run.db"))
    assert ckpt is not None and ckpt.version == 1 and ckpt.revision == 5
    assert ckpt.snapshot.run_id == "fixture-v1" and ckpt.snapshot.aliases == ("old-name",)
    assert [p.key for p in ckpt.snapshot.posts] == ["turn-1/0", "turn-3/0", "turn-5/0"]
    assert ckpt.snapshot.posts[0].text == 'post 1: é ✓ "quoted"\nline two'
    assert read_checkpoint_head(checkpoint_path(run / "run.db")) == (
        5, "2026-12-01T09:06:00+00:00", True)
    result = restore_from_checkpoint(run / "run.db", now=NOW + timedelta(hours=1))
    assert result.restored and result.revision == 5
    with RunStore.open(run / "run.db") as store:
        assert store.run_id == "fixture-v1" and store.revision == 5
        assert [p.key for p in store.thread()] == ["turn-1/0", "turn-3/0", "turn-5/0"]
        assert store.snapshot().persistence_state_json == '{"p": 5}'
    assert main(["status", "--run", str(run)]) == 0
    assert "checkpoint: revision 5, level with the store" in capsys.readouterr().out


def test_B14_a_checkpoint_of_a_newer_version_is_named_and_unreadable(tmp_path: Path) -> None:
    run = tmp_path / "run"
    _store(run, 2).close()
    path = checkpoint_path(run / "run.db")
    path.write_bytes(_head(2, "2026-12-01T09:00:00+00:00", b"{}", version=3) + b"{}\n")
    assert read_checkpoint_head(path) == (None, None, False)
    assert replica_facts(run / "run.db", 2)["status"] == "pending-sync"
    with pytest.raises(ReplicaFileError, match="version 3"):
        read_checkpoint(path)


@pytest.mark.parametrize("head", [
    b'{"format": "autodev-checkpoint", "version": 2, "kind": "base", "revision": "3", '
    b'"written_at": "2026-12-01T09:00:00+00:00", "bytes": 2, "crc32": 0}\n{}\n',
    b'{"format": "autodev-checkpoint", "version": 2, "kind": "base", "revision": 3, '
    b'"written_at": "yesterday", "bytes": 2, "crc32": 0}\n{}\n',
    b'{"format": "other", "version": 2, "kind": "base", "revision": 3, '
    b'"written_at": "2026-12-01T09:00:00+00:00", "bytes": 2, "crc32": 0}\n{}\n',
    b'{"format": "autodev-checkpoint", "version": 2, "kind": "base", "revision": 3, '
    b'"written_at": "2026-12-01T09:00:00+00:00", "bytes": 99, "crc32": 0}\n{}\n',
])
def test_B14_a_damaged_or_foreign_head_is_unreadable_and_status_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], head: bytes,
) -> None:
    run = tmp_path / "run"
    _store(run, 3).close()
    path = checkpoint_path(run / "run.db")
    path.write_bytes(head)
    assert read_checkpoint_head(path) == (None, None, False)
    with pytest.raises(ReplicaFileError, match=str(path)):
        read_checkpoint(path)
    assert main(["status", "--run", str(run)]) == 0
    assert "checkpoint: unreadable" in capsys.readouterr().out


@settings(max_examples=30, deadline=None)
@given(revisions=st.integers(1, 6), minutes=st.integers(0, 10_000),
       text=st.text(max_size=300))
def test_B14_status_reads_from_the_head_what_a_restore_reads_from_the_file(
    tmp_path_factory: pytest.TempPathFactory, revisions: int, minutes: int, text: str,
) -> None:
    run = tmp_path_factory.mktemp("run")
    when = NOW + timedelta(minutes=minutes)
    with _store(run, revisions, text=text) as store:
        assert write_checkpoint(store, checkpoint_path(store.path), now=when).ok
        snapshot = store.snapshot()
    path = checkpoint_path(run / "run.db")
    ckpt = read_checkpoint(path)
    assert ckpt is not None and ckpt.snapshot == snapshot and ckpt.written_at == when
    assert read_checkpoint_head(path) == (revisions, when.isoformat(), True)
