"""docs/rules.md explains every rule number the project cites to its users (issue 12 item 6):
in docs/, the README and the CLI's own text. CLI text carries no bare rule numbers."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "docs" / "rules.md"
#: A rule cited: A11, B7, C6, a range such as A26-A32 or A2–A6, SPEC D / (D), SPEC 0.3 / (0.4).
CITATION = re.compile(
    r"\b([ABC])(\d{1,2})(?:\s*[-–]\s*\1?(\d{1,2}))?\b"
    r"|(?:SPEC |[(,] ?)(D)\b(?![-\w])"
    r"|(?:SPEC (0\.\d)\b|[(,] ?(0\.\d)(?=[),]))"
)


def cited(text: str) -> set[str]:
    found: set[str] = set()
    for match in CITATION.finditer(text):
        letter, first, last, contract, shape, bracketed = match.groups()
        shape = shape or bracketed
        if letter:
            end = int(last) if last else int(first)
            found.update(f"{letter}{n}" for n in range(int(first), end + 1))
        elif contract:
            found.add("D")
        elif shape:
            found.add(shape)
    return found


def explained() -> set[str]:
    return set(re.findall(r"^### (\S+)\s*$", RULES.read_text(encoding="utf-8"), re.MULTILINE))


def _pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def cli_texts() -> dict[str, str]:
    """Every help text of the CLI, and the demo's summary, as a user sees them."""
    import argparse

    from autodev_shell.cli import build_parser
    from autodev_shell.cli.demo import summary_lines
    from autodev_shell.runner import RunSummary

    texts: dict[str, str] = {}
    parser = build_parser()

    def walk(name: str, p: argparse.ArgumentParser) -> None:
        texts[name] = p.format_help()
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub_name, sub in action.choices.items():
                    walk(f"{name} {sub_name}", sub)

    walk("autodev", parser)
    summary = RunSummary(status="stopped", events=1, calls=1, posts=(("ana", "claude"),),
                         revisions=1, persistence="confirmed")
    lines = summary_lines(summary, [(datetime(2026, 12, 1, tzinfo=UTC), "x")], Path("/run"), [])
    texts["demo summary"] = "\n".join(lines)
    return texts


def test_the_citation_reader_reads_ranges_and_contract_references() -> None:
    assert cited("(A26-A32, B7, SPEC D, SPEC 0.3)") == {
        "A26", "A27", "A28", "A29", "A30", "A31", "A32", "B7", "D", "0.3"}
    assert cited("A2–A6 and (0.4)") == {"A2", "A3", "A4", "A5", "A6", "0.4"}
    assert cited("UTC, 14:30, a 429, PDF, v0.171, (0.8 to 1.2 seen)") == set()


@pytest.mark.parametrize("page", _pages(), ids=lambda p: p.name)
def test_every_rule_a_page_cites_is_explained(page: Path) -> None:
    missing = sorted(cited(page.read_text(encoding="utf-8")) - explained())
    assert not missing, f"{page.name} cites rules docs/rules.md does not explain: {missing}"


@pytest.mark.parametrize("page", _pages(), ids=lambda p: p.name)
def test_a_page_that_cites_rules_links_to_them(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    if page == RULES or not cited(text):
        return
    assert "rules.md" in text, f"{page.name} cites rule numbers but does not link docs/rules.md"


def test_the_cli_text_drops_rule_numbers_or_links_the_rules() -> None:
    for name, text in cli_texts().items():
        numbers = cited(text)
        assert not numbers or "rules.md" in text, f"`{name}` cites {sorted(numbers)} bare"
        assert numbers <= explained(), name


def test_every_rule_is_one_short_paragraph() -> None:
    text = RULES.read_text(encoding="utf-8")
    sections = re.split(r"^### \S+\s*$", text, flags=re.MULTILINE)[1:]
    assert len(sections) == len(explained())
    for body in sections:
        paragraph = body.split("\n## ")[0].strip()
        assert paragraph and "\n\n" not in paragraph and len(paragraph) < 500, paragraph
