"""`env:` names the line of a `${VAR}` that is not set (docs/participants.md, Accounts; C5).

A `${VAR}` is read from autodev's environment when the run starts, after the files are read;
one that is not set there is a `ConfigError` of one line naming the file, the line the variable
is written on, the field and the variable — never a value: in autodev.yaml's team `env:`, in an
account's block under it, and in a participant file's own `env:` (its line in the file, past
the front matter's fence). `autodev_core/yaml_lines.py` keeps the lines, as for every other
error in these files.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autodev_core.errors import ConfigError
from autodev_shell.team import call_environments, load_team

UNSET = "${NOT_SET_ANYWHERE}"


def team(root: Path, settings: str, ana: str = "---\nprovider: claude\n---\nWork.\n") -> Path:
    (root / "ana.md").write_text(ana, "utf-8")
    (root / "autodev.yaml").write_text(settings, "utf-8")
    return root


def refusal(folder: Path, environ: dict[str, str]) -> str:
    with pytest.raises(ConfigError) as caught:
        call_environments(load_team(folder), environ)
    return str(caught.value)


def test_C5_a_team_variable_reading_an_unset_variable_names_its_line(tmp_path: Path) -> None:
    folder = team(tmp_path, "timezone: UTC\nenv:\n  PROXY: http://proxy:3128\n"
                            f"  TOKEN: {UNSET}\n")
    assert refusal(folder, {}) == (
        f"{tmp_path}/autodev.yaml:4: env: TOKEN reads ${{NOT_SET_ANYWHERE}}, which is not set "
        "in autodev's environment")


def test_C5_an_account_variable_reading_an_unset_variable_names_its_line(tmp_path: Path) -> None:
    folder = team(tmp_path, "env:\n  claude@work:\n    CLAUDE_CONFIG_DIR: /home/me/.claude-w\n"
                            f"    API_KEY: key-{UNSET}\n",
                  ana="---\nprovider: claude@work\n---\nWork.\n")
    assert refusal(folder, {}) == (
        f"{tmp_path}/autodev.yaml:4: env: claude@work: API_KEY reads ${{NOT_SET_ANYWHERE}}, "
        "which is not set in autodev's environment")


def test_C5_a_participant_variable_reading_an_unset_variable_names_its_line(
    tmp_path: Path,
) -> None:
    folder = team(tmp_path, "timezone: UTC\n",
                  ana=f"\n---\nprovider: claude\nenv:\n  HOME_X: /x\n  TOKEN: {UNSET}\n---\n"
                      "Work.\n")
    assert refusal(folder, {}) == (
        f"{tmp_path}/ana.md:6: env: TOKEN reads ${{NOT_SET_ANYWHERE}}, which is not set in "
        "autodev's environment")


def test_C5_a_variable_that_is_not_text_names_its_line(tmp_path: Path) -> None:
    """The loader's own refusals name the variable's line too, not the `env:` key's."""
    folder = team(tmp_path, "env:\n  claude@work:\n    CLAUDE_CONFIG_DIR: /w\n    PORT: 8080\n")
    with pytest.raises(ConfigError) as caught:
        load_team(folder)
    assert str(caught.value) == (
        f"{tmp_path}/autodev.yaml:4: env: claude@work: PORT must be text (quote it), not 8080")


def test_C5_a_set_variable_is_read_and_no_line_is_named(tmp_path: Path) -> None:
    folder = team(tmp_path, f"env:\n  TOKEN: {UNSET}\n")
    read = call_environments(load_team(folder), {"NOT_SET_ANYWHERE": "v"})
    assert dict(read.team) == {"TOKEN": "v"}


#: Variable names; `X_` first, as YAML 1.1 reads `NO`, `ON`, `Y` or `NULL` as no text at all.
names = st.lists(st.from_regex(r"X_[A-Z0-9_]{0,8}", fullmatch=True), min_size=1, max_size=6,
                 unique=True)


