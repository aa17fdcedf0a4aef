"""What docs say that a reader would act on, checked against the code (issue 28 item 4):
codex's `stream disconnected before completion` in api.md against the reader (A26, A40), and
`until` in scenarios.md against the simulation's output (SPEC D)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from autodev_core import classify_output, detect_network_error, parse_scenario, simulate

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _section(page: str, heading: str) -> str:
    text = (DOCS / page).read_text(encoding="utf-8")
    start = text.index(heading)
    return text[start:text.index("\n### ", start + len(heading))]


def _listed(section: str, bullet: str) -> list[str]:
    """The code spans of the bullet starting `- <bullet>` (up to the next bullet or paragraph)."""
    start = section.index(f"- {bullet}")
    ends = (section.find("\n- ", start + 1), section.find("\n\n", start), len(section))
    end = min(i for i in ends if i != -1)
    return re.findall(r"`([^`]+)`", section[start:end])


NETWORK = _section("api.md", "### `detect_network_error`")


def test_A26_api_md_lists_what_reads_as_network_and_what_does_not() -> None:
    assert len(_listed(NETWORK, "read as network:")) >= 3
    assert "stream disconnected before completion" in _listed(NETWORK, "not a network error:")


@pytest.mark.parametrize("line", _listed(NETWORK, "read as network:"))
def test_A26_what_api_md_calls_a_network_error_is_one(line: str) -> None:
    assert detect_network_error("codex", stderr=line + "\n", exit_code=1) is not None


@pytest.mark.parametrize("line", _listed(NETWORK, "not a network error:"))
def test_A40_what_api_md_calls_no_network_error_is_none(line: str) -> None:
    from datetime import UTC, datetime

    assert detect_network_error("codex", stderr=line + "\n", exit_code=1) is None
    seen = classify_output("codex", stderr=line + "\n", exit_code=1,
                           now=datetime(2026, 12, 1, tzinfo=UTC), local_tz=UTC)
    assert seen.kind == "other"


def test_D_until_ends_the_simulation_not_the_run() -> None:
    scenarios = (DOCS / "scenarios.md").read_text(encoding="utf-8")
    assert "`until` ends the simulation, not the run." in scenarios
    assert "the simulation ends here" in scenarios
    result = simulate(parse_scenario(
        "start: 2026-12-01T09:00:00\ntimezone: UTC\nuntil: 2026-12-01T09:30:00\n"
        "team: [{id: ana, provider: claude}]\n", source="t.yaml"), source="t.yaml")
    assert list(result.render())[-1] == "status: running"
