"""A call's command line (SPEC C1, A12, A13): which CLI, with which arguments, the prompt where.

- `CommandTemplate`: how to call one provider's CLI; `DEFAULT_TEMPLATES` are claude's, codex's
  and agy's own (checked against the real CLIs), overridable per provider by the run's config
  (`templates_from_config`, mistakes as a `ConfigError` naming the file and the field).
- `build_argv(provider, prompt, model)` / `argv_for(participant, entry, prompt)`: the argv of one
  call; `prompt_on_stdin` says whether its CLI reads the prompt on stdin instead.
- `installed_providers()`: which CLIs this machine has (A12: an entry naming a missing CLI is
  skipped — the core decides that; the shell only reports what is installed).
"""

from __future__ import annotations

import math
import os
import re
import shutil
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

import attrs

from autodev_core.engine import PROVIDERS, Engine
from autodev_core.errors import ConfigError
from autodev_core.participant import Participant
from autodev_core.scheduler.policy import CLI_OWN_RETRIES

#: C1: default per-call timeout (the agy watchdog, and the same bound for claude and codex).
#: The SPEC gives no number; an hour lets a long coding turn finish.
DEFAULT_CALL_TIMEOUT_SECONDS = 3600.0
#: The largest prompt passed as one argv item. Linux refuses any single argument over
#: MAX_ARG_STRLEN (32 pages: 128 KiB) with E2BIG; this leaves room below it, so a long
#: participant body plus the thread window never makes a call impossible to start. A longer
#: prompt goes into a private file the argv prompt points to (`call_participant`).
ARGV_PROMPT_MAX_BYTES = 96 * 1024

#: The variable through which a CLI takes how often it retries a failed request by itself
#: (`CLI_OWN_RETRIES`, docs/limits.md "Whose retries"): claude's. codex keeps its own retries
#: (its config.toml's, about 16-25 s at worst); agy has none that can be set.
RETRY_ENV: Mapping[str, str] = MappingProxyType({"claude": "CLAUDE_CODE_MAX_RETRIES"})


def call_environment(provider: str, env: Mapping[str, str] | None) -> dict[str, str] | None:
    """The environment of a call to `provider`'s CLI: `env` (None: the daemon's own), with the
    CLI's own retries set to `CLI_OWN_RETRIES` unless that environment sets them already."""
    variable = RETRY_ENV.get(provider)
    if variable is None:
        return None if env is None else dict(env)
    base = dict(os.environ if env is None else env)
    base.setdefault(variable, str(CLI_OWN_RETRIES))
    return base


_PLACEHOLDER = re.compile(r"\{(binary|prompt|model)\}")
#: In `argv`, the item replaced by `model_args` when a model applies (else dropped).
MODEL_ARGS = "{model_args}"


def _str_tuple(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


@attrs.frozen
class CommandTemplate:
    """How to call one provider's CLI.

    `argv` items may hold `{binary}` and `{prompt}`; the item `{model_args}` stands where
    `model_args` go when the call names a model (`{model}` inside them), and disappears when it
    does not. `binary` is a command name looked up on PATH, or a path. An argv without
    `{prompt}` gives the prompt to the CLI on its standard input (`prompt_on_stdin`).
    """

    binary: str
    argv: tuple[str, ...] = attrs.field(converter=_str_tuple)
    model_args: tuple[str, ...] = attrs.field(converter=_str_tuple, default=())
    timeout_seconds: float = DEFAULT_CALL_TIMEOUT_SECONDS

    def __attrs_post_init__(self) -> None:
        if not self.binary.strip():
            raise ValueError("a command's binary must not be empty")
        if not self.argv:
            raise ValueError("a command's argv must not be empty")
        if any("{prompt}" in item for item in self.model_args):
            raise ValueError("{prompt} belongs in argv, not in model_args")
        if any("{model}" in item for item in self.argv):
            raise ValueError("{model} belongs in model_args, not in argv")
        if not math.isfinite(self.timeout_seconds) or self.timeout_seconds <= 0:
            raise ValueError("a command's timeout must be a positive, finite number of seconds")

    @property
    def prompt_on_stdin(self) -> bool:
        """True when no argv item holds `{prompt}`: the prompt goes to the CLI's stdin."""
        return not any("{prompt}" in item for item in self.argv)


DEFAULT_TEMPLATES: Mapping[str, CommandTemplate] = MappingProxyType(
    {
        # C1: `claude -p --output-format stream-json --verbose [--model <m>]`, the prompt on
        # stdin: with no prompt argument, `claude -p` reads it there (checked against real
        # claude 2.1 in tests/e2e/test_real_clis.py). No argv limit, and a prompt that begins with
        # `-` is never read as an option.
        "claude": CommandTemplate(
            binary="claude",
            argv=("{binary}", "-p", "--output-format", "stream-json", "--verbose", MODEL_ARGS),
            model_args=("--model", "{model}"),
        ),
        # C1: `codex exec [-m <m>]`, the prompt on stdin (`codex exec` reads its instructions
        # there when no prompt argument is given; checked against real codex 0.171). Plain
        # stdout is the final message.
        "codex": CommandTemplate(
            binary="codex",
            argv=("{binary}", "exec", MODEL_ARGS),
            model_args=("-m", "{model}"),
        ),
        # C1: `agy -p <prompt> [--model <m>]`, stdin from /dev/null: agy documents its prompt
        # only as the value of `-p`, and waits on an open stdin. A prompt too long for one
        # argument goes through a prompt file (`call_participant`).
        "agy": CommandTemplate(
            binary="agy",
            argv=("{binary}", "-p", "{prompt}", MODEL_ARGS),
            model_args=("--model", "{model}"),
        ),
    }
)


def _fill(item: str, values: Mapping[str, str]) -> str:
    # One pass, so a prompt that contains "{model}" is never substituted into.
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], item)


