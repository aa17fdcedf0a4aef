"""How long does a short `autodev` command take to start? (issue 13, cold start)

Each command runs in a fresh interpreter, interleaved round by round (the order alternating)
with a bare `python -c pass`; the figure is the median over rounds of the per-round ratio of
the children's CPU time (user + system, from `getrusage`), which a shared machine disturbs
less than the wall clock. Targets: `autodev --help` and `autodev status` at most 3x
`python -c pass`, and `import autodev_core` at most 100 ms. `autodev pause` (an operator command)
and `import attrs` (loaded by every command that opens a `RunStore`; `status` of a run as the
daemon leaves it reads the file without one) are shown beside them.

    python bench/bench_cold.py [--rounds N]
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from bench_decision import median_ratio, record_trace
from common import rounds_args

from autodev_core.control.identity import resolve_active_identity
from autodev_core.serialization import to_json
from autodev_shell.durability.writes import Durability
from autodev_shell.store.run_store import NewPost, RunStore

TARGET_RATIO = 3.0
TARGET_IMPORT_MS = 100.0
NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def _autodev() -> list[str]:
    """The console script next to this interpreter, as a user runs it; else `-m`."""
    script = Path(sys.executable).parent / "autodev"
    return [str(script)] if script.exists() else [sys.executable, "-m", "autodev_shell.cli"]


def make_run(directory: Path) -> Path:
    """A run store holding a scheduler state from a recorded run (limits, waits, posts),
    persisted as the daemon persists it (`Durability`: the state stored queued, beside its
    commit marker, B6/B8)."""
    run = directory / "run"
    run.mkdir(parents=True)
    state = record_trace(300)[-1][0]
    store = RunStore.open(run / "run.db", create=True, run_id="bench", now=NOW)
    try:
        identity = resolve_active_identity(run_id=store.run_id)
        Durability.open(store, identity).persist_revision(
            1, (NewPost("ana", "claude", "ok", NOW, key="turn-1/0"),), to_json(state),
            identity=identity, now=NOW)
    finally:
        store.close()
    return run


def _cpu(command: list[str], *, write_bytecode: bool = False) -> float:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if not write_bytecode:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False,
                   env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(rounds: int) -> dict[str, dict[str, float]]:
    directory = Path(tempfile.mkdtemp(prefix="autodev-cold-"))
    try:
        run = make_run(directory)
        autodev = _autodev()
        subjects = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "autodev --help": [*autodev, "--help"],
            "autodev status": [*autodev, "status", "--run", str(run)],
            # An operator command: queues a control, reads no state.
            "autodev pause": [*autodev, "pause", "--run", str(run)],
            "import autodev_core": [sys.executable, "-c", "import autodev_core"],
            # What attrs alone costs: every command that opens a `RunStore` loads it.
            "import attrs": [sys.executable, "-c", "import attrs"],
        }
        # Warm the file cache and write the bytecode an installed package has (with
        # PYTHONDONTWRITEBYTECODE set, as on this project's machines, a module edited since its
        # last compile would otherwise be compiled again in every round).
        for command in subjects.values():
            _cpu(command, write_bytecode=True)
        times: dict[str, list[float]] = {name: [] for name in subjects}
        names = list(subjects)
        for index in range(rounds):
            for name in names if index % 2 == 0 else reversed(names):
                times[name].append(_cpu(subjects[name]))
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    base = times["python -c pass"]
    return {name: {"ms": statistics.median(values) * 1e3,
                   "ratio": median_ratio(values, base),
                   # what importing the package adds to a bare interpreter
                   "extra_ms": statistics.median(v - b for v, b in zip(values, base, strict=True))
                   * 1e3}
            for name, values in times.items()}


def main() -> None:
    args = rounds_args(None, __doc__.split("\n\n")[0], 15)
    for name, m in measure(args.rounds).items():
        print(f"{name:22} {m['ms']:7.1f} ms CPU  {m['ratio']:5.2f}x  (+{m['extra_ms']:.1f} ms)")


if __name__ == "__main__":
    main()
