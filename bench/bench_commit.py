"""What does committing one revision to the canonical store cost? (SPEC C3)

One revision — one post plus the run state — is committed to the SQLite run store (WAL,
`synchronous=FULL`, one transaction), and the same bytes are written to a plain file on the
same disk with `write` + `fsync`. The two are interleaved round by round in the same run, so
both see the same disk; the figure is the median over rounds of the per-round ratio. Target:
≤ 1.5. fsync latency on a shared VM swings by an order of magnitude within minutes, so three
figures that do not depend on the disk's mood are reported beside it (issue 13):

- syncs per revision: `fsync`/`fdatasync` calls made while committing, counted with `strace`
  when it is installed (one for the WAL; a WAL checkpoint adds two more every few hundred);
- bytes written per revision: what the commits hand to `write`/`pwrite` (`/proc/self/io`);
- SQLite's own CPU per commit: process CPU time of a commit with `synchronous=OFF`.

The store's first commit gives its WAL its working size (frames up to about 1,000 pages, the
automatic checkpoint's threshold: `store_sql.size_wal`), so commits overwrite blocks the file
already has instead of growing it (issue 13). A second store is measured in the same rounds
past its WAL's first automatic checkpoint and restart, where commits overwrite the WAL from
its start, as they do for the rest of a run. Both are reported.

The floor is measured in the same rounds: a bare SQLite database set up as the store sets up
its own (1 KiB pages, WAL, `synchronous=FULL`, its WAL sized the same way) committing one
small row per round. It is what any store on SQLite pays at least; the store's commit above
it is what the store adds.

    python bench/bench_commit.py [--rounds N] [--dir DIR]

Prints a markdown table. DIR defaults to a fresh temporary directory (under the system's
temp directory); pass a directory on the disk the runs will live on to measure that disk.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from common import disk_bench_args

from autodev_shell.store.run_store import PAGE_SIZE, NewPost, RunStore
from autodev_shell.store.sql import size_wal

#: The issues' targets: the store may cost at most this much more than a bare fsync (issue 6),
#: make one sync per revision and write at most this many bytes for a small one (issue 13).
TARGET_RATIO = 1.5
TARGET_SYNCS = 1
TARGET_SMALL_BYTES = 8 * 1024
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


def floor_connection(path: Path) -> sqlite3.Connection:
    """A bare SQLite database configured as the store configures its own, with one table."""
    conn = sqlite3.connect(str(path), isolation_level=None)
    conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)")
    conn.execute("BEGIN IMMEDIATE")  # its first commit sizes its WAL, as the store's does
    size_wal(conn)
    conn.execute("INSERT INTO t (v) VALUES ('sized')")
    conn.execute("COMMIT")
    return conn


def _wal_restarts(wal: Path) -> int:
    """The WAL header's checkpoint sequence number, which counts its restarts (0 before)."""
    with wal.open("rb") as handle:
        return int.from_bytes(handle.read(16)[12:16], "big")


def _past_first_checkpoint(store: RunStore, post_chars: int, state_chars: int,
                           persistence: str) -> int:
    """Commit revisions (sync off: setup, not measured) until the WAL has been checkpointed
    and restarted once; returns the last revision committed."""
    wal = Path(f"{store.path}-wal")
    conn = store._conn  # the bench's own store, never a run's
    conn.execute("PRAGMA synchronous = OFF")
    revision = 0
    while revision < 100_000 and (revision == 0 or _wal_restarts(wal) == 0):
        revision += 1
        store.commit(revision, (_post(post_chars, revision),), _state(state_chars, revision),
                     persistence_state_json=persistence, now=BASE + timedelta(seconds=revision))
    conn.execute("PRAGMA synchronous = FULL")
    return revision


def _floor(conn: sqlite3.Connection, revision: int) -> float:
    """One transaction inserting one small row: the least a durable SQLite commit costs."""
    start = time.perf_counter()
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO t (v) VALUES (?)", (f"revision {revision}",))
    conn.execute("COMMIT")
    return time.perf_counter() - start


def _commit(store: RunStore, revision: int, post: NewPost, state: str, persistence: str) -> float:
    start = time.perf_counter()
    store.commit(revision, (post,), state, persistence_state_json=persistence,
                 now=BASE + timedelta(seconds=revision))
    return time.perf_counter() - start


