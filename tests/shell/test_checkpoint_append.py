"""The appending checkpoint (SPEC B13-B16, C3; docs/store.md, "The checkpoint
file").

A checkpoint is a base (the whole snapshot) and records appended after it (what changed since
the previous frame); a record is appended with one fsync, and the file is compacted (rewritten
as one base) when the records would outgrow the base. A reader takes the base and every
complete record; a torn last record (a kill -9 or a full disk in the middle of an append) is
ignored, and damage anywhere else is an error naming the file, the frame and its byte.

The models here restate the rules: what a checkpoint of revision r must restore is what the
test itself committed up to r, and the growth rule is the docs' sentence.
"""

from __future__ import annotations

import errno
import os
import shutil
import zlib
from datetime import timedelta
from pathlib import Path

import pytest
from helpers.clock import T0 as NOW
from hypothesis import event, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from autodev_core.control.replicas import (
    CheckpointGrowth,
    plan_checkpoint_write,
)
from autodev_shell.durability.checkpoint import (
    CheckpointTail,
    load_checkpoint,
    read_checkpoint,
    restore_from_checkpoint,
    write_checkpoint,
)
from autodev_shell.durability.files import ReplicaFileError
from autodev_shell.durability.paths import checkpoint_path
from autodev_shell.status.replica_status import read_checkpoint_head
from autodev_shell.store.run_store import NewPost, RunStore

# --- the growth rule (the core's policy) --------------------------------------------------------


@given(st.integers(0, 10**9), st.integers(0, 10**9), st.integers(0, 10**9))
def test_B15_a_record_is_appended_while_the_records_fit_in_the_base(
    base: int, appended: int, record: int,
) -> None:
    # docs/store.md: append while the records, this one included, hold no more than the base.
    expected = "append" if appended + record <= base else "compact"
    assert plan_checkpoint_write(CheckpointGrowth(base, appended), record) == expected
    assert plan_checkpoint_write(None, record) == "compact"


@given(start=st.integers(1, 10**6), state=st.integers(1, 10**5),
       added=st.lists(st.integers(0, 10**6), min_size=1, max_size=300))
def test_B15_the_bytes_written_stay_bounded_by_what_the_revisions_add(
    start: int, state: int, added: list[int],
) -> None:
    # A run whose thread starts at `start` bytes; each checkpoint brings `added[i]` new bytes
    # of posts, and its record also holds the run state (`state` bytes). Written in all, over
    # the run: at most three times the records' bytes, plus the first base: linear, whatever
    # the thread holds (a whole rewrite each time would write the whole thread each time).
    content, base, appended, written, records = start, start, 0, start, 0
    for new in added:
        content += new
        record = new + state
        records += record
        if plan_checkpoint_write(CheckpointGrowth(base, appended), record) == "append":
            appended += record
            written += record
        else:
            base, appended = content + state, 0
            written += base
    assert written <= 3 * records + start + state


def test_B15_the_growth_rule_refuses_what_is_not_a_byte_count() -> None:
    for bad in (-1, True, 1.5):
        with pytest.raises(ValueError):
            plan_checkpoint_write(CheckpointGrowth(1, 1), bad)  # type: ignore[arg-type]
        with pytest.raises(ValueError):
            CheckpointGrowth(bad, 0)  # type: ignore[arg-type]


# --- helpers ------------------------------------------------------------------------------------


def _post(revision: int, index: int, size: int) -> NewPost:
    return NewPost("ana", "codex", f"{revision}.{index}:" + "é" * size,
                   NOW + timedelta(seconds=revision), key=f"k{revision}.{index}")


def _store(directory: Path) -> RunStore:
    return RunStore.open(directory / "run.db", create=True, run_id="run-a", now=NOW)


def _commit(store: RunStore, revision: int, posts: int, size: int = 10) -> None:
    store.commit(revision, tuple(_post(revision, i, size) for i in range(posts)),
                 f'{{"r": {revision}}}', persistence_state_json=f'{{"p": {revision}}}',
                 now=NOW + timedelta(seconds=revision))


def _frames(path: Path) -> list[int]:
    """Where each frame starts, read the plain way: a head line, then `bytes` of payload."""
    import json

    data = path.read_bytes()
    starts, offset = [], 0
    while offset < len(data):
        starts.append(offset)
        newline = data.index(b"\n", offset)
        offset = newline + 1 + json.loads(data[offset:newline])["bytes"] + 1
    return starts


