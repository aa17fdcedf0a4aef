"""Reading a team directory: participant files and the optional `autodev.yaml` (SPEC C5, C6).

A team directory holds one markdown file per participant (`<id>.md`, YAML front matter) and,
optionally, `autodev.yaml` with run settings. Turn order is the order of the file names (prefix
them with numbers to choose it). Every mistake is a `ConfigError` naming the file and the line or
field; nothing starts until the whole team reads cleanly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import attrs

from autodev_core.errors import ConfigError
from autodev_core.participant import (
    ConfigWarning,
    Participant,
    front_matter_entry,
    read_participant,
)
from autodev_core.scheduler.policy import DEFAULT_POLICY, Policy, parse_policy
from autodev_core.yaml_lines import key_lines, load_yaml, node_line, value_node

from .calls.argv import DEFAULT_TEMPLATES, CommandTemplate, templates_from_config
from .calls.environments import CallEnvironments, read_team_env, read_variables, resolve
from .notify import NotifySettings, notify_settings
from .sharing import ShareOptions, share_options

if TYPE_CHECKING:
    import yaml

#: In a run folder: the team folder the run was started on (one absolute path), so that
#: `autodev panel --run DIR` finds the participant files without `--team`.
RUN_TEAM_FILE: Final = "team.path"


def recorded_team(run_dir: Path) -> Path | None:
    """The team folder the run in `run_dir` records, if any (and still a folder)."""
    try:
        text = (run_dir / RUN_TEAM_FILE).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    folder = Path(text)
    return folder if text and folder.is_dir() else None


#: The run settings file inside a team directory.
SETTINGS_FILE: Final = "autodev.yaml"
SETTINGS_KEYS: Final = (
    "timezone", "max_iterations", "max_runtime_min", "commands", "order", "share", "accounts",
    "policy", "notify", "project", "env",
)
#: The largest `max_runtime_min` taken (100 years): beyond it the run's time arithmetic would
#: pass the calendar's end (year 9999) instead of limiting anything.
MAX_RUNTIME_MIN: Final = 100 * 366 * 24 * 60


@attrs.frozen
class Team:
    """A team as read from its directory."""

    directory: Path
    members: tuple[Participant, ...]
    files: tuple[Path, ...]
    templates: Mapping[str, CommandTemplate] = DEFAULT_TEMPLATES
    timezone: str | None = None
    max_iterations: int | None = None
    max_runtime: timedelta | None = None
    share: ShareOptions = attrs.field(factory=ShareOptions)
    policy: Policy = DEFAULT_POLICY
    #: `notify:` (docs/notifications.md): whom to tell when the run needs its operator.
    notify: NotifySettings = attrs.field(factory=NotifySettings)
    #: `project:` (docs/participants.md, Where the CLIs work): the folder every call runs in,
    #: resolved against the team folder; None: the folder `autodev run` was started in.
    project: Path | None = None
    #: The line of `project:` in autodev.yaml, for the one-line error at start.
    project_line: int | None = None
    #: `env:` (docs/participants.md, Accounts), unresolved (`${VAR}` kept): the team's, each
    #: account's (`claude@work`), each participant's (by id). `call_environments` resolves them.
    env: Mapping[str, str] = attrs.field(factory=dict)
    account_env: Mapping[str, Mapping[str, str]] = attrs.field(factory=dict)
    member_env: Mapping[str, Mapping[str, str]] = attrs.field(factory=dict)
    #: The line each of those variables is written on (its file's), by name: the team's, each
    #: account's, each participant's. A `${VAR}` not set at start names it (C5).
    env_lines: Mapping[str, int] = attrs.field(factory=dict)
    account_env_lines: Mapping[str, Mapping[str, int]] = attrs.field(factory=dict)
    member_env_lines: Mapping[str, Mapping[str, int]] = attrs.field(factory=dict)
    #: What the files say that is allowed but useless (C5), for the caller to print once.
    warnings: tuple[ConfigWarning, ...] = ()

    def file_of(self, participant_id: str) -> Path:
        """A14: the path of a participant's file; ConfigError when there is none."""
        for member, path in zip(self.members, self.files, strict=True):
            if member.id == participant_id:
                return path
        known = ", ".join(m.id for m in self.members) or "none"
        raise ConfigError(
            f"no participant {participant_id!r} in this team (participants: {known})",
            source=str(self.directory),
        )


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError("the file is not UTF-8 text", source=str(path)) from None
    except OSError as exc:
        raise ConfigError(f"cannot read the file ({exc.strerror})", source=str(path)) from None


