"""Shared limits (issues 14, 26): the turn-start read beside the decision cost.

At each turn start a run sharing its limits reads the team's engines: from the subscriber's
mirror while it can be trusted (issue 26), else from Redis in one round trip
(`LimitSharing.sync`: an `MGET` of the limits pipelined with the usage readings' `HGETALL`s,
issue 25). This starts a redis-server of its own on a free loopback port in a temp
dir, fills the registry with the 8-participant team's engines (half of them limited by another
run), and measures, interleaved round by round in the same run:

- the turn-start read from the mirror: one `sync` of the team's engines by a subscribed run
  whose mirror is live and rebuilt (no round trip; the bench counts any it had to make);
- the turn-start round trip: one `sync` by a run without a subscriber (one round trip on
  loopback), what every turn start paid before issue 26 and still pays when the mirror is
  not trusted;
- one publish: the server-side merge script for one record (one round trip);
- the decision cost: one scheduler `step` of bench_decision's mixed-limits trace.

The figures are medians over rounds; the ratios read / step say how many decisions one read
costs (target for the mirror: at most 1, docs/performance.md row 7). Needs redis-server on
PATH and the `redis` extra (`pip install -e '.[redis]'`).

    python bench/bench_sharing.py [--rounds N]
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench_decision import TEAM, record_trace, step_cost, timed_rounds
from common import rounds_args

from autodev_core.scheduler import EngineLimit

READS_PER_ROUND = 200
STEPS_TRACE = 2_000


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start_server(directory: Path) -> tuple[subprocess.Popen[bytes], str]:
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError("redis-server is not installed (apt-get install -y redis-server)")
    port = _free_port()
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(directory),
         "--save", "", "--appendonly", "no", "--logfile", str(directory / "redis.log")],
        stdin=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    import redis

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if redis.Redis.from_url(url, socket_timeout=0.5).ping():
                return process, url
        except redis.RedisError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError("redis-server did not answer within 30 s")


def measure(rounds: int) -> dict[str, Any]:
    from autodev_shell.sharing import LimitSharing, ShareSettings

    engines = sorted({e for p in TEAM for e in p.entries}, key=str)
    with tempfile.TemporaryDirectory() as tmp:
        process, url = _start_server(Path(tmp))
        try:
            accounts = {"claude": "work-max", "codex": "team", "agy": "lab"}
            peer = LimitSharing(ShareSettings(url=url, accounts=accounts, name="peer"),
                                subscribe=False)
            me = LimitSharing(ShareSettings(url=url, accounts=accounts, name="me"),
                              subscribe=False)
            mirrored = LimitSharing(ShareSettings(url=url, accounts=accounts, name="mirrored"))
            now = datetime.now(UTC)
            peer.publish(
                [EngineLimit(engine=e, until=now + timedelta(hours=2), read=True, seen=now)
                 for e in engines[::2]],
                now,
            )

            def read() -> float:
                began = time.perf_counter()
                for _ in range(READS_PER_ROUND):
                    me._delivered.clear()  # every read delivers, as a first turn start does
                    me.sync(engines, now)
                return (time.perf_counter() - began) / READS_PER_ROUND

            deadline = time.monotonic() + 30
            while mirrored.subscription is None and time.monotonic() < deadline:
                time.sleep(0.01)
            delivered = len(mirrored.sync(engines, now))  # the rebuild under the subscription
            trips_before = mirrored.round_trips

            def read_quiet() -> float:
                began = time.perf_counter()
                for _ in range(READS_PER_ROUND):
                    mirrored.sync(engines, now)  # nothing new: the usual turn start
                return (time.perf_counter() - began) / READS_PER_ROUND

            def read_mirror() -> float:
                began = time.perf_counter()
                for _ in range(READS_PER_ROUND):
                    mirrored.forget_told()  # every read delivers, as above
                    mirrored.sync(engines, now)
                return (time.perf_counter() - began) / READS_PER_ROUND

            counter = iter(range(10**9))

            def publish() -> float:
                began = time.perf_counter()
                for _ in range(READS_PER_ROUND):
                    later = now + timedelta(hours=3, seconds=next(counter))
                    me.publish([EngineLimit(engine=engines[1], until=later, read=True,
                                            seen=now)], now)
                return (time.perf_counter() - began) / READS_PER_ROUND

            trace = record_trace(STEPS_TRACE)
            subjects: list[Callable[[], float]] = [
                read_quiet, read_mirror, read, publish, step_cost(trace)]
            quiet_reads, mirror_reads, reads, publishes, steps = timed_rounds(subjects, rounds)
            fallbacks = mirrored.round_trips - trips_before
            from_mirror = mirrored.mirror_reads
            peer.close()
            me.close()
            mirrored.close()
        finally:
            process.terminate()
            process.wait(timeout=30)
    return {
        "engines": len(engines),
        "quiet_us": statistics.median(quiet_reads) * 1e6,
        "quiet_per_step": statistics.median(
            r / s for r, s in zip(quiet_reads, steps, strict=True)),
        "mirror_us": statistics.median(mirror_reads) * 1e6,
        "mirror_per_step": statistics.median(
            r / s for r, s in zip(mirror_reads, steps, strict=True)),
        "from_mirror": from_mirror,
        "delivered": delivered,
        "fallbacks": fallbacks,
        "read_us": statistics.median(reads) * 1e6,
        "publish_us": statistics.median(publishes) * 1e6,
        "step_us": statistics.median(steps) * 1e6,
        "read_per_step": statistics.median(r / s for r, s in zip(reads, steps, strict=True)),
        "rounds": rounds,
    }


def main(argv: list[str] | None = None) -> int:
    args = rounds_args(argv, __doc__.splitlines()[0] if __doc__ else None, 9)
    result = measure(args.rounds)
    print(
        f"turn-start read from the mirror ({result['engines']} engines), nothing new: "
        f"{result['quiet_us']:.2f} µs; read / step = {result['quiet_per_step']:.2f}"
    )
    print(
        f"turn-start read from the mirror, telling the core all {result['delivered']} records "
        f"again (as a first turn start): {result['mirror_us']:.1f} µs; "
        f"read / step = {result['mirror_per_step']:.2f} ({result['from_mirror']} reads from "
        f"memory, {result['fallbacks']} fell back to the round trip)"
    )
    print(
        f"turn-start round trip ({result['engines']} engines, 1 round trip): "
        f"{result['read_us']:.0f} µs; publish (merge script): {result['publish_us']:.0f} µs; "
        f"one step: {result['step_us']:.1f} µs; read / step = {result['read_per_step']:.1f} "
        f"(median of {result['rounds']} rounds)"
    )
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    raise SystemExit(main())
