"""Record the conformance cases with the real CLIs (SPEC A2-A6, A26-A28).

    python tests/conformance/record.py [--bin DIR] [--out tests/fixtures/realcli/kit]
                                       [--case NAME ...] [--tz ZONE]

Runs each case (all by default; NAME is `<cli>-<name>` or a bare name) against its loopback
stand-in and writes its transcript as `<cli>-<version>-<case>.json` (stdout, stderr, exit, now,
true reset, elapsed, requests), so autodev's reading can be checked again without npm
(tests/core/test_conformance_recorded.py). Prints one line per case: what autodev read and
whether it conforms.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `conformance` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from conformance.cases import select
from conformance.kit import DEFAULT_TZ, check, installed_bin_dir, reading_of, run_case

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "fixtures" / "realcli" / "kit"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", type=Path, help="the folder holding claude and codex")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--case", action="append", help="a case to run (repeatable)")
    parser.add_argument("--tz", default=DEFAULT_TZ)
    args = parser.parse_args(argv)
    if args.bin is None:
        try:
            args.bin = installed_bin_dir()
        except BaseException as exc:  # pytest's skip: say why and stop
            print(f"no CLIs: {exc}", file=sys.stderr)
            return 2
    try:
        cases = select(args.case)
    except KeyError as exc:
        print(exc.args[0], file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    failures = 0
    for case in cases:
        with tempfile.TemporaryDirectory(prefix=f"conformance-{case.key}-") as tmp:
            transcript = run_case(case, bin_dir=args.bin, tmp=Path(tmp), tz=args.tz)
        path = args.out / transcript.file_name()
        path.write_text(json.dumps(transcript.to_json(), indent=1, ensure_ascii=False) + "\n",
                        encoding="utf-8")
        reading = reading_of(transcript)
        wrong = check(case, transcript)
        failures += bool(wrong)
        reset = reading.reset.isoformat() if reading.reset else "-"
        print(f"{'ok  ' if not wrong else 'FAIL'} {case.key:32} {transcript.elapsed:5.1f} s "
              f"exit {transcript.exit_code:3} read {reading.kind:7} reset {reset} "
              f"usage {list(reading.usage)}")
        for line in wrong:
            print(f"     {line}")
    print(f"{len(cases) - failures}/{len(cases)} conform; transcripts in {args.out}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
