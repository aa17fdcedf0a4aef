"""The checkpoint beside the run store, and restoring from it (SPEC C3, B13-B16).

* The **checkpoint** (`<db>.checkpoint.json`) is the backup replica: the canonical snapshot
  as a base and the records appended after it (frames: autodev_shell/durability/frames.py).
  Its source is chosen by the core (`plan_checkpoint`, B15): the store's snapshot and nothing
  else, so an export that fails or is empty fails the checkpoint with
  `primary-checkpoint-source-empty` instead of writing stale state. Whether a write appends a
  record or compacts the file is the core's `plan_checkpoint_write`.
* **Restoring** a store from the checkpoint happens only when the core's
  `plan_checkpoint_restore` allows it (B14): never while the primary is ahead.

The checkpoint is written whole atomically (`files.py`): a temp file in the same directory,
fsync, rename over the target, fsync of the directory. A reader sees the old file or the new
one, never half of one. A checkpoint record is appended with one fsync; a reader ignores a torn
last record.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import datetime
from pathlib import Path
from typing import Final

import attrs

from autodev_core.control.identity import RunIdentity, resolve_active_identity
from autodev_core.control.mutation import MutationContext, ensure_mutation_ready
from autodev_core.control.persistence import DEFAULT_TIERS, TierRoles
from autodev_core.control.replicas import (
    CheckpointGrowth,
    CheckpointPlan,
    PrimaryExport,
    RestoreDecision,
    plan_checkpoint,
    plan_checkpoint_restore,
    plan_checkpoint_write,
)
from autodev_core.serialization import from_json, to_json

from ..store.run_store import Post, RunStore, Snapshot, StoreError
from ..store.runlock import RunLock
from .files import (
    FILE_VERSION,
    ReplicaFileError,
    atomic_write_bytes,
    atomic_write_text,
    format_check,
    fsync_dir,
)
from .frames import (
    APPEND,
    BASE,
    VERSION,
    Frame,
    FrameDamage,
    NotFramed,
    encode_frame,
    scan,
)
from .paths import CHECKPOINT_FORMAT, REPLACED_SUFFIX, checkpoint_path, restoring_path

#: The checkpoint's version: frames, a base and appended records (durability/frames.py).
CHECKPOINT_VERSION: Final = VERSION
#: SQLite's companion files of a WAL database; they move with it.
_SIDE_FILES: Final = ("-wal", "-shm")

# --- the checkpoint (B15) -----------------------------------------------------------------------


@attrs.frozen
class CheckpointFile:
    """The checkpoint's content: the canonical snapshot and when it was taken."""

    written_at: datetime
    snapshot: Snapshot
    format: str = attrs.field(default=CHECKPOINT_FORMAT, validator=format_check(CHECKPOINT_FORMAT))
    version: int = FILE_VERSION

    @property
    def revision(self) -> int:
        return self.snapshot.revision


@attrs.frozen
class CheckpointWrite:
    """What writing the checkpoint did: `ok` with the revision written, or `failure` (the
    core's B15 reason, or "write-failed") and `error` (what the disk said)."""

    ok: bool
    path: str
    revision: int = 0
    failure: str | None = None
    error: str = ""
    plan: CheckpointPlan | None = None
    #: How it was written: "base" (the whole snapshot, replacing the file) or "append" (a
    #: record after what the file holds).
    kind: str = "base"
    #: The file as written, for the next append (None when nothing was written).
    tail: CheckpointTail | None = None


@attrs.frozen
class CheckpointTail:
    """What the checkpoint file on disk holds, as its last reader or writer left it: what an
    append needs to know (docs/store.md, "The checkpoint file"). `size` is where its complete
    frames end (the file's size, unless a torn append follows them); `device` and `inode` name
    the file, so that an append never lands on a file another writer replaced."""

    revision: int
    run_id: str
    integrity_id: str
    #: The file's last post (None: it holds none): an append starts from it, and the store
    #: must hold it unchanged (else the store is not the one the file follows: compact).
    last_post: Post | None
    base_bytes: int
    appended_bytes: int
    records: int
    size: int
    device: int
    inode: int


