"""The example scenarios in docs/examples parse, and their hand-written expected outputs are
well formed (SPEC D "Scenario files"; the golden run through the scheduler lives elsewhere)."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

import pytest

from autodev_core.simulation.scenario import Scenario, parse_scenario, render_scenario

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
SCENARIOS = sorted(EXAMPLES.glob("*.yaml"))
STATUSES = ("running", "rate_limited", "unreachable", "backing_off", "paused", "stopped")  # A42
LINE = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d) (\S.*)$")
# `<time>` as the log lines of SPEC A write it: after "until", "at" or "back first at".
TIME = re.compile(r"(?:until|at) (\d{4}-\d\d-\d\d \d\d:\d\d|\d\d:\d\d)\b")
RULE = re.compile(r"\bA\d+\b")


def _parse(path: Path) -> Scenario:
    return parse_scenario(path.read_text(encoding="utf-8"), source=path.name)


def test_D_there_are_eight_to_twelve_examples() -> None:
    assert 8 <= len(SCENARIOS) <= 12


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_D_example_parses_and_renders_back(path: Path) -> None:
    scenario = _parse(path)
    assert scenario.until is not None, "examples are bounded by `until`"
    assert parse_scenario(render_scenario(scenario)) == scenario


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_D_example_names_its_rules_at_the_top(path: Path) -> None:
    header = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        header.append(line)
    assert header and header[0].startswith("# Rules:")
    assert RULE.search(" ".join(header))


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_D_expected_output_is_well_formed(path: Path) -> None:
    scenario = _parse(path)
    expected = path.with_suffix(".expected")
    assert expected.exists(), f"{path.name} has no .expected file"
    lines = expected.read_text(encoding="utf-8").splitlines()
    assert lines[-1] in {f"status: {status}" for status in STATUSES}
    assert scenario.until is not None
    previous = scenario.start.replace(tzinfo=None)
    for line in lines[:-1]:
        match = LINE.match(line)
        assert match, f"not '<local time> <message>': {line!r}"
        stamp = datetime.fromisoformat(match.group(1))
        assert previous <= stamp <= scenario.until.replace(tzinfo=None), line
        previous = stamp
        for written in TIME.findall(match.group(2)):
            # <time>: HH:MM on the line's own local day, else YYYY-MM-DD HH:MM (SPEC A).
            if " " in written:
                assert written[:10] != match.group(1)[:10], line
        assert "  " not in line and line == line.strip(), line
