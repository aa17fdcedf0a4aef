"""Participants and their files: markdown with YAML front matter (SPEC A10, A13, C5, D)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, NamedTuple

import attrs

from .engine import PROVIDERS, Engine
from .errors import ConfigError
from .yaml_lines import key_lines, load_yaml, node_line


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
#: `env` is read by the shell (docs/participants.md, Accounts): the core never holds its values.
KNOWN_KEYS: tuple[str, ...] = ("provider", "model", "failover", "gate", "env")


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
    #: The account the primary runs on (`provider: claude@work`; docs/participants.md,
    #: Accounts); None: the CLI's own login, as before accounts existed.
    account: str | None = attrs.field(default=None, kw_only=True)

    @property
    def primary(self) -> Engine:
        """The primary engine is the provider alone (on its account); the pin is not a
        separate engine (A9)."""
        return Engine(self.provider, account=self.account)

    @property
    def entries(self) -> tuple[Engine, ...]:
        """The primary engine followed by the failover chain, in order (A10)."""
        return (self.primary, *self.failover)

    def model_for(self, entry: Engine) -> str | None:
        """The model to ask the CLI for on `entry`: the pin on the primary only (A13)."""
        if entry == self.primary:
            return self.model
        return entry.model


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
    front = _front_matter(text, source)
    fields = _Fields(front, source)
    provider, model, gate = fields.settings()
    primary = Engine.parse(provider)  # `claude` or `claude@work`
    # A9: the provider alone (on its account), whatever the pin
    chain, warnings = fields.chain(primary)
    participant = Participant(
        id=id, provider=primary.provider, model=model, failover=chain, gate=gate,
        prompt=front.body, account=primary.account,
    )
    return participant, warnings


def front_matter_value(text: str, key: str, *, source: str = "<string>"
                       ) -> tuple[Any, int | None]:
    """The value of `key` in a participant file's front matter and its line (None, None when
    absent): for keys the shell reads itself, such as `env` (docs/participants.md, Accounts),
    whose values the core never holds. The file is read as `read_participant` reads it."""
    value, line, _lines = front_matter_entry(text, key, source=source)
    return value, line


def front_matter_entry(text: str, key: str, *, source: str = "<string>"
                       ) -> tuple[Any, int | None, dict[str, int]]:
    """`front_matter_value`, and the line each key of the value is written on when it is a
    mapping (`env:`: a `${VAR}` not set at start names its variable's line)."""
    fields = _Fields(_front_matter(text, source), source)
    if key not in fields.data:
        return None, None, {}
    return fields.data[key], fields.lines.get(key), key_lines(fields.nodes[key], fields.offset)


class _FrontMatter(NamedTuple):
    """A participant file cut at its fences: the YAML between them and the prompt after (a
    working value of the reader, not one of the core's serialized values)."""

    yaml: str
    body: str
    first: int  # the index of the opening '---' line
    offset: int  # the lines before the YAML text


def _front_matter(text: str, source: str) -> _FrontMatter:
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
    return _FrontMatter(
        yaml="\n".join(lines[first + 1 : close]),
        body="\n".join(lines[close + 1 :]).strip("\n"),
        first=first,
        offset=first + 1,
    )


class _Fields:
    """The front matter's keys, each with the line it is written on, read strictly (C5)."""

    def __init__(self, front: _FrontMatter, source: str) -> None:
        import yaml  # on first use: a command that reads no participant file does not pay

        self.source = source
        self.offset = front.offset
        self.fallback = front.first + 1  # the opening fence: where a missing key is reported
        node, data = load_yaml(front.yaml, source=source, what="invalid YAML in front matter",
                               offset=front.offset, line=self.fallback)
        if data is None:
            raise ConfigError(
                "front matter is empty: 'provider' is required", source=source, line=self.fallback
            )
        if not isinstance(data, dict) or not isinstance(node, yaml.MappingNode):
            raise ConfigError(
                "front matter must be a mapping of keys to values", source=source,
                line=front.offset + 1,
            )
        self.data: dict[Any, Any] = data
        self.lines = {str(k.value): node_line(k, front.offset) for k, _v in node.value}
        self.nodes = {str(k.value): v for k, v in node.value}

    def fail(self, key: str, message: str, line: int | None = None) -> ConfigError:
        at = line if line is not None else self.lines.get(key, self.fallback)
        return ConfigError(message, source=self.source, line=at)

    def settings(self) -> tuple[str, str | None, bool]:
        """The provider, the pin and the gate, each checked."""
        data = self.data
        for key in data:
            if key not in KNOWN_KEYS:
                raise self.fail(str(key),
                                f"unknown key {key!r} (known keys: {', '.join(KNOWN_KEYS)})")
        if "provider" not in data:
            raise self.fail("provider", "missing required key 'provider'", line=self.fallback)
        provider = data["provider"]
        name = provider.partition("@")[0] if isinstance(provider, str) else ""
        if not isinstance(provider, str) or name.strip() not in PROVIDERS:
            raise self.fail("provider",
                            f"unknown provider {provider!r} (known: {', '.join(PROVIDERS)}, "
                            "each with an optional @account)")
        if ":" in provider:
            raise self.fail("provider", f"'provider' names no model ({provider!r}): the pin "
                            "is 'model:'")
        try:
            Engine.parse(provider)
        except ValueError as exc:
            raise self.fail("provider", str(exc)) from None
        model = data.get("model")
        if model is not None and (not isinstance(model, str) or not model.strip()):
            raise self.fail("model", f"'model' must be a non-empty string, not {model!r}")
        gate = data.get("gate", False)
        if not isinstance(gate, bool):
            raise self.fail("gate", f"'gate' must be true or false, not {gate!r}")
        return provider.strip(), model.strip() if isinstance(model, str) else None, gate

    def chain(self, primary: Engine) -> tuple[tuple[Engine, ...], tuple[ConfigWarning, ...]]:
        """The failover chain (A10), and a warning for an entry that is the primary (A9)."""
        import yaml

        raw_chain = self.data.get("failover", [])
        if raw_chain is None:
            raw_chain = []
        if not isinstance(raw_chain, list):
            raise self.fail("failover", "'failover' must be a list of 'provider[:model]' entries")
        chain: list[Engine] = []
        warnings: list[ConfigWarning] = []
        chain_node = self.nodes.get("failover")
        for index, entry in enumerate(raw_chain):
            line = self.lines.get("failover", self.fallback)
            if isinstance(chain_node, yaml.SequenceNode) and index < len(chain_node.value):
                line = node_line(chain_node.value[index], self.offset)
            if not isinstance(entry, str):
                raise self.fail("failover", f"failover entry {index + 1} must be "
                                f"'provider[:model]', not {entry!r}", line=line)
            try:
                chain.append(Engine.parse(entry))
            except ValueError as exc:
                raise self.fail("failover", f"bad failover entry {entry!r}: {exc}",
                                line=line) from None
            if chain[-1] == primary and not warnings:  # once per file
                warnings.append(ConfigWarning(
                    f"failover entry {entry!r} is this participant's own primary engine (A9): "
                    "it is limited whenever the primary is, so a hop never lands on it; leave "
                    f"it out, or name a model ('{primary.provider}:<model>' is an engine of its "
                    "own)",
                    source=self.source,
                    line=line,
                ))
        return tuple(chain), tuple(warnings)