def _settings(path: Path) -> tuple[dict[str, Any], dict[str, int], yaml.Node | None]:
    """`autodev.yaml`'s keys and values, the line each top-level key is written on, and the
    node read (for the lines of what a key holds)."""
    if not path.exists():
        return {}, {}, None
    node, data = load_yaml(_read(path), source=str(path))
    if data is None:
        return {}, {}, None
    if not isinstance(data, dict):
        raise ConfigError("settings must be a mapping of keys to values", source=str(path))
    for key in data:
        if key not in SETTINGS_KEYS:
            raise ConfigError(
                f"unknown key {key!r} (known keys: {', '.join(SETTINGS_KEYS)})", source=str(path)
            )
    assert node is not None  # a mapping was read from it
    return data, {str(key.value): node_line(key) for key, _value in node.value}, node


def _positive(data: Mapping[str, Any], key: str, source: str) -> Any:
    value = data.get(key)
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)  # .inf and .nan are not a limit (they read as none)
        or value <= 0
    ):
        raise ConfigError(
            f"{key}: must be a positive, finite number, not {value!r}", source=source
        )
    return value


def load_team(directory: str | Path) -> Team:
    """Read every `*.md` participant file of `directory` and its `autodev.yaml` (C5)."""
    root = Path(directory)
    if not root.is_dir():
        raise ConfigError(
            "not a team directory (it does not exist or is not a folder)", source=str(root)
        )
    settings_path = root / SETTINGS_FILE
    settings, lines, settings_node = _settings(settings_path)
    source = str(settings_path)
    files = _ordered(root, settings.get("order"), source)
    members: list[Participant] = []
    warnings: list[ConfigWarning] = []
    seen: dict[str, Path] = {}
    member_env: dict[str, dict[str, str]] = {}
    member_env_lines: dict[str, dict[str, int]] = {}
    for path in files:
        pid = path.stem
        twin = seen.get(pid.lower())
        if twin is not None:
            raise ConfigError(
                f"duplicate participant id {pid!r} (also {twin.name})", source=str(path), line=1
            )
        seen[pid.lower()] = path
        text = _read(path)
        member, said = read_participant(text, id=pid, source=str(path))
        members.append(member)
        raw_env, env_line, variable_lines = front_matter_entry(text, "env", source=str(path))
        if raw_env is not None:
            member_env[pid] = read_variables(raw_env, what="env", source=str(path),
                                             line=env_line, lines=variable_lines)
            member_env_lines[pid] = variable_lines
        warnings.extend(said)
    timezone = settings.get("timezone")
    if timezone is not None and not isinstance(timezone, str):
        raise ConfigError(
            "timezone: must be an IANA zone name such as Europe/Lisbon", source=source
        )
    max_iterations = _positive(settings, "max_iterations", source)
    if max_iterations is not None and not isinstance(max_iterations, int):
        raise ConfigError("max_iterations: must be a whole number", source=source)
    runtime_min = _positive(settings, "max_runtime_min", source)
    if runtime_min is not None and runtime_min > MAX_RUNTIME_MIN:
        raise ConfigError(
            f"max_runtime_min: {runtime_min!r} is more than {MAX_RUNTIME_MIN} minutes "
            "(100 years); leave it out for no limit",
            source=source,
        )
    policy = DEFAULT_POLICY
    if settings.get("policy") is not None:
        try:
            policy = parse_policy(settings["policy"])
        except ValueError as exc:
            raise ConfigError(str(exc), source=source, line=lines.get("policy")) from None
    project = settings.get("project")
    if project is not None and (not isinstance(project, str) or not project.strip()):
        raise ConfigError("project: must be the path of the folder the participants work in",
                          source=source, line=lines.get("project"))
    env_node = value_node(settings_node, "env")
    team_env_lines = key_lines(env_node)
    team_env, account_env, account_env_lines = read_team_env(
        settings.get("env"), source=source, line=lines.get("env"), lines=team_env_lines,
        block_lines={key: key_lines(value_node(env_node, key)) for key in team_env_lines},
    )
    return Team(
        directory=root,
        env=team_env,
        account_env=account_env,
        member_env=member_env,
        env_lines=team_env_lines,
        account_env_lines=account_env_lines,
        member_env_lines=member_env_lines,
        project=(root / Path(project).expanduser()).resolve() if project else None,
        project_line=lines.get("project"),
        members=tuple(members),
        files=tuple(files),
        templates=templates_from_config(settings.get("commands"), source=source),
        timezone=timezone,
        max_iterations=max_iterations,
        max_runtime=timedelta(minutes=runtime_min) if runtime_min is not None else None,
        share=share_options(settings.get("share"), settings.get("accounts"), source=source),
        policy=policy,
        notify=notify_settings(settings.get("notify"), source=source, line=lines.get("notify")),
        warnings=tuple(warnings),
    )


