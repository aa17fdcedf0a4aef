"""The environment each call runs with (docs/participants.md, Accounts).

A call's environment is the daemon's own, then the team's `env:` (autodev.yaml), then the
`env:` block of the account its engine names (`claude@work: {CLAUDE_CONFIG_DIR: …}`), then the
participant's own `env:` — each later one wins. Values are text, or `${VAR}` read from the
daemon's environment when the run starts (a `${VAR}` not set there is one line at start,
naming the file and the variable's line).
Values are never logged nor shown: status, lanes and the panel show argv and engine names only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

import attrs

from autodev_core.engine import Engine
from autodev_core.errors import ConfigError

#: An environment variable's name.
NAME: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_REFERENCE: Final = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_EMPTY: Final[Mapping[str, str]] = MappingProxyType({})
_NO_LINES: Final[Mapping[str, int]] = MappingProxyType({})
_NO_BLOCKS: Final[Mapping[str, Mapping[str, int]]] = MappingProxyType({})


#: The line each variable of an `env:` block is written on, by name (`yaml_lines.key_lines`).
Lines = Mapping[str, int]


def read_variables(value: Any, *, what: str, source: str, line: int | None = None,
                   lines: Lines = _NO_LINES) -> dict[str, str]:
    """A mapping of variable names to text (numbers and booleans written as YAML reads them
    are refused: quote them), or a `ConfigError` naming `what` and the variable's line in
    `lines` (else `line`, the block's)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{what}: must map variable names to values", source=source,
                          line=line)
    out: dict[str, str] = {}
    for name, text in value.items():
        at = lines.get(str(name), line)
        if not isinstance(name, str):
            written = _written_as(name, lines)
            if written is not None:  # `NO:`, `on:`, `1:` — YAML read the name as a value
                raise ConfigError(
                    f"{what}: {written} reads as the YAML value {name!r}, not a variable name: "
                    f"quote it ('{written}': …)", source=source, line=lines[written])
        if not isinstance(name, str) or not NAME.match(name):
            raise ConfigError(f"{what}: {name!r} is not a variable name", source=source,
                              line=at)
        if not isinstance(text, str):
            raise ConfigError(f"{what}: {name} must be text (quote it), not {text!r}",
                              source=source, line=at)
        out[name] = text
    return out


def _written_as(name: object, lines: Lines) -> str | None:
    """The key as written of a name YAML read as another value (`NO` read as False), found
    among the keys `lines` has as written; None when no key reads so."""
    import yaml

    for written in lines:
        try:
            value = yaml.safe_load(written)
        except yaml.YAMLError:
            continue
        if type(value) is type(name) and value == name:
            return written
    return None


def read_team_env(value: Any, *, source: str, line: int | None = None,
                  lines: Lines = _NO_LINES, block_lines: Mapping[str, Lines] = _NO_BLOCKS,
                  ) -> tuple[dict[str, str], dict[str, dict[str, str]], dict[str, Lines]]:
    """`env:` of autodev.yaml: variables for every call, a block per account (`claude@work:
    {…}`, keyed by the account's engine as `str` writes it), and the lines of each account's
    variables (keyed so too). `lines` holds the line of each key of `env:`, `block_lines` that
    of each key of an account's block (keyed as written)."""
    if value is None:
        return {}, {}, {}
    if not isinstance(value, dict):
        raise ConfigError("env: must map variable names to values, and accounts "
                          "(claude@work) to their own", source=source, line=line)
    plain: dict[str, Any] = {}
    accounts: dict[str, dict[str, str]] = {}
    account_lines: dict[str, Lines] = {}
    for key, item in value.items():
        if isinstance(key, str) and "@" in key:
            at = lines.get(key, line)
            try:
                engine = Engine.parse(key)
            except ValueError as exc:
                raise ConfigError(f"env: {exc}", source=source, line=at) from None
            if engine.model is not None or engine.account is None:
                raise ConfigError(f"env: {key!r} names a model; an account's block is "
                                  "provider@account", source=source, line=at)
            inner = block_lines.get(key, _NO_LINES)
            accounts[str(engine)] = read_variables(item, what=f"env: {key}", source=source,
                                                   line=at, lines=inner)
            account_lines[str(engine)] = inner
        else:
            plain[key] = item
    team = read_variables(plain, what="env", source=source, line=line, lines=lines)
    return team, accounts, account_lines


def resolve(values: Mapping[str, str], environ: Mapping[str, str], *, what: str,
            source: str, lines: Lines = _NO_LINES) -> dict[str, str]:
    """`values` with each `${VAR}` replaced from `environ`; one that is not set is a
    `ConfigError` naming the file, the variable's line in `lines` and the variable (its name
    only, never a value): `<file>:<line>: env: TOKEN reads ${VAR}, which is not set in
    autodev's environment`."""
    out: dict[str, str] = {}
    for name, text in values.items():
        def found(match: re.Match[str], name: str = name) -> str:
            variable = match.group(1)
            if variable not in environ:
                raise ConfigError(f"{what}: {name} reads ${{{variable}}}, which is not set in "
                                  "autodev's environment", source=source,
                                  line=lines.get(name))
            return environ[variable]

        out[name] = _REFERENCE.sub(found, text)
    return out


def _frozen(values: Mapping[str, Mapping[str, str]]) -> Mapping[str, Mapping[str, str]]:
    return MappingProxyType({k: MappingProxyType(dict(v)) for k, v in values.items()})


def _frozen_one(values: Mapping[str, str]) -> Mapping[str, str]:
    return MappingProxyType(dict(values))


@attrs.frozen
class CallEnvironments:
    """The resolved `env:` of a run: the team's, each account's (by `str(engine.primary)`) and
    each participant's (by id). `for_call` gives one call's variables over `base`."""

    team: Mapping[str, str] = attrs.field(default=_EMPTY, converter=_frozen_one)
    accounts: Mapping[str, Mapping[str, str]] = attrs.field(factory=dict, converter=_frozen)
    members: Mapping[str, Mapping[str, str]] = attrs.field(factory=dict, converter=_frozen)

    def for_call(self, base: Mapping[str, str], participant: str, engine: Engine
                 ) -> dict[str, str]:
        env = dict(base)
        env.update(self.team)
        if engine.account is not None:
            env.update(self.accounts.get(str(engine.primary), _EMPTY))
        env.update(self.members.get(participant, _EMPTY))
        return env

    @property
    def empty(self) -> bool:
        return not (self.team or self.accounts or self.members)
