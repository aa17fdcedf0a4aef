"""`autodev run --share`, the `share:` and `accounts:` run settings, and what a user
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


# ------------------------------------------------------------------------------------------------
# TLS settings — `share.ca` and the URL's options, checked before anything starts


@pytest.mark.parametrize(
    ("settings", "share", "expected"),
    [
        ("share: {url: 'rediss://:hunter2@h:6380/0', ca: missing.pem}\n", None,
         "share.ca: cannot read {team}/missing.pem (No such file or directory)"),
        ("share: {url: 'rediss://:hunter2@h:6380/0', ca: notpem.txt}\n", None,
         "share.ca: {team}/notpem.txt is not a PEM file (no -----BEGIN line)"),
        ("share: {url: 'redis://:hunter2@h:6379/0', ca: ca.pem}\n", None,
         "share.ca: a CA is for TLS: the URL must start rediss://"),
        ("share: {url: 'rediss://:hunter2@h:6380/0?ssl_ca_certs=/x.pem', ca: ca.pem}\n", None,
         "share.ca: the URL names a CA already (ssl_ca_certs); give it once"),
        ("share: {url: 'rediss://:hunter2@h:6380/0', ca: 3}\n", None,
         "share.ca: the path of the CA's certificate file (PEM), not 3"),
        ("share: 'rediss://:hunter2@h:6380/0?colour=red'\n", None,
         "share: unknown URL option 'colour' (known: db, client_name, ssl_ca_certs"),
        ("share: 'redis://:hunter2@h:6379/0?ssl_ca_certs=/x.pem'\n", None,
         "share: ssl_ca_certs is for TLS: the URL must start rediss://, not "
         "'redis://***@h:6379/0?ssl_ca_certs=/x.pem'"),
        ("share: 'rediss://:hunter2@h:6380/0?ssl_cert_reqs=maybe'\n", None,
         "share: bad value for ssl_cert_reqs in the URL: 'maybe'"),
        ("share: 'rediss://:hunter2@h:6380/0?ssl_ca_certs=missing.pem'\n", None,
         "share: the URL's ssl_ca_certs: cannot read missing.pem (No such file"),
        ("share: {url: 'rediss://h:6380/0', ca: ca.pem}\n", "redis://:hunter2@h:6379/0",
         "share.ca: a CA is for TLS, but the URL is 'redis://***@h:6379/0': start it rediss://"),
        ("", "rediss://:hunter2@h:6380/0?ssl_ca_certs=/nonexistent/ca.pem",
         "--share: share: the URL's ssl_ca_certs: cannot read /nonexistent/ca.pem"),
    ],
)
def test_bad_tls_settings_are_one_line_naming_the_file_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    settings: str, share: str | None, expected: str,
) -> None:
    team = team_dir(tmp_path, settings + "accounts: {claude: work-max}\n")
    (team / "ca.pem").write_text("-----BEGIN CERTIFICATE-----\n", encoding="utf-8")
    (team / "notpem.txt").write_text("a CA, honestly\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)  # a relative path in the URL is the daemon's own business
    argv = ["run", str(team), "--run", str(tmp_path / "run")]
    code, err = run([*argv, "--share", share] if share else argv, capsys)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert expected.format(team=team) in err, err
    assert ("--share: " if share and "--share" in expected else "autodev.yaml: ") in err
    assert "hunter2" not in err
    assert not (tmp_path / "run").exists()  # nothing started


def test_a_password_in_the_url_query_is_redacted_too() -> None:
    from autodev_shell.sharing import redacted

    assert redacted("rediss://h:6380/0?password=hunter2&db=1") == (
        "rediss://h:6380/0?password=***&db=1")
    assert redacted("rediss://u:p@h:6380/0?ssl_ca_certs=/etc/ca.pem") == (
        "rediss://***@h:6380/0?ssl_ca_certs=/etc/ca.pem")


@pytest.mark.parametrize("where", ["flag", "settings"])
def test_fast_with_sharing_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    """docs/sharing.md "Clocks": `--fast` runs a virtual clock; a shared limit is a real
    instant, so a run never does both (issue 40 item 6)."""
    settings = "accounts: {claude: work-max}\n"
    argv = ["--fast", "60"]
    if where == "flag":
        argv += ["--share", "redis://:hunter2@127.0.0.1:1/0"]
    else:
        settings += "share: redis://:hunter2@127.0.0.1:1/0\n"
    team = team_dir(tmp_path, settings)
    code, err = run(["run", str(team), "--run", str(tmp_path / "run"), *argv], capsys)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert "--fast runs a virtual clock, and a shared limit is a real instant" in err
    assert "hunter2" not in err
    assert not (tmp_path / "run").exists()  # nothing started


def test_an_accounts_key_naming_no_participants_account_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 42 item 3 (docs/sharing.md "Engine accounts"): a team naming accounts may share —
    the start no longer refuses it — but a key of `accounts:` naming an engine account no
    participant names (a typo would leave the real one unshared) is one line, and nothing
    starts."""
    from autodev_shell.standins import install_standins

    monkeypatch.setenv("PATH", str(install_standins(tmp_path / "bin")))  # claude is installed
    team = tmp_path / "team"
    team.mkdir()
    (team / "ana.md").write_text("---\nprovider: claude@work\n---\nWork.\n", encoding="utf-8")
    (team / "autodev.yaml").write_text(
        f"accounts: {{claude@nowhere: acme-max}}\n"
        f"env:\n  claude@work: {{CLAUDE_CONFIG_DIR: {tmp_path / 'work'}}}\n", encoding="utf-8")
    code, err = run(["run", str(team), "--run", str(tmp_path / "run"),
                     "--share", "redis://:hunter2@127.0.0.1:1/0"], capsys)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert err.endswith(
        "autodev.yaml: accounts.claude@nowhere: no participant names that account\n"), err
    assert "cannot share" not in err and "hunter2" not in err
    assert not (tmp_path / "run").exists()
