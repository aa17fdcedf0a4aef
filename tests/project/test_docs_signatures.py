"""Where docs/*.md and README.md write an exported value as `Name(field, field, …)`, the fields
are that class's own, in its order (D; issue 28 item 4: orchestrators.md wrote
`StartCall(participant, engine, …)` for a class whose first field is `at`)."""

from __future__ import annotations

import re
from pathlib import Path

import attrs
import pytest

import autodev_core

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: `Name(a, b, …)` in inline code: plain field names, optionally ending with an ellipsis.
WRITTEN = re.compile(r"`([A-Z][A-Za-z]*)\(((?:[a-z_]+, )*[a-z_]+)(?:, (?:…|\.\.\.))?\)`")


def _classes() -> dict[str, type]:
    found: dict[str, type] = {}
    for name in autodev_core.__all__:
        value = getattr(autodev_core, name)
        if isinstance(value, type) and attrs.has(value):
            found[name] = value
    return found


def _mentions() -> list[tuple[str, str, list[str]]]:
    classes = _classes()
    seen = []
    for page in PAGES:
        for match in WRITTEN.finditer(page.read_text(encoding="utf-8")):
            name, fields = match.group(1), match.group(2).split(", ")
            if name in classes:
                seen.append((f"{page.name}: {match.group(0)}", name, fields))
    return seen


MENTIONS = _mentions()


def test_D_the_docs_write_some_signatures_to_check() -> None:
    names = {name for _where, name, _fields in MENTIONS}
    assert {"StartCall", "Sleep", "Log", "CallEnded"} <= names


@pytest.mark.parametrize(("where", "name", "fields"), MENTIONS, ids=[m[0] for m in MENTIONS])
def test_D_a_written_signature_names_the_first_fields_in_order(
    where: str, name: str, fields: list[str]
) -> None:
    actual = [f.name for f in attrs.fields(_classes()[name])]
    assert fields == actual[: len(fields)], f"{where}: {name}'s fields are {actual}"


def _api_blocks() -> dict[str, str]:
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    heads = list(re.finditer(r"^### `([A-Za-z_][A-Za-z0-9_]*)`\s*$", text, re.MULTILINE))
    blocks = {}
    for i, head in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        blocks[head.group(1)] = text[head.end():end].split("```python\n", 1)[-1].split("```")[0]
    return blocks


@pytest.mark.parametrize("name", sorted(_classes()))
def test_D_api_md_signature_names_every_field(name: str) -> None:
    """api.md's `Scenario(...)` left out `peers` and `policy` (issue 28 item 4)."""
    block = _api_blocks()[name]
    missing = [f.name for f in attrs.fields(_classes()[name])
               if f.init and not re.search(rf"\b{f.name}\b", block)]
    assert not missing, f"docs/api.md's signature of {name} leaves out {missing}"
