"""Run every Hypothesis test under many random seeds and print each failure with its seed.

The `ci` profile draws one fixed set of examples, so a generator or a rule that fails on one
draw in ten can stay green there for ever; this sweep is how such a failure is found before a
newcomer's first `pytest` finds it (issue 24). Each seed is one `pytest -m hypothesis` run
(Hypothesis' plugin marks every `@given` test and every state machine's `TestCase`) with the
`sweep` profile (the `dev` profile without the example database, so a seed's failure is its
own) and `--hypothesis-seed=SEED`; seeds run side by side, one per CPU unless told otherwise.

    .venv/bin/python tests/sweep.py --seeds 30            # 30 fresh seeds, printed
    .venv/bin/python tests/sweep.py --seed 1234 --seed 99  # exactly these seeds again
    .venv/bin/python tests/sweep.py --seeds 5 -- tests/core/test_orchestrator_harness.py

A failure prints the seed, the test and the command that replays it. The exit status is 1 when
any seed failed, 0 otherwise.
"""

from __future__ import annotations

import argparse
import os
import re
import secrets
import subprocess
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_FAILED = re.compile(r"^(?:FAILED|ERROR) (\S+)(?: - (.*))?$")
_COUNTS = re.compile(r"(\d+) (passed|failed|error|errors|skipped|deselected)")


@dataclass
class SeedRun:
    seed: int
    status: int
    seconds: float
    counts: dict[str, int]
    failures: list[tuple[str, str]] = field(default_factory=list)
    output: str = ""


def _command(seed: int, paths: Sequence[str]) -> list[str]:
    return [
        sys.executable, "-m", "pytest", "-m", "hypothesis", "-q", "-p", "no:cacheprovider",
        f"--hypothesis-seed={seed}", *paths,
    ]  # fmt: skip


def replay_command(seed: int, test: str) -> str:
    """The command that runs one failing test again under the seed that found it."""
    return (
        f"HYPOTHESIS_PROFILE=sweep {sys.executable} -m pytest -p no:cacheprovider"
        f" --hypothesis-seed={seed} '{test}'"
    )


def run_seed(seed: int, paths: Sequence[str], timeout: float) -> SeedRun:
    env = {**os.environ, "HYPOTHESIS_PROFILE": "sweep"}
    env.pop("CI", None)  # CI would not change the named profile, but say plainly: no `ci` draw
    started = time.monotonic()
    try:
        done = subprocess.run(
            _command(seed, paths), cwd=ROOT, env=env, capture_output=True, text=True,
            timeout=timeout, check=False,
        )  # fmt: skip
        output, status = done.stdout + done.stderr, done.returncode
    except subprocess.TimeoutExpired as expired:
        out = expired.stdout or b""
        output = out.decode() if isinstance(out, bytes) else out
        output += f"\n[timed out after {timeout:.0f} s]"
        status = -1
    counts: dict[str, int] = {}
    for number, word in _COUNTS.findall(output.splitlines()[-1] if output.strip() else ""):
        counts[word.rstrip("s") if word == "errors" else word] = int(number)
    failures = [
        (match.group(1), match.group(2) or "")
        for match in map(_FAILED.match, output.splitlines())
        if match
    ]
    if status not in (0, 5) and not failures:  # pytest died or timed out: say so, not "passed"
        failures = [("<the whole run>", f"pytest exit status {status}")]
    return SeedRun(seed, status, time.monotonic() - started, counts, failures, output)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=30, help="how many fresh seeds (default 30)")
    parser.add_argument("--seed", type=int, action="append", default=[], help="run this seed")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="seeds at once")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per seed")
    parser.add_argument("--verbose", action="store_true", help="print a failing seed's output")
    parser.add_argument("paths", nargs="*", help="test files or node ids (default: all tests)")
    args = parser.parse_args(argv)
    seeds = args.seed or [secrets.randbelow(2**32) for _ in range(args.seeds)]
    listed = " ".join(map(str, seeds))
    print(f"sweep: {len(seeds)} seeds, {args.jobs} at a time: {listed}", flush=True)
    started = time.monotonic()
    runs: list[SeedRun] = []
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for run in pool.map(lambda seed: run_seed(seed, args.paths, args.timeout), seeds):
            runs.append(run)
            verdict = "ok" if not run.failures else f"{len(run.failures)} FAILED"
            passed = run.counts.get("passed", 0)
            print(f"seed {run.seed}: {passed} passed, {verdict} ({run.seconds:.0f} s)", flush=True)
            for test, message in run.failures:
                print(f"  FAILED {test} - {message}")
                print(f"  replay: {replay_command(run.seed, test)}")
            if run.failures and args.verbose:
                print(run.output)
    failed = [run for run in runs if run.failures]
    tests = max((run.counts.get("passed", 0) + run.counts.get("failed", 0) for run in runs),
                default=0)
    distinct = sorted({test for run in failed for test, _ in run.failures})
    print(
        f"sweep: {tests} tests x {len(runs)} seeds in {time.monotonic() - started:.0f} s; "
        f"{len(failed)} seeds failed, {len(distinct)} distinct tests failed"
    )
    for test in distinct:
        found_by = [str(run.seed) for run in failed if any(t == test for t, _ in run.failures)]
        print(f"  {test}: seeds {' '.join(found_by)}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