@attrs.frozen
class LoadedCheckpoint:
    """A checkpoint as read: its content, and its tail when it is of the framed version."""

    file: CheckpointFile
    tail: CheckpointTail | None = None


def read_checkpoint(path: Path) -> CheckpointFile | None:
    """The checkpoint at `path`, or None when there is none: the base and every complete
    record (a torn last record is ignored); a file of version 1 is read whole, as before."""
    loaded = load_checkpoint(path)
    return loaded.file if loaded is not None else None


def load_checkpoint(path: Path) -> LoadedCheckpoint | None:
    """`read_checkpoint`, with what an append to the file needs to know (its tail)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ReplicaFileError(f"The checkpoint file {path} cannot be read ({exc}).",
                               path=path) from exc
    try:
        stat = os.fstat(fd)
        try:
            frames, end = scan(fd, stat.st_size, verify=True)
        except NotFramed as exc:
            if exc.version is not None and exc.version != FILE_VERSION:
                raise ReplicaFileError(
                    f"The checkpoint file {path} is of version {exc.version!r}, which this "
                    "autodev cannot read.", path=path) from None
            return _read_whole(fd, path)
        except FrameDamage as exc:
            raise ReplicaFileError(f"The checkpoint file {path} is damaged: {exc}.",
                                   path=path) from None
        return _assemble(fd, path, frames, end, stat)
    except OSError as exc:
        raise ReplicaFileError(f"The checkpoint file {path} cannot be read ({exc}).",
                               path=path) from exc
    finally:
        os.close(fd)


def _read_whole(fd: int, path: Path) -> LoadedCheckpoint:
    """A checkpoint of version 1: one JSON document (read as before)."""
    text = b"".join(iter(lambda: os.read(fd, 1 << 20), b""))
    try:
        ckpt: CheckpointFile = from_json(text, CheckpointFile)
    except Exception as exc:  # json and cattrs errors alike: the file is not what it claims.
        raise ReplicaFileError(
            f"The checkpoint file {path} is not a valid checkpoint ({type(exc).__name__}).",
            path=path) from exc
    return LoadedCheckpoint(ckpt)


def _assemble(fd: int, path: Path, frames: list[Frame], end: int,
              stat: os.stat_result) -> LoadedCheckpoint:
    """The base with every complete record laid over it, checked frame by frame."""
    snapshot: Snapshot | None = None
    posts: list[Post] = []
    for frame in frames:
        name = "the base" if frame.number == 0 else f"record {frame.number}"
        where = f"{name} (frame {frame.number + 1}, at byte {frame.offset})"
        try:
            part: Snapshot = from_json(os.pread(fd, frame.length, frame.payload_at), Snapshot)
        except Exception as exc:  # json and cattrs errors alike
            raise ReplicaFileError(f"The checkpoint file {path} is damaged: {where} is not a "
                                   f"snapshot ({type(exc).__name__}).", path=path) from exc
        problem = ""
        if part.revision != frame.revision:
            problem = f"holds revision {part.revision}, its head says {frame.revision}"
        elif snapshot is not None and (part.run_id, part.integrity_id) != (
                snapshot.run_id, snapshot.integrity_id):
            problem = f"is of run {part.run_id!r}, the base of {snapshot.run_id!r}"
        elif part.posts and posts and part.posts[0].seq <= posts[-1].seq:
            problem = f"repeats post {part.posts[0].seq}"
        elif any(a.seq >= b.seq for a, b in zip(part.posts, part.posts[1:], strict=False)):
            problem = "holds its posts out of order"
        if problem:
            raise ReplicaFileError(f"The checkpoint file {path} is damaged: {where} {problem}.",
                                   path=path)
        posts.extend(part.posts)
        snapshot = part
    assert snapshot is not None  # `scan` returns the base at least
    last = frames[-1]
    whole = attrs.evolve(snapshot, posts=tuple(posts))
    ckpt = CheckpointFile(datetime.fromisoformat(last.written_at), whole,
                          version=CHECKPOINT_VERSION)
    base = frames[0].end
    tail = CheckpointTail(
        revision=whole.revision, run_id=whole.run_id, integrity_id=whole.integrity_id,
        last_post=posts[-1] if posts else None,
        base_bytes=base, appended_bytes=end - base, records=len(frames) - 1, size=end,
        device=stat.st_dev, inode=stat.st_ino)
    return LoadedCheckpoint(ckpt, tail)


def write_checkpoint(store: RunStore, path: Path, *, now: datetime,
                     tiers: TierRoles = DEFAULT_TIERS,
                     tail: CheckpointTail | None = None) -> CheckpointWrite:
    """Export the store's snapshot and write it as the checkpoint, as the core plans (B15).

    With the `tail` of the file on disk (as `load_checkpoint` or the last write left it), what
    changed since its revision is appended as one record when the core's
    `plan_checkpoint_write` says so; otherwise the whole snapshot is written as a new base
    (a compaction). The export failing or holding revision ≤ 0 fails with the core's reason;
    there is no other source to fall back on, by design.
    """
    if tail is not None:
        appended = _append_record(store, path, now=now, tiers=tiers, tail=tail)
        if appended is not None:
            return appended
    snapshot: Snapshot | None
    error = ""
    try:
        snapshot = store.snapshot()
        export = PrimaryExport(snapshot.revision)
    except StoreError as exc:
        snapshot, error = None, str(exc)
        export = PrimaryExport(0, ok=False)
    plan = plan_checkpoint(store.tier, export, tiers=tiers)
    if not plan.ok or snapshot is None or plan.source != "primary-snapshot":
        return CheckpointWrite(False, str(path), 0, plan.failure, error, plan)
    try:
        tail = write_base(path, snapshot, now=now)
    except OSError as exc:
        return CheckpointWrite(False, str(path), 0, "write-failed", str(exc), plan)
    return CheckpointWrite(True, str(path), plan.revision, None, "", plan, tail=tail)


class _Replaced(Exception):
    """The checkpoint file is not the one its tail describes: the write compacts instead."""


def _append_record(store: RunStore, path: Path, *, now: datetime, tiers: TierRoles,
                   tail: CheckpointTail) -> CheckpointWrite | None:
    """Append what changed since `tail.revision` as one record, with one fsync; None when the
    write must compact instead (the core says so, or the file or the store is not the one
    the tail follows)."""
    try:
        # From the file's last post on: the store must still hold it, the same (a prefix).
        last = tail.last_post
        delta = store.snapshot(after_seq=last.seq - 1 if last is not None else 0)
        export = PrimaryExport(delta.revision)
    except StoreError as exc:
        plan = plan_checkpoint(store.tier, PrimaryExport(0, ok=False), tiers=tiers)
        return CheckpointWrite(False, str(path), 0, plan.failure, str(exc), plan, kind="append")
    plan = plan_checkpoint(store.tier, export, tiers=tiers)
    if not plan.ok or plan.source != "primary-snapshot":
        return CheckpointWrite(False, str(path), 0, plan.failure, "", plan, kind="append")
    posts = delta.posts
    if last is not None:
        if not posts or posts[0] != last:
            return None
        posts = posts[1:]
    if ((delta.run_id, delta.integrity_id) != (tail.run_id, tail.integrity_id)
            or delta.revision < tail.revision):
        return None
    payload = to_json(attrs.evolve(delta, posts=posts)).encode("utf-8")
    frame = encode_frame(APPEND, delta.revision, now.isoformat(), payload)
    growth = CheckpointGrowth(tail.base_bytes, tail.appended_bytes)
    if plan_checkpoint_write(growth, len(frame)) != "append":
        return None
    try:
        _append(path, frame, tail)
    except _Replaced:
        return None
    except OSError as exc:
        return CheckpointWrite(False, str(path), 0, "write-failed", str(exc), plan,
                               kind="append")
    written = attrs.evolve(
        tail, revision=delta.revision, appended_bytes=tail.appended_bytes + len(frame),
        records=tail.records + 1, size=tail.size + len(frame),
        last_post=posts[-1] if posts else last)
    return CheckpointWrite(True, str(path), plan.revision, None, "", plan, kind="append",
                           tail=written)


def _append(path: Path, frame: bytes, tail: CheckpointTail) -> None:
    """Append `frame` to the file `tail` describes and fsync it. A write or sync that fails
    (a full disk) cuts the file back to where it was, if it can: a torn record is ignored by
    readers anyway, and the next write compacts when the file is not where its tail says."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    except FileNotFoundError:
        raise _Replaced from None
    try:
        stat = os.fstat(fd)
        if (stat.st_dev, stat.st_ino, stat.st_size) != (tail.device, tail.inode, tail.size):
            raise _Replaced
        try:
            view = memoryview(frame)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        except OSError:
            with suppress(OSError):
                os.ftruncate(fd, tail.size)
            raise
    finally:
        os.close(fd)