def build_argv(
    provider: str,
    prompt: str,
    model: str | None = None,
    templates: Mapping[str, CommandTemplate] = DEFAULT_TEMPLATES,
) -> tuple[str, ...]:
    """The argv of one call of `provider` (C1); `model` is the one the core chose (A13)."""
    if provider not in PROVIDERS:
        raise ValueError(f"unknown provider {provider!r} (known: {', '.join(PROVIDERS)})")
    template = templates[provider]
    # An argument cannot hold a NUL byte (the kernel ends it there; Popen refuses it): a post
    # that carried one reaches an argv prompt as U+FFFD instead.
    values = {"binary": template.binary, "prompt": prompt.replace("\x00", "\ufffd"),
              "model": model or ""}
    argv: list[str] = []
    for item in template.argv:
        if item == MODEL_ARGS:
            if model:
                argv.extend(_fill(arg, values) for arg in template.model_args)
            continue
        argv.append(_fill(item, values))
    return tuple(argv)


def argv_for(
    participant: Participant,
    entry: Engine,
    prompt: str,
    templates: Mapping[str, CommandTemplate] = DEFAULT_TEMPLATES,
) -> tuple[str, ...]:
    """The argv of `participant`'s call on `entry`: its pin on the primary only (A13)."""
    return build_argv(entry.provider, prompt, participant.model_for(entry), templates)


def prompt_on_stdin(
    provider: str, templates: Mapping[str, CommandTemplate] = DEFAULT_TEMPLATES
) -> bool:
    """True when `provider`'s CLI gets the prompt on stdin (its argv has no `{prompt}`)."""
    return templates[provider].prompt_on_stdin


def _strings(value: Any, field: str, source: str) -> tuple[str, ...]:
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{field} must be a list of strings", source=source)
    return tuple(value)


# Long for the per-key checks of one `commands:` entry, each with its own message (C5).
def templates_from_config(
    config: Mapping[str, Any] | None, *, source: str = "<config>", field: str = "commands"
) -> Mapping[str, CommandTemplate]:
    """The templates of a run: the defaults, overridden per provider by `config`.

    `config` maps a provider to either an argv list (`["codex", "exec", "{prompt}"]`, its first
    item the binary) or a mapping with any of `binary`, `argv`, `model_args`, `timeout`
    (seconds). Mistakes raise `ConfigError` naming `source` and the field.
    """
    merged = dict(DEFAULT_TEMPLATES)
    if not config:
        return MappingProxyType(merged)
    if not isinstance(config, Mapping):
        raise ConfigError(f"{field} must map a provider to its command", source=source)
    for provider, value in config.items():
        where = f"{field}.{provider}"
        if provider not in PROVIDERS:
            raise ConfigError(
                f"{where}: unknown provider {provider!r} (known: {', '.join(PROVIDERS)})",
                source=source,
            )
        base = DEFAULT_TEMPLATES[provider]
        try:
            if isinstance(value, list | tuple):
                argv = _strings(value, where, source)
                if not argv:
                    raise ConfigError(f"{where} must not be empty", source=source)
                merged[provider] = attrs.evolve(base, binary=argv[0], argv=("{binary}", *argv[1:]))
                continue
            if not isinstance(value, Mapping):
                raise ConfigError(f"{where} must be a list or a mapping", source=source)
            unknown = set(value) - {"binary", "argv", "model_args", "timeout"}
            if unknown:
                raise ConfigError(
                    f"{where}: unknown key {sorted(unknown)[0]!r} "
                    "(known: binary, argv, model_args, timeout)",
                    source=source,
                )
            changes: dict[str, Any] = {}
            if "binary" in value:
                if not isinstance(value["binary"], str):
                    raise ConfigError(f"{where}.binary must be a string", source=source)
                changes["binary"] = value["binary"]
            if "argv" in value:
                changes["argv"] = _strings(value["argv"], f"{where}.argv", source)
            if "model_args" in value:
                changes["model_args"] = _strings(value["model_args"], f"{where}.model_args", source)
            if "timeout" in value:
                timeout = value["timeout"]
                if (
                    isinstance(timeout, bool)
                    or not isinstance(timeout, int | float)
                    or not math.isfinite(timeout)
                    or timeout <= 0
                ):
                    raise ConfigError(
                        f"{where}.timeout must be a positive number of seconds, not {timeout!r}",
                        source=source,
                    )
                changes["timeout_seconds"] = float(timeout)
            merged[provider] = attrs.evolve(base, **changes)
        except ValueError as exc:
            if isinstance(exc, ConfigError):
                raise
            raise ConfigError(f"{where}: {exc}", source=source) from None
    return MappingProxyType(merged)


def resolve_binary(template: CommandTemplate, path: str | None = None) -> str | None:
    """The full path of the template's binary, or None when this machine does not have it."""
    return shutil.which(template.binary, path=path)


def installed_providers(
    templates: Mapping[str, CommandTemplate] = DEFAULT_TEMPLATES, *, path: str | None = None
) -> frozenset[str]:
    """The providers whose CLI is on PATH (or at its configured path) (A12)."""
    return frozenset(p for p in PROVIDERS if p in templates and resolve_binary(templates[p], path))
