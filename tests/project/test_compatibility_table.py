"""docs/compatibility.md's table is what the conformance kit's recordings read as now (A2-A6).

The table is written by `tests/conformance/table.py --write` from tests/fixtures/realcli/kit/,
each transcript read again by this commit's core: a change in what autodev reads of a real
CLI's output shows up here until the page is written again."""

from __future__ import annotations

from conformance import versions
from conformance.cases import BY_KEY
from conformance.table import BEGIN, END, PAGE, table, transcripts
from conformance.transcripts import version_number


def test_the_page_shows_what_the_recordings_read_as_now() -> None:
    page = PAGE.read_text(encoding="utf-8")
    shown = page[page.index(BEGIN) + len(BEGIN) : page.index(END)].strip()
    assert shown == table(transcripts()), (
        "docs/compatibility.md is out of date: python tests/conformance/table.py --write")


def test_every_case_is_recorded_with_the_pinned_versions() -> None:
    pinned = {"claude": versions.CLAUDE[1], "codex": versions.CODEX[1]}
    recorded = {t.key for t in transcripts() if version_number(t.version) == pinned[t.cli]}
    assert set(BY_KEY) <= recorded, sorted(set(BY_KEY) - recorded)


def test_the_page_names_the_pinned_versions() -> None:
    page = PAGE.read_text(encoding="utf-8")
    for package, version in (versions.CLAUDE, versions.CODEX):
        assert f"`{package}` {version}" in page