def write_base(path: Path, snapshot: Snapshot, *, now: datetime) -> CheckpointTail:
    """Write `snapshot` as the whole checkpoint (one base frame), atomically; returns the
    file's tail. Raises OSError."""
    payload = to_json(snapshot).encode("utf-8")
    frame = encode_frame(BASE, snapshot.revision, now.isoformat(), payload)
    atomic_write_bytes(path, frame)
    stat = os.stat(path)
    last = snapshot.posts[-1] if snapshot.posts else None
    return CheckpointTail(
        revision=snapshot.revision, run_id=snapshot.run_id, integrity_id=snapshot.integrity_id,
        last_post=last,
        base_bytes=len(frame), appended_bytes=0, records=0, size=len(frame),
        device=stat.st_dev, inode=stat.st_ino)


# --- restoring from the checkpoint (B14) --------------------------------------------------------


@attrs.frozen
class RestoreOffer:
    """Whether the store at `db_path` may be restored from its checkpoint, as the core decides
    (B14), and one sentence saying so. `problem` is why the store could not be opened."""

    decision: RestoreDecision
    db_path: str
    checkpoint_path: str
    message: str
    problem: str = ""

    @property
    def allowed(self) -> bool:
        return self.decision.allowed


@attrs.frozen
class RestoreResult:
    restored: bool
    offer: RestoreOffer
    revision: int = 0
    replaced: str | None = None


