"""Issue 14: `autodev run --share`, the `share:` and `accounts:` run settings, and what a user
sees when they are wrong — one clear line naming the file or option, exit 2, no traceback, and
never the URL's password."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from autodev_shell.cli import main
from autodev_shell.team import load_team


def team_dir(tmp_path: Path, settings: str = "") -> Path:
    team = tmp_path / "team"
    team.mkdir(parents=True)
    (team / "ana.md").write_text("---\nprovider: claude\n---\nWork.\n", encoding="utf-8")
    if settings:
        (team / "autodev.yaml").write_text(settings, encoding="utf-8")
    return team


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.err


def test_a_bad_share_url_is_one_line_without_the_password(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    team = team_dir(tmp_path, "accounts: {claude: work-max}\n")
    code, err = run(["run", str(team), "--run", str(tmp_path / "run"),
                     "--share", "http://:hunter2@localhost:6379"], capsys)
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "--share: share: expected a redis:// or rediss:// URL" in err
    assert "hunter2" not in err and "***@localhost:6379" in err
    assert not (tmp_path / "run").exists()  # nothing started


def test_sharing_without_a_named_account_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    team = team_dir(tmp_path)
    code, err = run(["run", str(team), "--run", str(tmp_path / "run"),
                     "--share", "redis://:hunter2@127.0.0.1:1/0"], capsys)
    assert code == 2 and err.count("\n") == 1
    assert "autodev.yaml: share: name the account behind each provider" in err
    assert "hunter2" not in err


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ("share: {url: redis://h:6379, colour: red}\naccounts: {claude: a}\n",
         "share: unknown key 'colour'"),
        ("share: {prefix: x}\naccounts: {claude: a}\n", "share.url: the redis:// or rediss://"),
        ("share: {url: redis://h:6379, timeout: 0}\n", "share.timeout: seconds, more than 0"),
        ("share: {url: redis://h:6379, prefix: 'a b'}\n", "share.prefix: letters"),
        ("share: ftp://h\n", "share: expected a redis:// or rediss:// URL"),
        ("accounts: {claude: [x]}\n", "accounts.claude: an account name"),
        ("accounts: {gpt: x}\n", "accounts: unknown provider 'gpt'"),
    ],
)
def test_bad_share_settings_name_the_file_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], settings: str, expected: str
) -> None:
    team = team_dir(tmp_path, settings)
    code, err = run(["run", str(team), "--run", str(tmp_path / "run")], capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert "autodev.yaml" in err and expected in err


def test_settings_read_share_and_accounts(tmp_path: Path) -> None:
    team = load_team(team_dir(
        tmp_path,
        "share: {url: 'rediss://:pw@cache.example:6380/2', prefix: acme, name: laptop, "
        "timeout: 0.5}\naccounts: {claude: work-max, codex: team}\n",
    ))
    assert team.share.url == "rediss://:pw@cache.example:6380/2"
    assert (team.share.prefix, team.share.name, team.share.timeout) == ("acme", "laptop", 0.5)
    assert dict(team.share.accounts) == {"claude": "work-max", "codex": "team"}
    plain = load_team(team_dir(tmp_path / "b", "share: redis://localhost:6379/0\n"))
    assert plain.share.url == "redis://localhost:6379/0" and plain.share.prefix == "autodev"


def test_sharing_without_redis_py_says_how_to_install_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = importlib.import_module

    def missing(name: str, package: str | None = None) -> object:
        if name == "redis" or name.startswith("redis."):
            raise ImportError(f"No module named {name!r}")
        return real(name, package)

    from autodev_shell.standins import install_standins, standin_env

    env = standin_env(install_standins(tmp_path / "bin"))
    monkeypatch.setenv("PATH", env["PATH"])
    monkeypatch.setattr(importlib, "import_module", missing)
    team = team_dir(tmp_path, "accounts: {claude: work-max}\n")
    code, err = run(["run", str(team), "--run", str(tmp_path / "run"),
                     "--share", "redis://127.0.0.1:1/0"], capsys)
    assert code == 2 and "pip install 'autodev[redis]'" in err and "Traceback" not in err


def test_status_says_sharing_is_off_for_a_run_that_does_not_share(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from datetime import UTC, datetime

    from autodev_shell.status.report import status_lines
    from autodev_shell.store.folder import run_db
    from autodev_shell.store.run_store import RunStore

    store = RunStore.open(run_db(tmp_path), create=True, run_id="r", now=datetime.now(UTC))
    try:
        assert "sharing: off" in status_lines(store, datetime.now(UTC))
    finally:
        store.close()
