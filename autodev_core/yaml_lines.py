"""YAML read with its line numbers: the one way every human-written file is read (SPEC C5, D).

Participant files (their front matter), scenario files and `autodev.yaml` are all read here:
the text is composed into nodes, which keep the line each value was written on, and a syntax
error or a key given twice becomes a `ConfigError` naming the file and the line. What the keys
mean is each file's own reader's job (`participant.py`, `simulation/scenario_yaml.py`, and
the shell's reader of a team folder).

PyYAML is imported on first use: a command that reads no YAML does not pay for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import ConfigError

if TYPE_CHECKING:
    import yaml


def node_line(node: yaml.Node, offset: int = 0) -> int:
    """The line `node` starts on, counted from 1, with `offset` lines before the YAML text."""
    return int(node.start_mark.line) + 1 + offset


def key_lines(node: yaml.Node | None, offset: int = 0) -> dict[str, int]:
    """The line each key of the mapping `node` is written on ({} when `node` is no mapping),
    with `offset` lines before the YAML text: for errors found after the values are read
    (an `env:` variable's `${VAR}` not set at start, docs/participants.md)."""
    import yaml

    if not isinstance(node, yaml.MappingNode):
        return {}
    return {str(key.value): node_line(key, offset) for key, _value in node.value}


def value_node(node: yaml.Node | None, key: str) -> yaml.Node | None:
    """The node `key` of the mapping `node` holds (None when absent or `node` is no mapping)."""
    import yaml

    if not isinstance(node, yaml.MappingNode):
        return None
    return next((value for k, value in node.value if str(k.value) == key), None)


def yaml_problem(exc: Exception) -> str:
    """What a YAML error says is wrong, in one line's words."""
    return str(getattr(exc, "problem", None) or exc).strip()


def compose_yaml(text: str, *, source: str) -> yaml.Node | None:
    """The node tree of `text` (None for an empty text), each node with its line; invalid
    YAML is a `ConfigError` reading `<source>:<line>: invalid YAML: <problem>`."""
    import yaml

    try:
        return yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        raise _invalid(exc, source=source, what="invalid YAML", offset=0, line=None) from None


def load_yaml(
    text: str,
    *,
    source: str,
    what: str = "invalid YAML",
    offset: int = 0,
    line: int | None = None,
) -> tuple[yaml.Node | None, Any]:
    """`compose_yaml` and the values it holds, with a key given twice anywhere refused: YAML
    loaders keep the last value of a repeated key silently; a file people write must not (C5).
    Errors read `<source>:<line>: <what>: <problem>` or `duplicate key 'k' (first given on line
    N)` at the repeat's line; `offset` lines stand before the text in its file, and `line` is
    the line named when a YAML error marks none."""
    import yaml

    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = construct_yaml(node) if node is not None else None
    except yaml.YAMLError as exc:
        raise _invalid(exc, source=source, what=what, offset=offset, line=line) from None
    duplicate = find_duplicate_key(node)
    if duplicate is not None:
        key, first_use, repeat = duplicate
        raise ConfigError(
            f"duplicate key {key!r} (first given on line {first_use + offset})",
            source=source,
            line=repeat + offset,
        )
    return node, data


def construct_yaml(node: yaml.Node) -> Any:
    """The plain values a node holds (mappings, lists, scalars), as `yaml.safe_load` makes
    them."""
    import yaml

    return yaml.constructor.SafeConstructor().construct_object(node, deep=True)


def find_duplicate_key(node: yaml.Node | None) -> tuple[str, int, int] | None:
    """The first key a mapping anywhere in `node` repeats: (key, line of its first use, line of
    the repeat), lines counted from 1 in the composed text."""
    import yaml

    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                key = str(key_node.value)
                line = node_line(key_node)
                if key in seen:
                    return key, seen[key], line
                seen[key] = line
            found = find_duplicate_key(value_node)
            if found is not None:
                return found
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            found = find_duplicate_key(item)
            if found is not None:
                return found
    return None


def _invalid(exc: Exception, *, source: str, what: str, offset: int,
             line: int | None) -> ConfigError:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    at = int(mark.line) + 1 + offset if mark is not None else line
    return ConfigError(f"{what}: {yaml_problem(exc)}", source=source, line=at)
