"""What does committing one revision to the canonical store cost? (SPEC C3)

One revision — one post plus the run state — is committed to the SQLite run store (WAL,
`synchronous=FULL`, one transaction), and the same bytes are written to a plain file on the
same disk with `write` + `fsync`. The two are interleaved round by round in the same run, so
both see the same disk; the figure is the ratio of the medians. Target: ≤ 1.5.

    python bench/bench_commit.py [--rounds N] [--dir DIR]

Prints a markdown table. DIR defaults to a fresh temporary directory (under the system's
temp directory); pass a directory on the disk the runs will live on to measure that disk.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from autodev_shell.store import NewPost, RunStore

#: The target of the issue: the store may cost at most this much more than a bare fsync.
TARGET_RATIO = 1.5
DEFAULT_ROUNDS = 200
WARMUP_ROUNDS = 10
#: (label, post characters, run-state characters): a short reply, a typical one, a long one.
PAYLOADS = (("small", 200, 1_000), ("typical", 2_000, 8_000), ("large", 8_000, 32_000))
BASE = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def _state(size: int, revision: int) -> str:
    return json.dumps({"revision": revision, "pad": "s" * size})


def _post(size: int, revision: int) -> NewPost:
    return NewPost("ana", "claude:sonnet", "p" * size, BASE + timedelta(seconds=revision),
                   key=f"turn-{revision}/0")


def _bare(fd: int, payload: bytes) -> float:
    start = time.perf_counter()
    os.write(fd, payload)
    os.fsync(fd)
    return time.perf_counter() - start


def _commit(store: RunStore, revision: int, post: NewPost, state: str, persistence: str) -> float:
    start = time.perf_counter()
    store.commit(revision, (post,), state, persistence_state_json=persistence,
                 now=BASE + timedelta(seconds=revision))
    return time.perf_counter() - start


def measure(directory: Path, label: str, post_chars: int, state_chars: int,
            rounds: int) -> dict[str, float]:
    store = RunStore.open(directory / f"{label}.db", create=True, run_id="bench", now=BASE)
    fd = os.open(directory / f"{label}.bin", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    persistence = json.dumps({"pending_persist": True, "queued_revision": 0})
    sqlite_times: list[float] = []
    bare_times: list[float] = []
    try:
        for revision in range(1, rounds + WARMUP_ROUNDS + 1):
            post, state = _post(post_chars, revision), _state(state_chars, revision)
            payload = (post.text + state + persistence).encode("utf-8")
            # Alternate which goes first, so neither always follows the other's fsync.
            if revision % 2:
                s, b = _commit(store, revision, post, state, persistence), _bare(fd, payload)
            else:
                b, s = _bare(fd, payload), _commit(store, revision, post, state, persistence)
            if revision > WARMUP_ROUNDS:
                sqlite_times.append(s)
                bare_times.append(b)
    finally:
        os.close(fd)
        store.close()
    sqlite_median = statistics.median(sqlite_times)
    bare_median = statistics.median(bare_times)
    return {"sqlite_ms": sqlite_median * 1e3, "bare_ms": bare_median * 1e3,
            "ratio": sqlite_median / bare_median}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS)
    parser.add_argument("--dir", type=Path, default=None,
                        help="directory on the disk to measure (default: a temp dir)")
    args = parser.parse_args(argv)
    directory = Path(tempfile.mkdtemp(prefix="autodev-bench-", dir=args.dir))
    try:
        rows = [(label, post, state, measure(directory, label, post, state, args.rounds))
                for label, post, state in PAYLOADS]
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    print(f"Commit of one revision (post + run state), {args.rounds} rounds after "
          f"{WARMUP_ROUNDS} warm-up, medians; SQLite {sqlite3.sqlite_version}, "
          f"Python {platform.python_version()}, {platform.system()} {platform.release()}, "
          f"in {directory.parent}.\n")
    print("| payload | post + state (chars) | SQLite commit, WAL + FULL (ms) "
          "| write + fsync (ms) | ratio | target |")
    print("| --- | --- | --- | --- | --- | --- |")
    worst = 0.0
    for label, post, state, m in rows:
        worst = max(worst, m["ratio"])
        verdict = "ok" if m["ratio"] <= TARGET_RATIO else "over"
        print(f"| {label} | {post} + {state} | {m['sqlite_ms']:.3f} | {m['bare_ms']:.3f} "
              f"| {m['ratio']:.2f} | ≤ {TARGET_RATIO} {verdict} |")
    return 0 if worst <= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
