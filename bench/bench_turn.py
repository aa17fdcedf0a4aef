"""The daemon's own time per turn: from one CLI's exit to the next CLI's start, against
spawning `/bin/true`, in the same run.

A real daemon (`start_run`, in this process, on the real clock) drives a team of two claude
participants whose CLI is a bash script that answers at once: it writes bash's
`$EPOCHREALTIME` to a stamp file as its first and as its last command, and between them prints
the stream-json of a post (what the stand-in `claude` prints, `autodev_shell.standins`). The
run stops at `max_iterations`. The daemon's time for a turn is the next call's first stamp
minus the last call's last stamp: reading the output and classifying it, `step`, the commits
to the run store (SQLite, `synchronous=FULL`: an fsync each), the log line, the next prompt
and the next spawn — and the script's own exit and start, which a CLI that does nothing
still pays. So each round also measures, beside the daemon:

- the baseline: `subprocess.run(["/bin/true"])`, the cheapest process a caller can start and
  wait for (wall time);
- the floor: the same script started back to back by `subprocess.run` with its output captured,
  the same stamps read the same way — what a caller that does nothing between calls pays.

The figure is the median over rounds of (the round's median turn gap) / (the round's median
`/bin/true` spawn), interleaved, the order alternating. Beside it: the daemon's CPU time per call
(this process's, the run's start included) and, when `strace` is installed, the `fsync` and
`fdatasync` calls per call of one more run, which the disk's latency multiplies. The run store
lives on the disk of the temporary directory (`--dir` to choose another), where its fsyncs go.

    python bench/bench_turn.py [--rounds N] [--dir DIR]
"""

from __future__ import annotations

import io
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench_decision import median_ratio, timed_rounds
from common import disk_bench_args

from autodev_shell.cli.commands import start_run
from autodev_shell.clock import SystemClock
from autodev_shell.standins import standin_env
from autodev_shell.standins._standin import _preset
from autodev_shell.team import load_team

#: Calls per daemon run (`max_iterations`): one turn fewer between them.
CALLS = 30
#: `/bin/true` spawns and back-to-back script calls per round.
SPAWNS = 24
STAMPS_ENV = "AUTODEV_BENCH_STAMPS"
TRUE = "/bin/true"


def _script(stdout: str) -> str:
    """A `claude` that stamps its start, prints `stdout` and stamps its end (bash builtins
    only: no process besides its own)."""
    quoted = stdout.replace("'", "'\\''")
    return ("#!/bin/bash\n"
            f'printf "s %s\\n" "$EPOCHREALTIME" >> "${STAMPS_ENV}"\n'
            f"printf '%s' '{quoted}'\n"
            f'printf "e %s\\n" "$EPOCHREALTIME" >> "${STAMPS_ENV}"\n')


def make_bin(directory: Path) -> Path:
    """A directory holding the stamping `claude`."""
    bin_dir = directory / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    stdout, _stderr, _code = _preset("claude", {"post": "ok"}, "")
    cli = bin_dir / "claude"
    cli.write_text(_script(stdout), encoding="utf-8")
    cli.chmod(0o755)
    return bin_dir


def make_team(directory: Path, calls: int) -> Path:
    team = directory / "team"
    team.mkdir(parents=True, exist_ok=True)
    for member in ("ana", "rui"):
        (team / f"{member}.md").write_text("---\nprovider: claude\n---\nReview the last post.\n",
                                           encoding="utf-8")
    (team / "autodev.yaml").write_text(f"max_iterations: {calls}\n", encoding="utf-8")
    return team


def gaps(stamps: Path) -> list[float]:
    """Seconds from each call's last stamp to the next call's first."""
    marks = [line.split() for line in stamps.read_text(encoding="utf-8").splitlines()]
    starts = [float(t) for kind, t in marks if kind == "s"]
    ends = [float(t) for kind, t in marks if kind == "e"]
    assert len(starts) == len(ends), marks
    return [after - before for before, after in zip(ends, starts[1:], strict=False)]


def run_daemon(here: Path, bin_dir: Path, team: Path) -> tuple[Any, list[float]]:
    """One run of the daemon in `here` until `max_iterations`: its summary and turn gaps."""
    here.mkdir(parents=True, exist_ok=True)
    stamps = here / "stamps"
    env = standin_env(bin_dir)
    env[STAMPS_ENV] = str(stamps)
    summary = start_run(load_team(team), here / "run", run_id="bench", clock=SystemClock(),
                        installed=frozenset({"claude"}), env=env, json_lines=True,
                        stream=io.StringIO(), timezone="UTC")
    return summary, gaps(stamps)


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def daemon_turn(directory: Path, bin_dir: Path, team: Path, facts: dict[str, Any],
                cpu: list[float]) -> Callable[[], float]:
    """Seconds of the daemon's own time per turn: one whole run, the median of its turns."""
    runs = iter(range(1_000_000))

    def run() -> float:
        here = directory / f"run-{next(runs)}"
        began = _cpu()
        summary, turns = run_daemon(here, bin_dir, team)
        cpu.append((_cpu() - began) / summary.calls)
        facts.update(status=summary.status, calls=summary.calls, turns=len(turns))
        shutil.rmtree(here, ignore_errors=True)
        return statistics.median(turns)

    return run


