"""What `autodev status` says of the replicas (SPEC B13-B14, C6): the checkpoint beside the
store, and whether it is level with the store, "pending sync" (behind: normal between the
daemon's syncs, B14) or drifted.

Read with json alone, like the rest of a normal status (docs/performance.md): the checkpoint's
revision
and write time come from its frames' heads (autodev_shell/durability/frames.py), never from
its payloads, so status reads a few hundred bytes a frame however long the thread is. The
audit is the core's `audit_replicas`; for the cases a daemon leaves (no checkpoint yet, one
level with the store or behind it) its answer is restated here so that status loads no attrs,
and tests/shell/test_replica_status.py holds the two equal for every pair of revisions.
Anything else (a checkpoint ahead of the store, or a checkpoint without a store revision) asks
the core.
"""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from ..durability.frames import FrameDamage, NotFramed, scan
from ..durability.paths import CHECKPOINT_FORMAT, CHECKPOINT_SUFFIX

#: The checkpoint's replica name in the audit (`durability.CHECKPOINT_REPLICA`).
CHECKPOINT_REPLICA: Final = "checkpoint"


def read_checkpoint_head(path: Path) -> tuple[int | None, str | None, bool]:
    """(revision, written_at, readable) of the checkpoint at `path`: (None, None, True) when
    there is none, (None, None, False) when it cannot be read as one.

    A checkpoint of version 2 is read by its frames' heads alone (checkpoint_frames.py): a few
    hundred bytes a frame, whatever the thread holds; its revision is its last complete
    frame's. One of version 1 (a single JSON document) is read whole, as before."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None, None, True
    except OSError:
        return None, None, False
    try:
        frames, _end = scan(fd, os.fstat(fd).st_size, verify=False)
    except NotFramed as exc:
        if exc.version not in (None, 1):
            return None, None, False
        return _read_whole(fd)
    except (FrameDamage, OSError):
        return None, None, False
    finally:
        os.close(fd)
    return frames[-1].revision, frames[-1].written_at, True


def _read_whole(fd: int) -> tuple[int | None, str | None, bool]:
    """The head of a checkpoint of version 1, read as the whole JSON document it is."""
    try:
        text = _all(fd)
        data = json.loads(text)
        snapshot = data["snapshot"]
        revision = snapshot["revision"]
        written_at = data["written_at"]
        ok = (data["format"] == CHECKPOINT_FORMAT and isinstance(revision, int)
              and not isinstance(revision, bool) and isinstance(written_at, str)
              and datetime.fromisoformat(written_at).utcoffset() is not None)
    except (ValueError, TypeError, KeyError, OSError):
        ok = False
    if not ok:
        return None, None, False
    return revision, written_at, True


def _all(fd: int) -> bytes:
    os.lseek(fd, 0, os.SEEK_SET)
    return b"".join(iter(lambda: os.read(fd, 1 << 20), b""))


def audit_status(primary_revision: int, checkpoint_revision: int | None) -> str:
    """B14's status of the store and its checkpoint: "in-sync", "pending-sync", "drift" or
    "empty" (see the module doc for which cases are restated)."""
    if checkpoint_revision is None and primary_revision > 0:
        return "pending-sync"  # no checkpoint yet (or an unreadable one): the next sync writes it
    if checkpoint_revision is not None and 0 < checkpoint_revision <= primary_revision:
        return "in-sync" if checkpoint_revision == primary_revision else "pending-sync"
    from autodev_core.control.replicas import ReplicaState, audit_replicas

    replica = ReplicaState(CHECKPOINT_REPLICA, "backup", checkpoint_revision)
    return audit_replicas(primary_revision, (replica,)).status


def replica_facts(db: str | Path, primary_revision: int) -> dict[str, Any]:
    """`status --json`'s `replicas`: the audit's status and the checkpoint as read."""
    db = Path(db)
    path = db.with_name(db.name + CHECKPOINT_SUFFIX)
    revision, written_at, readable = read_checkpoint_head(path)
    behind = primary_revision - revision if revision is not None else None
    return {
        "status": audit_status(primary_revision, revision),
        "behind": behind if behind is not None and behind > 0 else None,
        "checkpoint": {"path": str(path), "revision": revision, "written_at": written_at,
                       "readable": readable},
    }


def replica_line(facts: dict[str, Any], ago: str | None, *, running: bool = True) -> str:
    """The `checkpoint:` line of `autodev status`; `ago` is how old its write is, if known, and
    `running` whether a daemon is there to sync a replica that is behind (after a kill -9 none
    is: the lag is then no longer the cadence's normal one)."""
    checkpoint = facts["checkpoint"]
    status = facts["status"]
    revision = checkpoint["revision"]
    when = f", written {ago}" if ago else ""
    if not checkpoint["readable"]:
        return (f"checkpoint: unreadable ({checkpoint['path']}); replicas pending sync, the "
                "daemon's next sync rewrites it")
    if revision is None:
        if status == "empty":
            return "checkpoint: none (the store holds nothing yet)"
        return "checkpoint: none yet; replicas pending sync (the store holds every revision)"
    if status == "in-sync":
        return f"checkpoint: revision {revision}, level with the store{when}"
    if status == "pending-sync":
        behind = facts["behind"]
        count = f"{behind} revision{'s' if behind != 1 else ''} behind the store"
        if not running:
            return (f"checkpoint: revision {revision}, {count}{when}: replicas pending sync; "
                    "no daemon is running to sync them (the store holds every revision; "
                    "the next autodev run catches the checkpoint up)")
        return (f"checkpoint: revision {revision}, {count}{when}: replicas pending sync (normal "
                "between syncs; the store holds every revision)")
    return f"checkpoint: revision {revision}{when}; {status}: ahead of the store (B14)"
