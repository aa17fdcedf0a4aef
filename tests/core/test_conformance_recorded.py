"""The conformance kit's recorded transcripts, read again by the core (SPEC A2-A6, A26-A28).

tests/fixtures/realcli/kit/ holds what the real claude and codex CLIs printed for each case of
tests/conformance/cases.py (recorded by tests/conformance/record.py). Each is classified as the
shell classifies a call (`classify_output` at the recorded end of the call, in the CLI's zone;
`extract_post` on a call that exited 0 by itself) and must read as its case expects. Runs
without npm.
"""

from __future__ import annotations

import json
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from conformance.cases import BY_KEY
from conformance.transcripts import Transcript, mismatches, reading_from

from autodev_core.detection import classify_output, extract_post

KIT = Path(__file__).parents[1] / "fixtures" / "realcli" / "kit"
RECORDED = sorted(KIT.glob("*.json"))


def test_the_kit_has_recordings_of_every_case() -> None:
    keys = {f"{t['cli']}-{t['case']}" for t in (json.loads(p.read_text()) for p in RECORDED)}
    assert set(BY_KEY) <= keys, sorted(set(BY_KEY) - keys)


@pytest.mark.parametrize("path", RECORDED, ids=[p.stem for p in RECORDED])
def test_recorded_transcript_reads_as_its_case_expects(path: Path) -> None:
    transcript = Transcript.from_json(json.loads(path.read_text(encoding="utf-8")))
    case = BY_KEY[transcript.key]
    ended = not transcript.killed
    classification = classify_output(
        transcript.cli, stdout=transcript.stdout, stderr=transcript.stderr,
        exit_code=transcript.exit_code if ended else None, now=transcript.now,
        local_tz=ZoneInfo(transcript.tz),
    )
    post = (extract_post(transcript.cli, transcript.stdout)
            if ended and transcript.exit_code == 0 else None)
    reading = reading_from(classification, post)
    wrong = mismatches(case, transcript, reading)
    assert wrong == [], f"{case.note}\nread: {reading}\n{transcript.tail()}"