_SYNC = re.compile(r"^\d+\s+(fsync|fdatasync)\(")


def syncs_per_call(directory: Path, bin_dir: Path, team: Path) -> float | None:
    """`fsync`/`fdatasync` calls per call of one daemon run, counted by `strace` over a child
    (the stand-ins make none); None without strace."""
    strace = shutil.which("strace")
    if strace is None:
        return None
    here = Path(__file__).resolve().parent
    trace = directory / "syncs.trace"
    child = ("import sys; sys.path[:0] = sys.argv[1:3]; from pathlib import Path\n"
             "import bench_turn as b\n"
             "summary, _ = b.run_daemon(Path(sys.argv[3]), Path(sys.argv[4]), Path(sys.argv[5]))\n"
             "print(summary.calls)\n")
    done = subprocess.run(
        [strace, "-f", "-o", str(trace), "-e", "trace=fsync,fdatasync", sys.executable, "-c",
         child, str(here), str(here.parent), str(directory / "traced"), str(bin_dir), str(team)],
        check=True, capture_output=True, text=True)
    calls = int(done.stdout.split()[-1])
    syncs = sum(1 for line in trace.read_text().splitlines() if _SYNC.match(line))
    return syncs / calls


def true_spawn(spawns: int = SPAWNS) -> Callable[[], float]:
    """Seconds per `subprocess.run(["/bin/true"])`, the median of `spawns`."""

    def run() -> float:
        took = []
        for _ in range(spawns):
            began = time.perf_counter()
            subprocess.run([TRUE], check=True)
            took.append(time.perf_counter() - began)
        return statistics.median(took)

    return run


def floor_turn(directory: Path, bin_dir: Path, spawns: int = SPAWNS) -> Callable[[], float]:
    """Seconds from one script call's last stamp to the next's first, started back to back."""
    stamps = directory / "floor-stamps"
    env = standin_env(bin_dir)
    env[STAMPS_ENV] = str(stamps)
    cli = str(bin_dir / "claude")

    def run() -> float:
        stamps.unlink(missing_ok=True)
        for _ in range(spawns):
            subprocess.run([cli], env=env, capture_output=True, stdin=subprocess.DEVNULL,
                           check=True)
        return statistics.median(gaps(stamps))

    return run


def measure(rounds: int, directory: Path | None = None) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="autodev-bench-turn-", dir=directory))
    try:
        bin_dir = make_bin(root)
        team = make_team(root, CALLS)
        facts: dict[str, Any] = {}
        cpu: list[float] = []
        subjects: Sequence[Callable[[], float]] = (
            daemon_turn(root, bin_dir, team, facts, cpu), true_spawn(), floor_turn(root, bin_dir))
        turn_s, true_s, floor_s = timed_rounds(subjects, rounds)
        syncs = syncs_per_call(root, bin_dir, team)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return {
        "ratio": median_ratio(turn_s, true_s),
        "turn_ms": statistics.median(turn_s) * 1e3,
        "true_ms": statistics.median(true_s) * 1e3,
        "floor_ms": statistics.median(floor_s) * 1e3,
        "floor_ratio": median_ratio(floor_s, true_s),
        "cpu_ms": statistics.median(cpu) * 1e3,
        "syncs": syncs,
        "rounds": rounds,
        "disk": str(root.parent),
        **facts,
    }


def main(argv: list[str] | None = None) -> int:
    args = disk_bench_args(argv, __doc__.split("\n\n")[0], 9)
    m = measure(args.rounds, args.dir)
    print(f"daemon per turn: {m['turn_ms']:.2f} ms = {m['ratio']:.1f}x a /bin/true spawn "
          f"({m['true_ms']:.2f} ms); back-to-back floor {m['floor_ms']:.2f} ms "
          f"({m['floor_ratio']:.1f}x); daemon CPU {m['cpu_ms']:.1f} ms/call; "
          f"{m['syncs']} syncs/call; {m['rounds']} rounds of {m['calls']} calls "
          f"({m['status']}), on {m['disk']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