def _appended_store(tmp_path: Path) -> tuple[RunStore, Path, CheckpointTail]:
    """A store at revision 3 with a base of revision 1 and records of revisions 2 and 3."""
    store = _store(tmp_path)
    path = checkpoint_path(store.path)
    tail = None
    for revision in (1, 2, 3):
        _commit(store, revision, 2, size=5000 if revision == 1 else 10)
        written = write_checkpoint(store, path, now=NOW + timedelta(minutes=revision), tail=tail)
        assert written.ok and written.kind == ("base" if revision == 1 else "append")
        tail = written.tail
    assert tail is not None and tail.records == 2
    return store, path, tail


# --- appending, reading, torn records -----------------------------------------------------------


def test_B15_a_record_holds_what_changed_and_the_file_reads_as_the_whole_snapshot(
    tmp_path: Path,
) -> None:
    store, path, _tail = _appended_store(tmp_path)
    with store:
        ckpt = read_checkpoint(path)
        assert ckpt is not None and ckpt.snapshot == store.snapshot() and ckpt.revision == 3
        assert ckpt.written_at == NOW + timedelta(minutes=3)
        assert read_checkpoint_head(path) == (3, ckpt.written_at.isoformat(), True)
        assert len(_frames(path)) == 3


def test_B15_a_torn_last_record_is_ignored_at_any_byte(tmp_path: Path) -> None:
    store, path, _tail = _appended_store(tmp_path)
    store.close()
    whole = path.read_bytes()
    last = _frames(path)[-1]
    previous = read_checkpoint(path)
    assert previous is not None
    for cut in range(last, len(whole)):
        path.write_bytes(whole[:cut])
        ckpt = read_checkpoint(path)
        assert ckpt is not None and ckpt.revision == 2, cut
        assert [p.key for p in ckpt.snapshot.posts] == ["k1.0", "k1.1", "k2.0", "k2.1"]
        assert read_checkpoint_head(path)[:2] == (2, (NOW + timedelta(minutes=2)).isoformat())
    # Space a crash allotted to the append, its bytes never written: zeros, also a torn record;
    # the same when only its head reached the disk.
    head_end = whole.index(b"\n", last) + 1
    for start in (last, head_end):
        path.write_bytes(whole[:start] + b"\0" * (len(whole) - start))
        ckpt = read_checkpoint(path)
        assert ckpt is not None and ckpt.revision == 2 and read_checkpoint_head(path)[0] == 2
    # A last record whose payload does not match its checksum is torn too, for a restore.
    damaged = bytearray(whole)
    damaged[head_end + 3] ^= 0x01
    path.write_bytes(bytes(damaged))
    ckpt = read_checkpoint(path)
    assert ckpt is not None and ckpt.revision == 2


def test_B15_a_damaged_record_before_the_last_is_an_error_naming_file_record_and_byte(
    tmp_path: Path,
) -> None:
    store, path, _tail = _appended_store(tmp_path)
    store.close()
    data = bytearray(path.read_bytes())
    first_record = _frames(path)[1]
    payload = data.index(b"\n", first_record) + 5
    data[payload] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(ReplicaFileError) as raised:
        read_checkpoint(path)
    message = str(raised.value)
    assert str(path) in message and f"record 1 (frame 2, at byte {first_record})" in message
    # The base damaged: the same, naming the base.
    data = bytearray(path.read_bytes())
    data[first_record - 5] ^= 0x01
    data[payload] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(ReplicaFileError, match=r"the base \(frame 1, at byte 0\)"):
        read_checkpoint(path)


def test_B15_a_record_that_does_not_follow_its_base_is_damage(tmp_path: Path) -> None:
    store, path, _tail = _appended_store(tmp_path)
    store.close()
    data = path.read_bytes()
    second = _frames(path)[2]
    # The last record twice: its posts repeat the previous record's.
    path.write_bytes(data + data[second:])
    with pytest.raises(ReplicaFileError, match=r"record 3 \(frame 4, at byte \d+\) repeats"):
        read_checkpoint(path)


