"""What does the daemon pay per revision, checkpoint included, as its thread grows? (SPEC B13-B16)

The daemon persists each revision through `Durability.persist_revision`: the commit to SQLite,
then the replica sync the core plans. The checkpoint holds the whole thread, so writing it
whole after every commit (what the daemon did before the sync cadence) costs time proportional
to the thread, and a run grows quadratically. The cadence (`DEFAULT_CADENCE`: every 25
revisions or 60 seconds, always at a flush) spread that cost over the revisions between two
writes, but each write still grew with the thread. The appending checkpoint writes what
changed since the file's revision as one record and rewrites the whole file only when the
records outgrow its base (docs/store.md), so its cost per revision is bounded by what the
revisions add.

Two runs are prepared: one whose thread holds 50 posts, one 2,000 (posts of 1,500 characters,
a run state of 8,000), each with a checkpoint level with its store. A round copies each, opens
it as a daemon does, and times a window of revisions persisted back to back (every other one
with a post, as a turn's start and its end; the virtual clock does not move, so only the
revision count of the cadence applies: the worst case, a daemon whose turns take no time). The
figure is the median over interleaved rounds of (time per revision at 2,000 posts) / (time per
revision at 50 posts): near 1 when a long run stays linear. The same is measured in the same
rounds with whole snapshots at the cadence (before the appending checkpoint) and with whole
snapshots after every commit (before the cadence) for comparison.

Deterministic figures beside it (they do not depend on the disk): checkpoints written, the
checkpoint's `fsync` calls and the bytes handed to `write` (`/proc/self/io`, the commit's
included) per revision. The commit's own sync (one per revision) is row 4′ of the performance
page.

    python bench/bench_checkpoint.py [--rounds N] [--dir DIR]
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from common import disk_bench_args

from autodev_core.control.identity import resolve_active_identity
from autodev_core.control.replicas import DEFAULT_CADENCE, SyncCadence
from autodev_shell.durability.checkpoint import write_checkpoint
from autodev_shell.durability.paths import checkpoint_path
from autodev_shell.durability.writes import Durability
from autodev_shell.store.run_store import NewPost, RunStore

#: "Near 1": the cost per revision at 2,000 posts over that at 50 (linear over a run).
TARGET_RATIO = 1.25
SMALL, LARGE = 50, 2_000
POST_CHARS, STATE_CHARS = 1_500, 8_000
#: Revisions per timed window: two of the default cadence's periods, and a few without it.
WINDOW, OLD_WINDOW = 2 * DEFAULT_CADENCE.revisions, 5
DEFAULT_ROUNDS = 9
#: "new": the daemon's checkpoint; "whole" and "old": what it wrote before (see `measure`).
KINDS = ("new", "whole", "old")
BASE = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
RUN = resolve_active_identity(run_id="bench")


def _post(revision: int) -> NewPost:
    return NewPost("ana", "claude:sonnet", "p" * POST_CHARS, BASE, key=f"turn-{revision}/0")


def _state(revision: int) -> str:
    return json.dumps({"revision": revision, "pad": "s" * STATE_CHARS})


def prepare(directory: Path, posts: int) -> Path:
    """A run folder whose store holds `posts` posts (one per revision) and a checkpoint level
    with it. Written with sync off: setup, not measured."""
    run = directory / f"base-{posts}"
    run.mkdir()
    store = RunStore.open(run / "run.db", create=True, run_id="bench", now=BASE)
    store._conn.execute("PRAGMA synchronous = OFF")  # the bench's own store, never a run's
    try:
        for revision in range(1, posts + 1):
            store.commit(revision, (_post(revision),), _state(revision),
                         persistence_state_json="{}", now=BASE, run_id="bench")
        write_checkpoint(store, checkpoint_path(store.path), now=BASE)
    finally:
        store.close()
    return run


def _io() -> int:
    """Bytes handed to `write` so far by this process (-1 off Linux)."""
    try:
        text = Path("/proc/self/io").read_text()
    except OSError:
        return -1
    return int(dict(line.split(": ") for line in text.splitlines())["wchar"])


@contextmanager
def counting_fsyncs() -> Iterator[list[int]]:
    """Count `os.fsync` calls (the checkpoint's file and directory syncs; SQLite syncs in C)."""
    count = [0]
    real = os.fsync

    def counted(fd: int) -> None:
        count[0] += 1
        real(fd)

    os.fsync = counted  # type: ignore[assignment]
    try:
        yield count
    finally:
        os.fsync = real  # type: ignore[assignment]


def window(base: Path, work: Path, cadence: SyncCadence | None,
           revisions: int, *, append: bool = True) -> dict[str, float]:
    """Persist `revisions` revisions on a copy of `base` as the daemon does; per revision:
    seconds, checkpoints, checkpoint fsyncs, bytes written. Without `append`, every checkpoint
    is a whole snapshot (what the daemon wrote before the appending checkpoint)."""
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(base, work)
    store = RunStore.open(work / "run.db")
    try:
        durability = Durability.open(store, RUN, cadence=cadence)
        first = store.revision + 1
        checkpoints = 0
        with counting_fsyncs() as fsyncs:
            written = _io()
            began = time.perf_counter()
            for revision in range(first, first + revisions):
                if not append:
                    durability._checkpoint_tail = None  # the bench's own: a whole rewrite
                posts = (_post(revision),) if revision % 2 == 0 else ()
                result = durability.persist_revision(revision, posts, _state(revision),
                                                     identity=RUN, now=BASE)
                checkpoints += result.checkpoint is not None
            took = time.perf_counter() - began
            written = _io() - written
    finally:
        store.close()
    return {"seconds": took / revisions, "checkpoints": checkpoints / revisions,
            "fsyncs": fsyncs[0] / revisions, "bytes": written / revisions}


def measure(directory: Path, rounds: int) -> dict[str, dict[str, float]]:
    """Medians over interleaved rounds: the daemon's appending checkpoint at the cadence
    ("new"), whole snapshots at the cadence (the daemon before the appending checkpoint:
    "whole") and whole snapshots after every commit (before the cadence: "old")."""
    bases = {SMALL: prepare(directory, SMALL), LARGE: prepare(directory, LARGE)}
    cases = [(size, kind) for kind in KINDS for size in (SMALL, LARGE)]
    seen: dict[tuple[int, str], list[dict[str, float]]] = {case: [] for case in cases}
    for round_ in range(rounds):
        turn = round_ % len(cases)  # rotate which goes first
        for size, kind in cases[turn:] + cases[:turn]:
            cadence = None if kind == "old" else DEFAULT_CADENCE
            revisions = OLD_WINDOW if kind == "old" else WINDOW
            seen[(size, kind)].append(window(bases[size], directory / "work", cadence,
                                             revisions, append=kind == "new"))
    result: dict[str, dict[str, float]] = {}
    for kind in KINDS:
        small, large = seen[(SMALL, kind)], seen[(LARGE, kind)]
        ratio = statistics.median(b["seconds"] / a["seconds"]
                                  for a, b in zip(small, large, strict=True))
        figures: dict[str, float] = {"ratio": ratio}
        for label, runs in (("small", small), ("large", large)):
            for key in ("seconds", "checkpoints", "fsyncs", "bytes"):
                figures[f"{label}_{key}"] = statistics.median(r[key] for r in runs)
        result[kind] = figures
    return result


def main(argv: list[str] | None = None) -> int:
    args = disk_bench_args(argv, __doc__.split("\n\n")[0], DEFAULT_ROUNDS)
    directory = Path(tempfile.mkdtemp(prefix="autodev-bench-", dir=args.dir))
    try:
        m = measure(directory, args.rounds)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    print(f"Persisting a revision as the daemon does, {args.rounds} interleaved rounds, medians; "
          f"threads of {SMALL} and {LARGE} posts.\n")
    print("| replica sync | ms/revision at 50 | ms/revision at 2,000 | ratio "
          "| checkpoints/revision | checkpoint fsyncs/revision | KB written/revision (50; 2,000) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for kind, label in (("new", "appended at the cadence (25 revisions / 60 s)"),
                        ("whole", "whole snapshot at the cadence (before)"),
                        ("old", "whole snapshot after every commit")):
        f = m[kind]
        print(f"| {label} | {f['small_seconds'] * 1e3:.2f} | {f['large_seconds'] * 1e3:.2f} "
              f"| {f['ratio']:.2f} | {f['large_checkpoints']:.3f} | {f['large_fsyncs']:.3f} "
              f"| {f['small_bytes'] / 1e3:,.1f}; {f['large_bytes'] / 1e3:,.1f} |")
    return 0 if m["new"]["ratio"] <= TARGET_RATIO else 1


if __name__ == "__main__":
    raise SystemExit(main())
