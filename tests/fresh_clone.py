"""Run the README's test command on fresh clones, as a newcomer would, and count the green runs.

Each run clones the repository's committed HEAD into a new temporary directory, takes the test
command from the README's first `sh` block (its second line) and runs it there with bash, `CI`
unset, so the `dev` profile draws fresh random examples every time (issue 24, item 3). Nothing of
this checkout is reused: no venv, no `.hypothesis` database.

    .venv/bin/python tests/fresh_clone.py --runs 10 --jobs 2

It prints each run's verdict and pytest's last line, then `N of M runs green`; the exit status
is 1 when any run was red.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_SUMMARY = re.compile(r"\d+ (?:passed|failed)")
_SH_BLOCK = re.compile(r"^```sh\n(.*?)^```", re.MULTILINE | re.DOTALL)


def readme_test_command(readme: Path = ROOT / "README.md") -> str:
    """The README's second set-up command: the one that installs the test extra and runs pytest."""
    block = _SH_BLOCK.search(readme.read_text(encoding="utf-8"))
    if block is None:
        raise SystemExit(f"{readme}: no sh block with the set-up commands")
    lines = [line for line in block.group(1).splitlines() if line.strip()]
    if len(lines) != 2 or "pytest" not in lines[1]:
        raise SystemExit(f"{readme}: the first sh block must hold the demo and the test command")
    return lines[1]


def one_run(number: int, command: str, keep: Path | None) -> tuple[int, bool, str, float, str]:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"autodev-fresh-{number}-") as tmp:
        clone = Path(tmp) / "autodev"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        commit = subprocess.run(["git", "-C", str(clone), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True, check=True).stdout.strip()
        env = {key: value for key, value in os.environ.items()
               if key not in {"CI", "HYPOTHESIS_PROFILE", "VIRTUAL_ENV", "PYTHONPATH"}}
        done = subprocess.run(["bash", "-c", command], cwd=clone, env=env, capture_output=True,
                              text=True, check=False)
        output = done.stdout + done.stderr
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            (keep / f"run-{number}.log").write_text(output, encoding="utf-8")
    # pytest's summary line (stdout), not pip's warnings (stderr, written after it)
    said = done.stdout.splitlines()
    last = next((line for line in reversed(said) if _SUMMARY.search(line)),
                said[-1] if said else "")
    return number, done.returncode == 0, last, time.monotonic() - started, commit


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=1, help="clones tested at once")
    parser.add_argument("--keep-logs", type=Path, help="write each run's output to this folder")
    args = parser.parse_args()
    command = readme_test_command()
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, check=True).stdout.strip()
    print(f"fresh clones of {head}, {args.runs} runs of: {command}", flush=True)
    green = 0
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for number, ok, last, seconds, commit in pool.map(
            lambda n: one_run(n, command, args.keep_logs), range(1, args.runs + 1)
        ):
            green += ok
            verdict = "green" if ok else "RED"
            print(f"run {number} ({commit}): {verdict} ({seconds:.0f} s): {last}", flush=True)
    print(f"{green} of {args.runs} runs green")
    return 0 if green == args.runs else 1


if __name__ == "__main__":
    sys.exit(main())