def test_B15_the_records_outgrowing_the_base_compact_the_file(tmp_path: Path) -> None:
    store = _store(tmp_path)
    path = checkpoint_path(store.path)
    kinds = []
    tail = None
    with store:
        for revision in range(1, 40):
            _commit(store, revision, 1, size=300)
            written = write_checkpoint(store, path, now=NOW, tail=tail)
            assert written.ok and written.tail is not None
            kinds.append(written.kind)
            tail = written.tail
            assert tail.appended_bytes <= tail.base_bytes
            assert path.stat().st_size == tail.size
            ckpt = read_checkpoint(path)
            assert ckpt is not None and ckpt.snapshot == store.snapshot()
    assert kinds[0] == "base" and "append" in kinds and kinds.count("base") > 1


def test_B15_an_append_to_a_file_another_writer_replaced_compacts_instead(
    tmp_path: Path,
) -> None:
    store, path, tail = _appended_store(tmp_path)
    with store:
        _commit(store, 4, 1)
        path.write_bytes(path.read_bytes())  # same bytes, another file (a copy put back)
        shutil.copy(path, tmp_path / "copy")
        os.replace(tmp_path / "copy", path)
        written = write_checkpoint(store, path, now=NOW, tail=tail)
        assert written.ok and written.kind == "base"
        assert read_checkpoint(path).snapshot == store.snapshot()  # type: ignore[union-attr]


def test_B15_a_torn_tail_left_on_disk_makes_the_next_write_compact(tmp_path: Path) -> None:
    store, path, _tail = _appended_store(tmp_path)
    with store:
        with path.open("ab") as handle:
            handle.write(b'{"format":"autodev-checkpoint","vers')
        loaded = load_checkpoint(path)
        assert loaded is not None and loaded.file.revision == 3 and loaded.tail is not None
        _commit(store, 4, 1)
        written = write_checkpoint(store, path, now=NOW, tail=loaded.tail)
        assert written.ok and written.kind == "base"
        assert read_checkpoint(path).snapshot == store.snapshot()  # type: ignore[union-attr]