def _io() -> tuple[int, int]:
    """(write calls, bytes handed to them) so far by this process, or (-1, -1) off Linux."""
    try:
        text = Path("/proc/self/io").read_text()
    except OSError:
        return -1, -1
    fields = dict(line.split(": ") for line in text.splitlines())
    return int(fields["syscw"]), int(fields["wchar"])


def writes_per_revision(directory: Path, label: str, post_chars: int, state_chars: int,
                        revisions: int = 100) -> dict[str, float]:
    """Write calls and bytes per revision, after the store's first commits."""
    store = RunStore.open(directory / f"{label}-io.db", create=True, run_id="bench", now=BASE)
    persistence = json.dumps({"pending_persist": True, "queued_revision": 0})
    try:
        for revision in range(1, WARMUP_ROUNDS + 1):
            _commit(store, revision, _post(post_chars, revision), _state(state_chars, revision),
                    persistence)
        calls, written = _io()
        for revision in range(WARMUP_ROUNDS + 1, WARMUP_ROUNDS + revisions + 1):
            _commit(store, revision, _post(post_chars, revision), _state(state_chars, revision),
                    persistence)
        calls_after, written_after = _io()
    finally:
        store.close()
    if calls < 0:
        return {"writes": float("nan"), "bytes": float("nan")}
    return {"writes": (calls_after - calls) / revisions,
            "bytes": (written_after - written) / revisions}


def sqlite_cpu_ms(directory: Path, label: str, post_chars: int, state_chars: int,
                  revisions: int = 200) -> float:
    """SQLite's own work per commit: CPU time of a commit with `synchronous=OFF` (median)."""
    store = RunStore.open(directory / f"{label}-cpu.db", create=True, run_id="bench", now=BASE)
    store._conn.execute("PRAGMA synchronous = OFF")  # the bench's own copy, never a run's
    persistence = json.dumps({"pending_persist": True, "queued_revision": 0})
    times: list[float] = []
    try:
        for revision in range(1, revisions + WARMUP_ROUNDS + 1):
            post, state = _post(post_chars, revision), _state(state_chars, revision)
            began = time.process_time()
            store.commit(revision, (post,), state, persistence_state_json=persistence,
                         now=BASE + timedelta(seconds=revision))
            if revision > WARMUP_ROUNDS:
                times.append(time.process_time() - began)
    finally:
        store.close()
    return statistics.median(times) * 1e3


_SYNC = re.compile(r"^\d+\s+f(?:data)?sync\(")


def syncs_per_revision(directory: Path, label: str, post_chars: int, state_chars: int,
                       revisions: int = 300) -> float | None:
    """`fsync`/`fdatasync` calls per committed revision, counted by `strace` over a child that
    commits `revisions` revisions after its warm-up; None without strace."""
    strace = shutil.which("strace")
    if strace is None:
        return None
    trace = directory / f"{label}-syncs.trace"
    child = (
        "import sys, json; sys.path[:0] = sys.argv[1:3]; import bench_commit as b\n"
        "from autodev_shell.store.run_store import RunStore\n"
        "s = RunStore.open(sys.argv[3], create=True, run_id='bench', now=b.BASE)\n"
        "p = json.dumps({'pending_persist': True})\n"
        "n, post, state = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])\n"
        "for r in range(1, b.WARMUP_ROUNDS + 1):\n"
        "    b._commit(s, r, b._post(post, r), b._state(state, r), p)\n"
        "print('=====MARK=====', file=sys.stderr, flush=True)\n"
        "for r in range(b.WARMUP_ROUNDS + 1, b.WARMUP_ROUNDS + n + 1):\n"
        "    b._commit(s, r, b._post(post, r), b._state(state, r), p)\n"
        "print('=====END=====', file=sys.stderr, flush=True)\n"
        "s.close()\n"
    )
    here = Path(__file__).resolve().parent
    subprocess.run(
        [strace, "-f", "-o", str(trace), "-e", "trace=fsync,fdatasync,write", sys.executable,
         "-c", child, str(here), str(here.parent), str(directory / f"{label}-syncs.db"),
         str(revisions), str(post_chars), str(state_chars)],
        check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    lines = trace.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if "=====MARK" in line)
    end = next(i for i, line in enumerate(lines) if "=====END" in line)
    return sum(1 for line in lines[start:end] if _SYNC.match(line)) / revisions