def _primary(db_path: Path) -> tuple[int | None, RunIdentity | None, str]:
    """The store's revision and run identity, or None with the reason when it cannot be opened
    (corrupt, truncated, missing): a primary that cannot be read holds nothing reliable (B13)."""
    try:
        with RunStore.open(db_path) as store:
            identity = resolve_active_identity(
                run_id=store.run_id, integrity_id=store.integrity_id, aliases=store.aliases())
            return store.revision, identity, ""
    except StoreError as exc:
        return None, None, str(exc)


def offer_restore(db_path: str | os.PathLike[str],
                  checkpoint: str | os.PathLike[str] | None = None) -> RestoreOffer:
    """Ask the core whether the checkpoint may replace the store (B1, B3, B14) and say why in
    one sentence. A checkpoint file that cannot be read raises `ReplicaFileError`."""
    db = Path(db_path)
    ckpt_path = Path(checkpoint) if checkpoint is not None else checkpoint_path(db)
    primary, identity, problem = _primary(db)
    ckpt = read_checkpoint(ckpt_path)
    decision = plan_checkpoint_restore(
        primary, ckpt.revision if ckpt else None, store_identity=identity,
        checkpoint_run_id=ckpt.snapshot.run_id if ckpt else None,
    )
    message = _offer_message(decision, db, ckpt_path)
    if decision.reason == "other-run" and ckpt is not None and identity is not None:
        message = (f"Restoring {db} from the checkpoint {ckpt_path} is refused: the checkpoint "
                   f"belongs to run {ckpt.snapshot.run_id!r}, the store to run "
                   f"{identity.host_id or identity.run_id!r}; the store is kept as it is.")
    return RestoreOffer(decision, str(db), str(ckpt_path), message, problem)


