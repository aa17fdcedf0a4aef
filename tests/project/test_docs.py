"""Documentation that runs: the orchestrator guide's example prints what the page says."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.DOTALL)


def test_the_orchestrator_guide_example_prints_what_the_page_shows() -> None:
    page = (DOCS / "orchestrators.md").read_text(encoding="utf-8")
    (code,) = [b for b in _blocks(page, "python") if "run_cli" in b]
    shown = _blocks(page, "text")[0]  # the first output shown is this example's (then asyncio's)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "docs/orchestrators.md", "exec"), {"__name__": "docs_example"})
    assert out.getvalue() == shown


def test_the_restart_recipe_starts_the_owed_turn_of_a_crashed_call() -> None:
    # issue 12.1: a state saved mid-call, restored with a changed team, starts the owed turn.
    page = (DOCS / "orchestrators.md").read_text(encoding="utf-8")
    (code,) = [b for b in _blocks(page, "python")
               if "restore_state(" in b and "ResumeRequested" in b]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "docs/orchestrators.md", "exec"), {"__name__": "docs_example"})
    assert out.getvalue() == "[('ana', 'ana')]\n"
    assert "It prints `[('ana', 'ana')]`" in page