@given(
    variables=names,
    gaps=st.lists(st.integers(min_value=0, max_value=3), min_size=6, max_size=6),
    unset=st.integers(min_value=0, max_value=5),
    place=st.sampled_from(("team", "account", "participant")),
    flow=st.booleans(),
)
def test_C5_the_named_line_is_where_the_variable_is_written(
    variables: list[str], gaps: list[int], unset: int, place: str, flow: bool
) -> None:
    """Whatever the block's layout (blank and comment lines between variables, a flow mapping
    on one line), the line named is the one the variable that reads the unset `${VAR}` is
    written on; every other variable reads a variable that is set."""
    unset %= len(variables)
    environ = {f"V_{n}": "set" for n in variables}
    head = {"team": ["env:"], "account": ["env:", "  claude@work:"],
            "participant": ["---", "provider: claude@work", "env:"]}[place]
    # The team's own variables come beside the account's block (which claude@work needs).
    account = "claude@work: {CLAUDE_CONFIG_DIR: /w}"
    indent = "    " if place == "account" else "  "
    lines = list(head)
    where = 0
    if flow:  # `env: {A: ..., B: ...}`, every variable on the `env:` line (or the account's)
        body = ", ".join([*([account] if place == "team" else []), *(
            f"{n}: 'x-${{{'UNSET_' if i == unset else 'V_'}{n}}}'"
            for i, n in enumerate(variables))])
        lines[-1] += f" {{{body}}}"
        where = len(lines)
    else:
        if place == "team":
            lines.append(f"  {account}")
        for i, name in enumerate(variables):
            lines += ["", f"{indent}# {name}"][: gaps[i] % 3] if gaps[i] else []
            reads = f"UNSET_{name}" if i == unset else f"V_{name}"
            lines.append(f"{indent}{name}: \"x-${{{reads}}}\"")
            if i == unset:
                where = len(lines)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        if place == "participant":
            ana = "\n".join([*lines, "---", "Work.", ""])
            settings = f"env:\n  {account}\n"
            source = root / "ana.md"
        else:
            ana = "---\nprovider: claude@work\n---\nWork.\n"
            settings = "\n".join(lines) + "\n"
            source = root / "autodev.yaml"
        folder = team(root, settings, ana=ana)
        field = "env: claude@work" if place == "account" else "env"
        name = variables[unset]
        assert refusal(folder, environ) == (
            f"{source}:{where}: {field}: {name} reads ${{UNSET_{name}}}, which is not set in "
            "autodev's environment")


@pytest.mark.parametrize(("written", "value"), [("NO", False), ("on", True), ("Off", False),
                                                 ("1", 1), ("null", None)])
def test_C5_a_variable_name_yaml_reads_as_a_value_is_told_to_be_quoted(
    tmp_path: Path, written: str, value: object,
) -> None:
    """`NO:` under `env:` is YAML's False (1.1 booleans), `1:` a number: the refusal names the
    key as written, what YAML made of it and its line, and says to quote it."""
    with pytest.raises(ConfigError) as caught:
        load_team(team(tmp_path, f"env:\n  TOKEN: x\n  {written}: y\n"))
    assert str(caught.value) == (
        f"{tmp_path}/autodev.yaml:3: env: {written} reads as the YAML value {value!r}, not a "
        f"variable name: quote it ('{written}': …)")


def test_C5_a_participant_variable_name_read_as_a_boolean_names_the_files_line(
    tmp_path: Path,
) -> None:
    folder = team(tmp_path, "timezone: UTC\n",
                  ana="---\nprovider: claude\nenv:\n  TOKEN: x\n  off: y\n---\nWork.\n")
    with pytest.raises(ConfigError) as caught:
        load_team(folder)
    assert str(caught.value) == (
        f"{tmp_path}/ana.md:5: env: off reads as the YAML value False, not a variable name: "
        "quote it ('off': …)")