def measure(directory: Path, label: str, post_chars: int, state_chars: int,
            rounds: int) -> dict[str, float]:
    store = RunStore.open(directory / f"{label}.db", create=True, run_id="bench", now=BASE)
    fd = os.open(directory / f"{label}.bin", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    floor = floor_connection(directory / f"{label}-floor.db")
    persistence = json.dumps({"pending_persist": True, "queued_revision": 0})
    steady = RunStore.open(directory / f"{label}-steady.db", create=True, run_id="bench",
                           now=BASE)
    names = ("sqlite", "bare", "floor", "steady")
    times: dict[str, list[float]] = {name: [] for name in names}
    try:
        offset = _past_first_checkpoint(steady, post_chars, state_chars, persistence)
        for revision in range(1, rounds + WARMUP_ROUNDS + 1):
            post, state = _post(post_chars, revision), _state(state_chars, revision)
            payload = (post.text + state + persistence).encode("utf-8")
            # Rotate which goes first, so none always follows another's fsync.
            turn = revision % len(names)
            for name in names[turn:] + names[:turn]:
                if name == "sqlite":
                    taken = _commit(store, revision, post, state, persistence)
                elif name == "bare":
                    taken = _bare(fd, payload)
                elif name == "floor":
                    taken = _floor(floor, revision)
                else:
                    again = offset + revision
                    taken = _commit(steady, again, _post(post_chars, again),
                                    _state(state_chars, again), persistence)
                if revision > WARMUP_ROUNDS:
                    times[name].append(taken)
    finally:
        os.close(fd)
        floor.close()
        steady.close()
        store.close()
    sqlite_times, bare_times, floor_times = times["sqlite"], times["bare"], times["floor"]
    sqlite_median = statistics.median(sqlite_times)
    bare_median = statistics.median(bare_times)
    ratios = statistics.median(s / b for s, b in zip(sqlite_times, bare_times, strict=True))
    floor_ratio = statistics.median(f / b for f, b in zip(floor_times, bare_times, strict=True))
    steady_ratio = statistics.median(s / b for s, b in zip(times["steady"], bare_times,
                                                           strict=True))
    io = writes_per_revision(directory, label, post_chars, state_chars)
    syncs = syncs_per_revision(directory, label, post_chars, state_chars)
    return {"sqlite_ms": sqlite_median * 1e3, "bare_ms": bare_median * 1e3, "ratio": ratios,
            "floor_ms": statistics.median(floor_times) * 1e3, "floor_ratio": floor_ratio,
            "steady_ms": statistics.median(times["steady"]) * 1e3, "steady_ratio": steady_ratio,
            "writes": io["writes"], "bytes": io["bytes"],
            "syncs": float("nan") if syncs is None else syncs,
            "cpu_ms": sqlite_cpu_ms(directory, label, post_chars, state_chars),
            "payload": post_chars + state_chars}


def main(argv: list[str] | None = None) -> int:
    args = disk_bench_args(argv, __doc__.split("\n\n")[0], DEFAULT_ROUNDS)
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
          "| write + fsync (ms) | ratio (median of rounds) | target "
          "| past the first WAL checkpoint (ms, ratio) | floor: bare SQLite "
          "commit of one small row (ms, ratio) | syncs/revision "
          "| writes/revision | bytes/revision | SQLite CPU, sync off (ms) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    worst = 0.0
    for label, post, state, m in rows:
        worst = max(worst, m["ratio"])
        verdict = "ok" if m["ratio"] <= TARGET_RATIO else "over"
        print(f"| {label} | {post} + {state} | {m['sqlite_ms']:.3f} | {m['bare_ms']:.3f} "
              f"| {m['ratio']:.2f} | ≤ {TARGET_RATIO} {verdict} "
              f"| {m['steady_ms']:.3f} ({m['steady_ratio']:.2f}) "
              f"| {m['floor_ms']:.3f} ({m['floor_ratio']:.2f}) | {m['syncs']:.2f} "
              f"| {m['writes']:.1f} | {m['bytes']:,.0f} | {m['cpu_ms']:.3f} |")
    return 0 if worst <= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