def _offer_message(decision: RestoreDecision, db: Path, ckpt: Path) -> str:
    have = f"revision {decision.checkpoint_revision}"
    primary = f"revision {decision.primary_revision}"
    return {
        "no-checkpoint": f"There is no checkpoint to restore {db} from ({ckpt} is missing).",
        "primary-missing": f"The run store {db} holds nothing readable; the checkpoint {ckpt} "
                           f"({have}) can be restored.",
        "checkpoint-ahead": f"The checkpoint {ckpt} ({have}) is newer than the run store {db} "
                            f"({primary}) and can be restored.",
        "up-to-date": f"The run store {db} already holds {primary}, the same as the checkpoint "
                      f"{ckpt}; there is nothing to restore.",
        "primary-ahead": f"Restoring {db} from the checkpoint {ckpt} is refused: the store "
                         f"holds {primary}, newer than the checkpoint's {have}, and would "
                         "lose it.",
        "other-run": f"Restoring {db} from the checkpoint {ckpt} is refused: the checkpoint "
                     "belongs to another run.",
    }[decision.reason]


def _stamp(now: datetime) -> str:
    return now.strftime("%Y%m%dT%H%M%S%f")


def restore_from_checkpoint(
    db_path: str | os.PathLike[str],
    *,
    now: datetime,
    checkpoint: str | os.PathLike[str] | None = None,
    lock: RunLock | None = None,
) -> RestoreResult:
    """Replace the store with the checkpoint's snapshot, only when the core allows (B14).

    Holds the run lock meanwhile (a running daemon makes this raise `RunLockedError`); a
    daemon restoring at start passes the `lock` it already holds. The old
    database and its WAL files are moved aside as `<db>.replaced-<time>`, never deleted; the
    new store is filled from the snapshot in one transaction.
    """
    db = Path(db_path)
    with _locked(db, lock):
        offer = offer_restore(db, checkpoint)
        if not offer.allowed:
            return RestoreResult(False, offer)
        ckpt = read_checkpoint(Path(offer.checkpoint_path))
        if ckpt is None:  # Vanished between the offer and now.
            return RestoreResult(False, offer)
        replaced: str | None = None
        # B10/B11: the restore lock is held from here until the new store is whole; a daemon
        # that finds it writes nothing (a restore that died half-way is run again).
        atomic_write_text(restoring_path(db), f"{os.getpid()} {now.isoformat()}\n")
        if db.exists():
            aside = db.with_name(db.name + REPLACED_SUFFIX + _stamp(now))
            for suffix in ("", *_SIDE_FILES):
                source = db.with_name(db.name + suffix)
                if source.exists():
                    os.replace(source, aside.with_name(aside.name + suffix))
            fsync_dir(db.parent)
            replaced = str(aside)
        snap = ckpt.snapshot
        identity = resolve_active_identity(run_id=snap.run_id, integrity_id=snap.integrity_id,
                                           aliases=snap.aliases)
        with RunStore.open(db, create=True, run_id=snap.run_id, now=now) as store:
            # B10: a store made empty a moment ago is the one state a restore may fill.
            ensure_mutation_ready(
                f"restore revision {snap.revision} into {db}",
                MutationContext(identity, load_state="empty-confirmed" if store.revision == 0
                                else "loaded", initialised=True),
            )
            store.import_snapshot(snap, now=now)
            revision = store.revision
        restoring_path(db).unlink(missing_ok=True)
        fsync_dir(db.parent)
        return RestoreResult(True, offer, revision, replaced)


@contextmanager
def _locked(db: Path, held: RunLock | None) -> Iterator[None]:
    if held is not None and held.held:
        yield
        return
    # Named by its folder, as the operator gave it (`--run DIR`), not by the store's file name.
    with RunLock.acquire(db, run=str(db.parent)):
        yield