def _ordered(root: Path, order: Any, source: str) -> list[Path]:
    """The participant files in turn order: `order:` first, then the rest by name (C5)."""
    files = sorted(p for p in root.glob("*.md") if p.is_file() and p.name.lower() != "readme.md")
    if order is not None:
        if not isinstance(order, list) or not all(isinstance(i, str) for i in order):
            raise ConfigError("order: must be a list of participant ids", source=source)
        repeated = sorted({i for i in order if order.count(i) > 1})
        if repeated:
            raise ConfigError(f"order: {repeated[0]!r} is listed twice", source=source)
        by_id = {p.stem: p for p in files}
        missing = [i for i in order if i not in by_id]
        if missing:
            raise ConfigError(f"order: no participant file for {missing[0]!r}", source=source)
        files = [by_id[i] for i in order] + [p for p in files if p.stem not in order]
    if not files:
        raise ConfigError("no participant files (*.md) in the team directory", source=str(root))
    return files


#: The CLIs that refuse to run outside a git repository (codex: "Not inside a trusted
#: directory and --skip-git-repo-check was not specified.").
NEEDS_GIT: Final = frozenset({"codex"})


def check_project(team: Team, providers: frozenset[str], *, cwd: Path | None = None) -> Path:
    """The folder the run's calls work in (docs/participants.md, Where the CLIs work): the
    team's `project:` or, without one, `cwd` (default the current folder). A `project:` that is
    not a folder, or is not inside a git repository while a CLI of `providers` needs one
    (`NEEDS_GIT`, unless its template skips the check), is a `ConfigError` naming the line."""
    here = cwd if cwd is not None else Path.cwd()
    folder = team.project
    if folder is None:
        return here
    source = str(team.directory / SETTINGS_FILE)
    if not folder.is_dir():
        raise ConfigError(f"project: {folder} is not a folder (it does not exist, or is a "
                          "file); name the folder the participants work in",
                          source=source, line=team.project_line)
    strict = sorted(p for p in providers & NEEDS_GIT
                    if "--skip-git-repo-check" not in team.templates[p].argv)
    if strict and not any((parent / ".git").exists() for parent in (folder, *folder.parents)):
        raise ConfigError(f"project: {folder} is not inside a git repository, and "
                          f"{', '.join(strict)} runs only inside one (`git init` it, or add "
                          "--skip-git-repo-check to codex's command)",
                          source=source, line=team.project_line)
    return folder


def call_environments(team: Team, environ: Mapping[str, str]) -> CallEnvironments:
    """The team's `env:` resolved against the daemon's environment (`${VAR}`), checked at start
    (docs/participants.md, Accounts): a `${VAR}` not set, or an account a participant names
    with no `env:` block of its own (both accounts would share one login), is one line."""
    source = str(team.directory / SETTINGS_FILE)
    named = sorted({str(e.primary) for m in team.members for e in m.entries
                    if e.account is not None})
    for account in named:
        if account not in team.account_env:
            who = next(m.id for m in team.members for e in m.entries if str(e.primary) == account)
            raise ConfigError(
                f"env: {who} runs on {account}, which has no block of its own under env: (give "
                f"each account its login, e.g. {account}: {{CLAUDE_CONFIG_DIR: ~/.claude-"
                f"{account.partition('@')[2]}}} or CODEX_HOME for codex)", source=source)
    members = {pid: resolve(values, environ, what="env", source=str(team.file_of(pid)),
                            lines=team.member_env_lines.get(pid, {}))
               for pid, values in team.member_env.items()}
    return CallEnvironments(
        team=resolve(team.env, environ, what="env", source=source, lines=team.env_lines),
        accounts={name: resolve(values, environ, what=f"env: {name}", source=source,
                                lines=team.account_env_lines.get(name, {}))
                  for name, values in team.account_env.items()},
        members=members,
    )


class TeamFiles:
    """The team's files read again when they change (docs/participants.md, Editing a running
    team): called at each turn start, it gives the participants when a file was edited, added
    or removed since the last call, None when none was, and raises the loader's `ConfigError`
    for an edit that does not read (said once: the same files are not read again)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._seen = self._signature()

    def _signature(self) -> tuple[tuple[str, int, int], ...]:
        try:
            paths = sorted([*self.directory.glob("*.md"), self.directory / SETTINGS_FILE])
            found = []
            for path in paths:
                try:
                    info = path.stat()
                except FileNotFoundError:
                    continue
                found.append((path.name, info.st_mtime_ns, info.st_size))
            return tuple(found)
        except OSError:
            return ()

    def __call__(self) -> tuple[Participant, ...] | None:
        now = self._signature()
        if now == self._seen:
            return None
        self._seen = now
        return load_team(self.directory).members
