"""The conformance kit against the real claude and codex CLIs (SPEC A2-A6, A26-A28, C1).

One test per case of tests/conformance/cases.py: the real CLI, pinned in
tests/conformance/versions.py, runs through autodev's shell against a loopback stand-in of its
provider's API answering as the case says, and autodev's reading of its output must be what the
case expects (`kit.check`). Skipped, with how to get the CLIs, when they are not installed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conformance import versions
from conformance.cases import BY_KEY
from conformance.kit import check, installed_bin_dir, reading_of, run_case


@pytest.fixture(scope="module")
def bin_dir() -> Path:
    return installed_bin_dir()


@pytest.mark.realcli
@pytest.mark.parametrize("key", sorted(BY_KEY))
def test_conformance_case(bin_dir: Path, tmp_path: Path, key: str) -> None:
    case = BY_KEY[key]
    transcript = run_case(case, bin_dir=bin_dir, tmp=tmp_path)
    pinned = versions.CLAUDE if case.cli == "claude" else versions.CODEX
    assert pinned[1] in transcript.version, transcript.version
    assert transcript.requests >= 1, transcript.tail()  # the CLI reached its stand-in
    wrong = check(case, transcript)
    reading = reading_of(transcript)
    assert wrong == [], f"{case.note}\nread: {reading}\n{transcript.tail()}"
