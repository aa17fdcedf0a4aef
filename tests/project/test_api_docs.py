"""docs/api.md documents every public name of `autodev_core` (SPEC D), and nothing that is gone.

Each name of `autodev_core.__all__` needs its own section, headed "### `name`", with a
signature block and a rule reference; the scheduler's events and effects (exported because an
orchestrator drives `step` with them) are checked through the same list.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import autodev_core
from autodev_core.scheduler import EFFECT_TYPES, EVENT_TYPES

API_DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"
HEADING = re.compile(r"^### `([A-Za-z_][A-Za-z0-9_]*)`\s*$", re.MULTILINE)
RULE = re.compile(r"\((?:[^()]*\b)?(?:[ABCD]\d*|SPEC)\b[^()]*\)")


def _sections() -> dict[str, str]:
    text = API_DOC.read_text(encoding="utf-8")
    heads = list(HEADING.finditer(text))
    sections: dict[str, str] = {}
    for i, head in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        body = text[head.end() : end].split("\n## ")[0]
        sections[head.group(1)] = body
    return sections


def missing_names(names: list[str], sections: dict[str, str]) -> list[str]:
    return [name for name in names if name not in sections]


def test_D_every_public_name_has_a_section() -> None:
    missing = missing_names(list(autodev_core.__all__), _sections())
    assert not missing, f"docs/api.md has no '### `name`' section for: {', '.join(missing)}"


def test_D_no_section_for_a_name_that_is_not_public() -> None:
    extra = sorted(set(_sections()) - set(autodev_core.__all__))
    assert not extra, f"docs/api.md documents names autodev_core does not export: {extra}"


@pytest.mark.parametrize("name", sorted(autodev_core.__all__))
def test_D_section_has_a_signature_and_rule_numbers(name: str) -> None:
    body = _sections().get(name, "")
    assert "```python\n" in body and name in body.split("```python\n", 1)[-1].split("```")[0], (
        f"the section of {name} needs a ```python signature block naming it"
    )
    assert RULE.search(body), f"the section of {name} cites no rule number"


def test_D_scheduler_events_and_effects_are_exported_and_documented() -> None:
    sections = _sections()
    for kind in (*EVENT_TYPES, *EFFECT_TYPES):
        assert kind.__name__ in autodev_core.__all__
        assert kind.__name__ in sections, f"docs/api.md lacks {kind.__name__}"


def test_D_the_check_fails_for_a_missing_name() -> None:
    # The guard itself can fail: a name without a section is reported.
    sections = _sections()
    assert missing_names(["step", "not_a_public_name"], sections) == ["not_a_public_name"]