def test_B15_C3_a_full_disk_in_the_middle_of_an_append_leaves_the_checkpoint_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    store, path, tail = _appended_store(tmp_path)
    before = path.read_bytes()
    real_write = os.write

    def half_then_full(fd: int, data: bytes | memoryview) -> int:
        if len(data) > 64:  # the record: half of it reaches the file, then the disk is full
            real_write(fd, bytes(data[: len(data) // 2]))
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    with store:
        _commit(store, 4, 3)
        monkeypatch.setattr(os, "write", half_then_full)
        written = write_checkpoint(store, path, now=NOW, tail=tail)
        monkeypatch.setattr(os, "write", real_write)
        assert not written.ok and written.failure == "write-failed"
        assert "No space left" in written.error
        assert path.read_bytes() == before  # cut back to where it was
        assert read_checkpoint(path).revision == 3  # type: ignore[union-attr]
        # The disk has room again: the next write appends after the intact file.
        written = write_checkpoint(store, path, now=NOW, tail=tail)
        assert written.ok and written.kind == "append" and written.revision == 4
        assert read_checkpoint(path).snapshot == store.snapshot()  # type: ignore[union-attr]

        # The same, the file not even cut back: a torn record is left, read past, compacted.
        _commit(store, 5, 2)
        assert written.tail is not None
        monkeypatch.setattr(os, "write", half_then_full)
        monkeypatch.setattr(os, "ftruncate", lambda *_a: (_ for _ in ()).throw(OSError("no")))
        failed = write_checkpoint(store, path, now=NOW, tail=written.tail)
        monkeypatch.undo()
        assert not failed.ok and path.stat().st_size > written.tail.size
        assert read_checkpoint(path).revision == 4  # type: ignore[union-attr]
        assert read_checkpoint_head(path)[0] == 4
        again = write_checkpoint(store, path, now=NOW, tail=written.tail)
        assert again.ok and again.kind == "base"
        assert read_checkpoint(path).snapshot == store.snapshot()  # type: ignore[union-attr]


def test_B14_restore_from_an_appended_checkpoint_gives_the_store_back(tmp_path: Path) -> None:
    store, path, _tail = _appended_store(tmp_path)
    with store:
        expected = store.snapshot()
    other = tmp_path / "elsewhere"
    other.mkdir()
    shutil.copy(path, checkpoint_path(other / "run.db"))
    result = restore_from_checkpoint(other / "run.db", now=NOW)
    assert result.restored and result.revision == 3
    with RunStore.open(other / "run.db") as restored:
        snapshot = restored.snapshot()
    assert snapshot.posts == expected.posts
    assert (snapshot.revision, snapshot.scheduler_state_json, snapshot.run_id) == (
        expected.revision, expected.scheduler_state_json, expected.run_id)


# --- the state machine --------------------------------------------------------------------------


class AppendingCheckpoint(RuleBasedStateMachine):
    """Commits, checkpoints (appends and compactions, as the core decides), torn appends at
    any byte, full disks, daemon restarts and restores. The model is what the test committed:
    the posts (key, text) in order and the run state of each revision, and the revision the
    checkpoint holds; the file must always read as exactly that."""

    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(__import__("tempfile").mkdtemp(prefix="r5-ckpt-"))
        self.store = _store(self.tmp)
        self.path = checkpoint_path(self.store.path)
        self.revision = 0
        self.posts: list[tuple[str, str, int]] = []  # key, text, revision
        self.count_at: dict[int, int] = {}  # revision -> posts committed up to it
        self.held = 0  # the revision the checkpoint holds (0: none)
        self.tail: CheckpointTail | None = None
        self.restores = 0

    def teardown(self) -> None:
        self.store.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    @initialize()
    def first(self) -> None:
        self.commit(1, 20)

    @rule(posts=st.integers(0, 4), size=st.sampled_from([0, 20, 400]))
    def commit(self, posts: int, size: int) -> None:
        self.revision += 1
        _commit(self.store, self.revision, posts, size)
        for index in range(posts):
            post = _post(self.revision, index, size)
            self.posts.append((post.key, post.text, self.revision))
        self.count_at[self.revision] = len(self.posts)

    @rule()
    def checkpoint(self) -> None:
        written = write_checkpoint(self.store, self.path, now=NOW, tail=self.tail)
        assert written.ok, written
        event(f"checkpoint: {written.kind}")
        self.tail = written.tail
        self.held = self.revision

    @precondition(lambda self: self.held > 0)
    @rule(data=st.data())
    def torn_append(self, data: st.DataObject) -> None:
        # A kill -9 or a power cut while a record is appended: its first bytes (or zeros).
        self.commit(1, 20)
        scratch = self.tmp / "scratch"
        shutil.copy(self.path, scratch)
        written = write_checkpoint(self.store, scratch, now=NOW, tail=self._tail_of(scratch))
        start = self.path.stat().st_size
        frame = scratch.read_bytes()[start:]
        scratch.unlink()
        if not (written.ok and written.kind == "append" and frame):
            return  # the core would compact here: nothing appends, nothing can tear
        cut = data.draw(st.integers(0, len(frame) - 1), label="cut")
        event("torn append")
        how = data.draw(st.sampled_from(["bytes", "zeros", "head, then zeros"]), label="how")
        head = frame.index(b"\n") + 1
        torn = {"bytes": frame[:cut], "zeros": b"\0" * (cut + 1),
                "head, then zeros": frame[:head] + b"\0" * (len(frame) - head)}[how]
        with self.path.open("ab") as handle:
            handle.write(torn)

    def _tail_of(self, path: Path) -> CheckpointTail | None:
        loaded = load_checkpoint(path)
        return loaded.tail if loaded is not None else None

    @precondition(lambda self: self.tail is not None)
    @rule(fraction=st.floats(0, 1))
    def full_disk(self, fraction: float) -> None:
        self.commit(2, 20)
        real = os.write

        def full(fd: int, data: bytes | memoryview) -> int:
            real(fd, bytes(data[: int(len(data) * fraction)]))
            raise OSError(errno.ENOSPC, "No space left on device")

        os.write = full  # type: ignore[assignment]
        try:
            written = write_checkpoint(self.store, self.path, now=NOW, tail=self.tail)
        finally:
            os.write = real  # type: ignore[assignment]
        if written.ok:  # not an append (the core compacts): the rename wrote it whole
            assert written.kind == "base"
            self.tail, self.held = written.tail, self.revision
        else:
            assert written.failure == "write-failed" and "No space" in written.error

    @rule()
    def restart(self) -> None:
        # A daemon starting reads the file and appends after it, as it found it.
        self.tail = self._tail_of(self.path)

    @precondition(lambda self: self.held > 0 and self.restores < 2)
    @rule()
    def restore(self) -> None:
        self.restores += 1
        elsewhere = self.tmp / f"restore-{self.restores}"
        elsewhere.mkdir()
        shutil.copy(self.path, checkpoint_path(elsewhere / "run.db"))
        result = restore_from_checkpoint(elsewhere / "run.db", now=NOW)
        assert result.restored and result.revision == self.held
        with RunStore.open(elsewhere / "run.db") as restored:
            self._check(restored.snapshot())

    def _check(self, snapshot: object) -> None:
        from autodev_shell.store.run_store import Snapshot

        assert isinstance(snapshot, Snapshot)
        count = self.count_at[self.held]
        assert [(p.key, p.text, p.revision) for p in snapshot.posts] == self.posts[:count]
        assert [p.seq for p in snapshot.posts] == list(range(1, count + 1))
        assert snapshot.revision == self.held
        assert snapshot.scheduler_state_json == f'{{"r": {self.held}}}'
        assert snapshot.persistence_state_json == f'{{"p": {self.held}}}'
        assert snapshot.run_id == "run-a"

    @invariant()
    def the_file_reads_as_the_held_revision(self) -> None:
        if self.held == 0:
            assert not self.path.exists()
            return
        ckpt = read_checkpoint(self.path)
        assert ckpt is not None and ckpt.revision == self.held
        self._check(ckpt.snapshot)
        assert read_checkpoint_head(self.path)[:1] == (self.held,)
        loaded = load_checkpoint(self.path)
        assert loaded is not None and loaded.tail is not None
        assert loaded.tail.appended_bytes <= loaded.tail.base_bytes


#: Each step writes real files (and a restore a store): a short run in CI, longer if thorough.
_THOROUGH = os.environ.get("HYPOTHESIS_PROFILE") == "thorough"
AppendingCheckpoint.TestCase.settings = settings(
    AppendingCheckpoint.TestCase.settings, deadline=None,
    max_examples=300 if _THOROUGH else 20, stateful_step_count=60 if _THOROUGH else 25)
test_B15_the_appending_checkpoint_restores_what_was_committed = AppendingCheckpoint.TestCase


def test_checksums_are_zlibs_crc32() -> None:
    # docs/store.md names the checksum; a frame's head holds zlib's CRC-32 of its payload.
    from autodev_shell.durability.frames import encode_frame

    payload = b'{"x":1}'
    frame = encode_frame("append", 7, NOW.isoformat(), payload)
    head, rest = frame.split(b"\n", 1)
    assert f'"crc32":{zlib.crc32(payload)}'.encode() in head and rest == payload + b"\n"


def test_B15_an_append_from_a_store_the_file_does_not_follow_compacts_instead(
    tmp_path: Path,
) -> None:
    store, path, tail = _appended_store(tmp_path)
    store.close()
    # Another store of the same run name whose thread differs at the file's last post (its
    # key the same, its text not): appending what follows would mix two threads.
    other_dir = tmp_path / "other"
    other_dir.mkdir()
    with _store(other_dir) as other:
        for revision in (1, 2, 3):
            _commit(other, revision, 2, size=11)
        _commit(other, 4, 1)
        written = write_checkpoint(other, path, now=NOW, tail=tail)
        assert written.ok and written.kind == "base"
        assert read_checkpoint(path).snapshot == other.snapshot()  # type: ignore[union-attr]


def test_B15_C3_an_append_on_a_really_full_disk_fails_cleanly_and_the_next_one_appends(
    tmp_path: Path,
) -> None:
    from helpers.disks import fill, tmpfs

    with tmpfs(tmp_path / "disk") as disk:
        store, path, tail = _appended_store(disk)
        with store:
            before = path.read_bytes()
            _commit(store, 4, 3, size=1000)  # more than a page: the disk must take it
            filler = fill(disk)
            written = write_checkpoint(store, path, now=NOW, tail=tail)
            assert not written.ok and written.failure == "write-failed", written
            assert path.read_bytes() == before
            assert read_checkpoint(path).revision == 3  # type: ignore[union-attr]
            assert read_checkpoint_head(path)[0] == 3
            filler.unlink()
            written = write_checkpoint(store, path, now=NOW, tail=tail)
            assert written.ok and written.kind == "append" and written.revision == 4
            assert read_checkpoint(path).snapshot == store.snapshot()  # type: ignore[union-attr]
