"""The notice corpus (tests/fixtures/notices/*.yaml, SPEC A2-A5): each case a pytest param named
`<file>:<case name>`, in file order, for the detection tests that run every case."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "notices"


def notice_cases() -> list[Any]:
    cases: list[Any] = []
    for path in sorted(CORPUS.glob("*.yaml")):
        for case in yaml.safe_load(path.read_text(encoding="utf-8")):
            cases.append(pytest.param(case, id=f"{path.stem}:{case['name']}"))
    return cases
