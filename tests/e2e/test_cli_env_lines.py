"""`autodev run` refuses a participant's `env:` reading a `${VAR}` that is not set: one line on
stderr naming the file, the variable's line, the field and the variable, never a value, and no
run folder (docs/participants.md, Accounts; C5). Real process, stand-ins."""

from __future__ import annotations

from pathlib import Path

from helpers.daemons import Daemon


def test_C5_an_unset_variable_in_a_participant_env_is_one_line_naming_its_line(
    tmp_path: Path,
) -> None:
    d = Daemon(tmp_path, {"ana": "claude"}, {"default": {"post": "ok"}})
    (d.team / "ana.md").write_text(
        "---\nprovider: claude\nenv:\n  PLAIN: text\n  TOKEN: Bearer ${NOT_SET_ANYWHERE}\n"
        "---\nWork.\n", "utf-8")
    d.env.pop("NOT_SET_ANYWHERE", None)
    done = d.cli("run", str(d.team))
    assert done.returncode == 2
    assert done.stderr == (
        f"autodev: {d.team}/ana.md:5: env: TOKEN reads ${{NOT_SET_ANYWHERE}}, which is not set "
        "in autodev's environment\n")
    assert not d.run_dir.exists()
