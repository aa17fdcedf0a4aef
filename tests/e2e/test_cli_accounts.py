"""Two accounts of one provider fail over to each other (docs/participants.md, Accounts; A8,
A11, A18, A23): ana runs on `claude@work` with the chain `[claude@home]`; each account has its
own environment (`env:` in autodev.yaml). Here each account's environment names its own stand-in
script, so which account a call ran on is which script answered it; a real team names each
account's login folder (`CLAUDE_CONFIG_DIR`). work's limit benches work alone: ana hops to home;
when home is limited too the run waits for work's reset and goes back to it. A secret passed
through `env:` is never in the log, the lanes or `autodev status`. Real processes, stand-ins."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.daemons import Daemon, wait_for

from autodev_shell.standins import write_script

SECRET = "sk-test-0123456789abcdefSECRET"


def test_two_accounts_of_one_provider_fail_over_to_each_other(tmp_path: Path) -> None:
    d = Daemon(tmp_path, {"ana": "claude"}, {"default": {"post": "unused"}})
    (d.team / "ana.md").write_text(
        "---\nprovider: claude@work\nfailover: [claude@home]\n---\nWork.\n", "utf-8")
    # Resets counted from the call (`resets_in`), so a slow start cannot put them in the past.
    work = write_script(tmp_path / "work.json", {"claude": {
        "answers": [{"kind": "limit", "resets_in": 6}],
        "default": {"post": "from work"}}})
    home = write_script(tmp_path / "home.json", {"claude": [
        {"post": "from home"}, {"kind": "limit", "resets_in": 5 * 3600}]})
    (d.team / "autodev.yaml").write_text(json.dumps({"env": {
        "SECRET_TOKEN": "${MY_SECRET}",
        "claude@work": {"AUTODEV_STANDIN_SCRIPT": str(work),
                        "CLAUDE_CONFIG_DIR": str(tmp_path / "claude-work")},
        "claude@home": {"AUTODEV_STANDIN_SCRIPT": str(home),
                        "CLAUDE_CONFIG_DIR": str(tmp_path / "claude-home")},
    }}), "utf-8")
    d.env["MY_SECRET"] = SECRET
    d.start()
    try:
        wait_for(lambda: len(d.thread()) >= 2, "home's post, then work's after its reset")
        status = d.cli("status").stdout
    finally:
        d.stop()
    assert [t for _, _, t in d.thread()][:2] == ["from home", "from work"]
    log = (d.run_dir / "autodev.log").read_text(encoding="utf-8")
    lines = [line.split(" ", 1)[1] for line in log.splitlines()]
    assert "ana: claude@work limited → claude@home" in lines
    assert "ana posted via claude@home" in lines
    assert any(line.startswith("every participant limited — waiting for claude@work")
               for line in lines)
    assert "ana: limit lifted — back on its primary provider" in lines
    assert "ana posted via claude@work" in lines
    lanes = d.cli("lane", "ana").stdout
    for shown in (log, lanes, status):
        assert SECRET not in shown


def test_an_account_without_its_own_env_block_is_one_line_at_start(tmp_path: Path) -> None:
    d = Daemon(tmp_path, {"ana": "claude"}, {"default": {"post": "ok"}})
    (d.team / "ana.md").write_text(
        "---\nprovider: claude@work\nfailover: [claude@home]\n---\nWork.\n", "utf-8")
    (d.team / "autodev.yaml").write_text(
        "env:\n  claude@work: {CLAUDE_CONFIG_DIR: /tmp/w}\n", "utf-8")
    done = d.cli("run", str(d.team))
    assert done.returncode == 2
    err = done.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert "ana runs on claude@home, which has no block of its own under env:" in err


def test_a_reference_to_an_unset_variable_is_one_line_and_names_no_value(tmp_path: Path) -> None:
    d = Daemon(tmp_path, {"ana": "claude"}, {"default": {"post": "ok"}})
    (d.team / "autodev.yaml").write_text("env:\n  TOKEN: ${NOT_SET_ANYWHERE}\n", "utf-8")
    d.env.pop("NOT_SET_ANYWHERE", None)
    done = d.cli("run", str(d.team))
    assert done.returncode == 2
    assert done.stderr.strip().endswith(
        "env: TOKEN reads ${NOT_SET_ANYWHERE}, which is not set in autodev's environment")
    assert not d.run_dir.exists()
