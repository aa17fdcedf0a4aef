"""Every code block in README.md and docs/ runs as a test (issue 12 item 7; the rules are in
docs/index.md, "Code blocks in these pages"):

- a `python` block is executed, the page's blocks in order in one namespace, in a fresh temporary
  directory; a `text` block right after it is the output it must print;
- a `sh` block is run by bash in a fresh temporary directory, with this venv's `bin` first on
  PATH, and must exit 0;
- any other block is preceded by a marker saying what it is: `<!-- parsed: KIND -->` reads it as
  a file of that kind (participant, scenario, team settings, command templates, json), and
  `<!-- not run: REASON -->` exempts it, with its reason;
- a page whose python blocks are all signatures (api.md) says so once, at its top, with
  `<!-- not run: ... -->` before its first block.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
MARKER = re.compile(r"<!-- (not run|parsed): ?(.*?) ?-->\s*$")
PAGE_MARKER = re.compile(r"<!-- not run: every python block on this page is a signature[^>]*-->")


class Block:
    def __init__(self, page: Path, line: int, language: str, code: str, marker: str | None,
                 detail: str) -> None:
        self.page, self.line, self.language, self.code = page, line, language, code
        self.marker, self.detail = marker, detail

    def __repr__(self) -> str:
        return f"{self.page.name}:{self.line} ({self.language or 'no language'})"


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = MARKER.search(before)
        found.append(Block(page, text[: match.start()].count("\n") + 1, match.group(1),
                           match.group(2), marker.group(1) if marker else None,
                           marker.group(2) if marker else ""))
    return found


def _signature_page(page: Path) -> bool:
    return bool(PAGE_MARKER.search(page.read_text(encoding="utf-8")))


def _parse(kind: str, code: str, tmp_path: Path) -> None:
    """Read a block as the file it shows."""
    if kind == "participant":
        from autodev_core import parse_participant

        parse_participant(code, id="ana", source="docs")
    elif kind == "scenario":
        from autodev_core import parse_scenario, simulate

        simulate(parse_scenario(code, source="docs"))
    elif kind == "team settings":
        import tempfile

        from autodev_shell.team import load_team

        team = Path(tempfile.mkdtemp(dir=tmp_path)) / "team"  # a page may show several
        team.mkdir()
        (team / "autodev.yaml").write_text(code, encoding="utf-8")
        for member in yaml.safe_load(code).get("order", ["ana"]):
            (team / f"{member}.md").write_text("---\nprovider: claude\n---\nHi.\n", "utf-8")
        load_team(team)
    elif kind == "command templates":
        from autodev_shell.calls import templates_from_config

        templates_from_config(yaml.safe_load(code)["commands"], source="docs")
    elif kind == "json":
        json.loads(code)
    else:
        raise AssertionError(f"unknown block kind {kind!r} in a `parsed:` marker")


def _pages_with_blocks() -> list[Path]:
    return [page for page in PAGES if blocks(page)]


@pytest.mark.parametrize("page", _pages_with_blocks(), ids=lambda p: p.name)
def test_every_code_block_runs(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": f"docs_{page.stem}"}
    signatures = _signature_page(page)
    found = blocks(page)
    last_output: str | None = None
    for index, block in enumerate(found):
        if block.marker == "not run":
            assert block.detail.strip(), f"{block}: `not run` needs a reason"
            last_output = None
            continue
        if block.marker == "parsed":
            _parse(block.detail, block.code, tmp_path)
            last_output = None
            continue
        if block.language == "python" and signatures:
            continue
        if block.language == "python":
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(block.code, f"{page.name}:{block.line}", "exec"), namespace)
            last_output = out.getvalue()
        elif block.language == "sh":
            env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
            done = subprocess.run(["bash", "-euo", "pipefail", "-c", block.code], cwd=tmp_path,
                                  env=env, capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, (block, done.stdout, done.stderr)
            last_output = done.stdout
        elif block.language == "text" and index and last_output is not None:
            assert last_output == block.code, f"{block} is not what the block above prints"
            last_output = None
        else:
            raise AssertionError(
                f"{block} is neither run nor marked: add `<!-- parsed: KIND -->` or "
                "`<!-- not run: REASON -->` on the line before it (docs/index.md)"
            )


def test_an_unmarked_block_of_another_language_is_refused(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# t\n\n```yaml\na: 1\n```\n\n<!-- not run: output -->\n```text\nx\n```\n")
    found = blocks(page)
    assert [(b.language, b.marker) for b in found] == [("yaml", None), ("text", "not run")]
