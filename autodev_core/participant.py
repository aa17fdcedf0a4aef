"""Participants and their files: markdown with YAML front matter (SPEC A10, A13, C5, D)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import attrs

from .engine import PROVIDERS, Engine
from .errors import ConfigError

if TYPE_CHECKING:
    import yaml


@attrs.frozen
class ConfigWarning:
    """Something a human-written file says that is allowed but cannot do what it seems to.

    Data, not a side effect (SPEC 0.1): the core returns it, the shell prints it once. Written
    as a `ConfigError` is: `source:line: message` (C5).
    """

    message: str
    source: str = "<string>"
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.source}:{self.line}" if self.line is not None else self.source
        return f"{where}: {self.message}"


_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
_FENCE = "---"
#: Keys a participant file may set; anything else is a typo (C5).
KNOWN_KEYS: tuple[str, ...] = ("provider", "model", "failover", "gate")


def _check_id(_instance: object, _attribute: object, value: str) -> None:
    if not _ID_RE.match(value):
        raise ValueError(f"malformed participant id {value!r}")


def _engines(value: Iterable[Engine]) -> tuple[Engine, ...]:
    return tuple(value)


@attrs.frozen
class Participant:
    """One member of the team: its primary provider, pin, failover chain and prompt."""

    id: str = attrs.field(validator=_check_id)
    provider: str = attrs.field(validator=attrs.validators.in_(PROVIDERS))
    model: str | None = None
    failover: tuple[Engine, ...] = attrs.field(default=(), converter=_engines)
    gate: bool = False
    prompt: str = ""

    @property
    def primary(self) -> Engine:
        """The primary engine is the provider alone; the pin is not a separate engine (A9)."""
        return Engine(self.provider)

    @property
    def entries(self) -> tuple[Engine, ...]:
        """The primary engine followed by the failover chain, in order (A10)."""
        return (self.primary, *self.failover)

    def model_for(self, entry: Engine) -> str | None:
        """The model to ask the CLI for on `entry`: the pin on the primary only (A13)."""
        if entry == self.primary:
            return self.model
        return entry.model


def _node_line(node: yaml.Node, offset: int) -> int:
    return int(node.start_mark.line) + 1 + offset


def find_duplicate_key(node: yaml.Node | None) -> tuple[str, int, int] | None:
    """The first key a mapping anywhere in `node` repeats: (key, line of its first use, line of
    the repeat), lines counted from 1 in the composed text. YAML loaders keep the last value of
    a repeated key silently; a participant or settings file must not (C5)."""
    import yaml  # loaded with the file it reads (see `parse_participant`)

    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                key = str(key_node.value)
                line = int(key_node.start_mark.line) + 1
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


def parse_participant(text: str, *, id: str, source: str = "<string>") -> Participant:
    """Read a participant file. Raises ConfigError naming `source` and the line (C5)."""
    return read_participant(text, id=id, source=source)[0]


def read_participant(
    text: str, *, id: str, source: str = "<string>"
) -> tuple[Participant, tuple[ConfigWarning, ...]]:
    """`parse_participant`, plus what the file says that is allowed but useless (C5): a failover
    entry naming the participant's own primary engine (A9) is limited whenever the primary is
    and out whenever its provider is, so it can never be the free entry a hop looks for (A11)."""
    if not _ID_RE.match(id or ""):
        raise ConfigError(f"malformed participant id {id!r}", source=source)
    if text.startswith("\ufeff"):  # a UTF-8 byte order mark, as some editors write: accepted
        text = text[1:]
    lines = text.splitlines()
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None or lines[first].strip() != _FENCE:
        raise ConfigError(
            "no YAML front matter: the file must start with a '---' line",
            source=source,
            line=(first or 0) + 1,
        )
    try:
        close = next(i for i in range(first + 1, len(lines)) if lines[i].strip() == _FENCE)
    except StopIteration:
        raise ConfigError(
            "front matter is not closed by a '---' line", source=source, line=first + 1
        ) from None
    offset = first + 1  # lines before the YAML text
    front = "\n".join(lines[first + 1 : close])
    body = "\n".join(lines[close + 1 :]).strip("\n")
    import yaml  # on first use: a command that reads no participant file does not pay for it

    try:
        node = yaml.compose(front, Loader=yaml.SafeLoader)
        data: Any = yaml.safe_load(front)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = int(mark.line) + 1 + offset if mark is not None else first + 1
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise ConfigError(
            f"invalid YAML in front matter: {problem}", source=source, line=line
        ) from None
    duplicate = find_duplicate_key(node)
    if duplicate is not None:
        key, first_use, repeat = duplicate
        raise ConfigError(
            f"duplicate key {key!r} (first given on line {first_use + offset})",
            source=source,
            line=repeat + offset,
        )
    if data is None:
        raise ConfigError(
            "front matter is empty: 'provider' is required", source=source, line=first + 1
        )
    if not isinstance(data, dict) or not isinstance(node, yaml.MappingNode):
        raise ConfigError(
            "front matter must be a mapping of keys to values", source=source, line=offset + 1
        )
    key_lines: dict[str, int] = {}
    value_nodes: dict[str, yaml.Node] = {}
    for key_node, value_node in node.value:
        key = str(key_node.value)
        key_lines[key] = _node_line(key_node, offset)
        value_nodes[key] = value_node

    def fail(key: str, message: str) -> ConfigError:
        return ConfigError(message, source=source, line=key_lines.get(key, first + 1))

    for key in data:
        if key not in KNOWN_KEYS:
            raise fail(str(key), f"unknown key {key!r} (known keys: {', '.join(KNOWN_KEYS)})")
    if "provider" not in data:
        raise ConfigError("missing required key 'provider'", source=source, line=first + 1)
    provider = data["provider"]
    if not isinstance(provider, str) or provider.strip() not in PROVIDERS:
        raise fail("provider", f"unknown provider {provider!r} (known: {', '.join(PROVIDERS)})")
    model = data.get("model")
    if model is not None and (not isinstance(model, str) or not model.strip()):
        raise fail("model", f"'model' must be a non-empty string, not {model!r}")
    gate = data.get("gate", False)
    if not isinstance(gate, bool):
        raise fail("gate", f"'gate' must be true or false, not {gate!r}")
    raw_chain = data.get("failover", [])
    if raw_chain is None:
        raw_chain = []
    if not isinstance(raw_chain, list):
        raise fail("failover", "'failover' must be a list of 'provider[:model]' entries")
    chain: list[Engine] = []
    warnings: list[ConfigWarning] = []
    primary = Engine(provider.strip())  # A9: the provider alone, whatever the pin
    chain_node = value_nodes.get("failover")
    for index, entry in enumerate(raw_chain):
        line = key_lines.get("failover", first + 1)
        if isinstance(chain_node, yaml.SequenceNode) and index < len(chain_node.value):
            line = _node_line(chain_node.value[index], offset)
        if not isinstance(entry, str):
            raise ConfigError(
                f"failover entry {index + 1} must be 'provider[:model]', not {entry!r}",
                source=source,
                line=line,
            )
        try:
            chain.append(Engine.parse(entry))
        except ValueError as exc:
            raise ConfigError(
                f"bad failover entry {entry!r}: {exc}", source=source, line=line
            ) from None
        if chain[-1] == primary and not warnings:  # once per file
            warnings.append(ConfigWarning(
                f"failover entry {entry!r} is this participant's own primary engine (A9): it "
                "is limited whenever the primary is, so a hop never lands on it; leave it "
                f"out, or name a model ('{primary.provider}:<model>' is an engine of its own)",
                source=source,
                line=line,
            ))
    participant = Participant(
        id=id,
        provider=provider.strip(),
        model=model.strip() if isinstance(model, str) else None,
        failover=tuple(chain),
        gate=gate,
        prompt=body,
    )
    return participant, tuple(warnings)
