"""Run the conformance kit against the newest claude and codex on npm and print what changed.

    python tests/conformance/newest.py [--prefix DIR] [--case NAME ...] [--record]

Asks npm for the newest version of each CLI, installs them into DIR (default
~/.cache/autodev-test/npm-newest; never over the pinned ones), runs every case (about three
minutes, most of it codex's own retries of a 500 and a 503), and compares autodev's reading of
each with its reading of the pinned version's recording (tests/fixtures/realcli/kit/): the kind,
the reset against the server's (A6), the usage reading, and the line it is read from (numbers
blanked). Prints one line per case — `same`, or what changed — and each case that no longer
reads as the case table expects. Exit 0 when nothing changed and every case conforms, 1
otherwise. `--record` also writes the new transcripts beside the pinned ones, so
`table.py --write` shows both versions in docs/compatibility.md.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `conformance` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from conformance import versions
from conformance.cases import select
from conformance.kit import CliInstallError, check, install_clis, reading_of, run_case
from conformance.table import KIT, key_line, reset_words, transcripts
from conformance.transcripts import Reading, Transcript, classify_transcript, version_number

DEFAULT_PREFIX = Path.home() / ".cache" / "autodev-test" / "npm-newest"


def newest(package: str) -> str:
    """The newest version of `package` on npm (`npm view`)."""
    npm = shutil.which("npm")
    if npm is None:
        raise CliInstallError("npm not found")
    done = subprocess.run([npm, "view", package, "version"], capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL, check=False)
    if done.returncode != 0 or not done.stdout.strip():
        raise CliInstallError(f"npm view {package} failed: {done.stderr.strip()[-200:]}")
    return done.stdout.strip().splitlines()[-1]


def _shape(text: str) -> str:
    """A key line with its numbers, ids and ports blanked: what stays from run to run."""
    return re.sub(r"\d+", "#", " ".join(text.split()))


def summary(transcript: Transcript, reading: Reading) -> dict[str, str]:
    reset = reset_words(transcript, reading)
    return {
        "kind": reading.kind,
        "reset": re.sub(r"[+−]\d+(\.\d+)? (s|min|h)", "", reset).strip(),
        "usage": ", ".join(w for w, _ in reading.usage),
        "line": _shape(key_line(transcript, reading)),
    }


def changes(before: dict[str, str], after: dict[str, str]) -> list[str]:
    return [f"{field}: {before[field]!r} → {after[field]!r}"
            for field in before if before[field] != after[field]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prefix", type=Path, default=DEFAULT_PREFIX)
    parser.add_argument("--case", action="append", help="a case to run (repeatable)")
    parser.add_argument("--record", action="store_true",
                        help="write the new transcripts into the kit's recordings")
    args = parser.parse_args(argv)
    try:
        wanted = {versions.CLAUDE[0]: newest(versions.CLAUDE[0]),
                  versions.CODEX[0]: newest(versions.CODEX[0])}
        print(f"newest: claude {wanted[versions.CLAUDE[0]]} (pinned {versions.CLAUDE[1]}), "
              f"codex {wanted[versions.CODEX[0]]} (pinned {versions.CODEX[1]})")
        bin_dir = install_clis(args.prefix, wanted)
    except CliInstallError as exc:
        print(f"cannot run the newest CLIs: {exc}", file=sys.stderr)
        return 2
    pinned = {t.key: t for t in transcripts(KIT)
              if version_number(t.version) in (versions.CLAUDE[1], versions.CODEX[1])}
    failures = 0
    for case in select(args.case):
        with tempfile.TemporaryDirectory(prefix=f"newest-{case.key}-") as tmp:
            transcript = run_case(case, bin_dir=bin_dir, tmp=Path(tmp))
        after = summary(transcript, reading_of(transcript))
        old = pinned.get(case.key)
        said = ("no recording of the pinned version" if old is None
                else "; ".join(changes(summary(old, classify_transcript(old)), after)) or "same")
        wrong = check(case, transcript)
        failures += bool(wrong) or said != "same"
        print(f"{case.key:32} {version_number(transcript.version):9} {said}")
        for line in wrong:
            print(f"    does not conform: {line}")
        if args.record:
            path = KIT / transcript.file_name()
            path.write_text(json.dumps(transcript.to_json(), indent=1, ensure_ascii=False)
                            + "\n", encoding="utf-8")
    print("nothing changed" if not failures else f"{failures} case(s) changed or do not conform")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
