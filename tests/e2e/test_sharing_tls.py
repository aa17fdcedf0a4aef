"""Limit sharing over TLS (`rediss://`) with an ACL user, on real processes.

A throwaway CA and a server certificate for 127.0.0.1/localhost are made with `openssl` in a temp
dir, and a TLS-only redis-server (`--port 0 --tls-port`) with one ACL user (the default user
off) is started on a free loopback port (helpers.redis_server). Shown here:

- sharing works over `rediss://` with the CA given in the URL (`?ssl_ca_certs=`, read by
  redis-py) or as `share.ca` in autodev.yaml, for the turn-start read and the subscriber alike;
- a wrong CA, a plain server behind `rediss://`, a TLS server behind `redis://` and a wrong
  password each say one readable line (`limit sharing lost (...)`), and the run goes on with
  its own limits (outages are local: A25, A26);
- the ACL password shows nowhere a run writes or says: lost/back lines, log, lanes, the sharing
  status file, `autodev status` and `autodev status --json` (grepped for a distinctive one).

Everything skips with one line when redis-server, openssl, redis-py or TLS in redis-server is
missing; CI installs them all (.ci/run).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from helpers.redis_server import Certificates, RedisServer, needs_openssl, needs_redis

from autodev_core.engine import Engine
from autodev_core.scheduler import EngineLimit

pytestmark = [needs_redis, needs_openssl]

redis = pytest.importorskip("redis", reason="the redis extra is not installed: pip install "
                            "'autodev[redis]'")

from autodev_shell.sharing import (  # noqa: E402
    LimitSharing,
    ShareSettings,
    connection_options,
    share_options,
    share_settings,
)
from autodev_shell.team import load_team  # noqa: E402

USER = "autodev-ci"
#: Distinctive, so that finding it anywhere is the bug and nothing else.
PASSWORD = "Tls-pw-7f3e9q-never-shown"
CLAUDE = Engine("claude")
ACCOUNTS = {"claude": "work-max"}
_counter = iter(range(10**9))


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    return Certificates(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def other_ca(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    """Another CA: it signed nothing the server shows."""
    return Certificates(tmp_path_factory.mktemp("other-certs"), name="another CA")


@pytest.fixture(scope="module")
def tls_server(
    tmp_path_factory: pytest.TempPathFactory, certs: Certificates
) -> Iterator[RedisServer]:
    with RedisServer(tmp_path_factory.mktemp("redis-tls"), user=USER, password=PASSWORD,
                     tls=certs) as server:
        yield server


@pytest.fixture(scope="module")
def plain_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    with RedisServer(tmp_path_factory.mktemp("redis-plain")) as server:
        yield server


#: Seconds each Redis operation may take here: generous, so that on a loaded machine a failure
#: is the one a test means (a refused certificate, a closed connection), never a slow answer.
TIMEOUT = 5.0


def settings(url: str, name: str, *, prefix: str, ca: Path | None = None,
             timeout: float = TIMEOUT) -> ShareSettings:
    return ShareSettings(url=url, accounts=ACCOUNTS, name=name, prefix=prefix, timeout=timeout,
                         ca=None if ca is None else str(ca))


def limit(now: datetime, *, minutes: int = 40) -> EngineLimit:
    return EngineLimit(engine=CLAUDE, until=now + timedelta(minutes=minutes), read=True,
                       seen=now)


def exchange(a: LimitSharing, b: LimitSharing) -> None:
    """A publishes a limit; B hears it by pub/sub (its subscriber's own TLS connection), then
    reads it at a turn start (one round trip on the main connection)."""
    now = datetime.now(UTC)
    time.sleep(0.5)  # B's subscriber is listening
    a.publish([limit(now)], now)
    deadline = time.monotonic() + 30
    while not b.has_news() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert b.has_news(), "B's subscriber heard nothing over TLS"
    got = b.sync([], now)  # the message alone
    assert [(str(o.engine), o.read, o.source) for o in got] == [("claude", True, "laptop")]
    other = LimitSharing(settings(b.settings.url, "other", prefix=b.settings.prefix,
                                  ca=None if b.settings.ca is None else Path(b.settings.ca)),
                         subscribe=False)
    try:
        read = other.sync([CLAUDE], now)
        assert other.round_trips == 1 and other.up
        assert [(o.source, o.until) for o in read] == [("laptop", got[0].until)]
    finally:
        other.close()
    assert a.up and b.up and a.lost_count == b.lost_count == 0


def test_sharing_works_over_tls_with_the_ca_in_the_url(
    tls_server: RedisServer, certs: Certificates
) -> None:
    url = f"{tls_server.url}?ssl_ca_certs={certs.ca}"
    prefix = f"u{next(_counter)}"
    a = LimitSharing(settings(url, "laptop", prefix=prefix), subscribe=False)
    b = LimitSharing(settings(url, "ci", prefix=prefix))
    try:
        assert connection_options(b.settings) == {}  # redis-py reads the CA from the URL
        exchange(a, b)
    finally:
        a.close()
        b.close()


def test_sharing_works_over_tls_with_the_ca_key_in_autodev_yaml(
    tls_server: RedisServer, certs: Certificates, tmp_path: Path
) -> None:
    team = tmp_path / "team"
    team.mkdir()
    (team / "ana.md").write_text("---\nprovider: claude\n---\nWork.\n", encoding="utf-8")
    (team / "tls").mkdir()
    (team / "tls" / "ca.pem").write_bytes(certs.ca.read_bytes())
    prefix = f"k{next(_counter)}"
    (team / "autodev.yaml").write_text(
        f"share: {{url: '{tls_server.url}', ca: tls/ca.pem, prefix: {prefix}, "
        f"timeout: {TIMEOUT}}}\n"
        "accounts: {claude: work-max}\n", encoding="utf-8")
    loaded = load_team(team)
    assert loaded.share.ca == str(team / "tls" / "ca.pem")  # relative to the team directory
    made = [share_settings(loaded.share, url=None, default_name=name,
                           source=str(team / "autodev.yaml")) for name in ("laptop", "ci")]
    assert made[0] is not None and made[1] is not None
    assert connection_options(made[0]) == {"ssl_ca_certs": str(team / "tls" / "ca.pem")}
    a = LimitSharing(made[0], subscribe=False)
    b = LimitSharing(made[1])
    try:
        exchange(a, b)
    finally:
        a.close()
        b.close()


def lost_line(url: str, *, ca: Path | None = None, timeout: float = TIMEOUT) -> tuple[
        list[str], LimitSharing]:
    """One run's attempt to share through `url`: the lines it said, and it (to close)."""
    lines: list[str] = []
    sharing = LimitSharing(settings(url, "ci", prefix=f"l{next(_counter)}", ca=ca,
                                    timeout=timeout),
                           say=lines.append, subscribe=False, retry_seconds=60)
    now = datetime.now(UTC)
    # The run goes on: nothing raises, nothing is heard, its own limit stays its own (A25).
    sharing.publish([limit(now)], now)
    assert sharing.sync([CLAUDE], now) == []
    assert sharing.sync([CLAUDE], now) == []
    assert not sharing.up and sharing.lost_count == 1
    return lines, sharing


def check_one_line(lines: list[str], where: str, reason: str) -> None:
    assert len(lines) == 1, lines  # said once, not at each attempt
    line = lines[0]
    assert "\n" not in line and "Traceback" not in line and PASSWORD not in line
    assert line == (f"limit sharing lost ({where}: {reason}); carrying on with this run's own "
                    "limits"), line


def test_a_wrong_ca_is_one_clear_line_and_the_run_goes_on(
    tls_server: RedisServer, other_ca: Certificates
) -> None:
    lines, sharing = lost_line(tls_server.url, ca=other_ca.ca)
    sharing.close()
    shown = f"rediss://***@127.0.0.1:{tls_server.port}/0"
    check_one_line(lines, shown, "TLS: certificate verify failed (self-signed certificate in "
                   "certificate chain)")


def test_no_ca_at_all_is_the_same_clear_line(tls_server: RedisServer) -> None:
    """The system's CAs did not sign the throwaway one either."""
    lines, sharing = lost_line(tls_server.url)
    sharing.close()
    assert len(lines) == 1 and "TLS: certificate verify failed" in lines[0], lines


def test_a_plain_server_behind_rediss_is_one_clear_line(
    plain_server: RedisServer, certs: Certificates
) -> None:
    url = plain_server.url.replace("redis://", "rediss://")
    lines, sharing = lost_line(url, ca=certs.ca, timeout=0.3)
    sharing.close()
    check_one_line(lines, url, "TLS: no handshake within the timeout (is the port a TLS one?)")


def test_a_tls_server_behind_redis_is_one_clear_line(tls_server: RedisServer) -> None:
    url = tls_server.url.replace("rediss://", "redis://")
    lines, sharing = lost_line(url)
    sharing.close()
    check_one_line(lines, f"redis://***@127.0.0.1:{tls_server.port}/0",
                   "the server closed the connection (a TLS port? its URL starts rediss://)")


def test_a_wrong_password_is_one_clear_line_without_either_password(
    tls_server: RedisServer, certs: Certificates
) -> None:
    wrong = tls_server.url.replace(PASSWORD, "Wrong-pw-41xq")
    lines, sharing = lost_line(wrong, ca=certs.ca)
    assert "Wrong-pw-41xq" not in sharing.describe() and "Wrong-pw-41xq" not in lines[0]
    sharing.close()
    check_one_line(lines, f"rediss://***@127.0.0.1:{tls_server.port}/0",
                   "invalid username-password pair or user is disabled.")


def test_lost_then_back_over_tls_says_so_once_each_without_the_password(
    tls_server: RedisServer, certs: Certificates, tmp_path: Path
) -> None:
    """The CA file disappears under a running daemon, then comes back."""
    ca = tmp_path / "ca.pem"
    ca.write_bytes(certs.ca.read_bytes())
    lines: list[str] = []
    sharing = LimitSharing(settings(tls_server.url, "ci", prefix=f"b{next(_counter)}", ca=ca),
                           say=lines.append, subscribe=False, retry_seconds=0.1)
    now = datetime.now(UTC)
    try:
        sharing.sync([CLAUDE], now)
        assert sharing.up
        sharing._client.connection_pool.disconnect()  # the next command connects anew
        ca.unlink()
        sharing.sync([CLAUDE], now)
        assert not sharing.up
        ca.write_bytes(certs.ca.read_bytes())
        deadline = time.monotonic() + 30
        while not sharing.up and time.monotonic() < deadline:
            time.sleep(0.15)
            sharing.sync([CLAUDE], now)
        assert sharing.up
    finally:
        sharing.close()
    shown = f"rediss://***@127.0.0.1:{tls_server.port}/0"
    assert lines == [
        f"limit sharing lost ({shown}: TLS: cannot read a certificate file (No such file or "
        "directory)); carrying on with this run's own limits",
        f"limit sharing is back ({shown})",
    ]


def test_share_options_resolve_the_ca_beside_the_settings_file(tmp_path: Path) -> None:
    source = str(tmp_path / "team" / "autodev.yaml")
    options = share_options({"url": "rediss://h:6380/0", "ca": "ca.pem"}, ACCOUNTS,
                            source=source)
    assert options.ca == str(tmp_path / "team" / "ca.pem")
    absolute = share_options({"url": "rediss://h:6380/0", "ca": "/etc/ssl/x.pem"}, ACCOUNTS,
                             source=source)
    assert absolute.ca == "/etc/ssl/x.pem"
    assert share_options("rediss://h:6380/0", ACCOUNTS, source=source).ca is None


# ------------------------------------------------------------------------------------------------
# Real daemons: one shares over TLS with an ACL user, one has the wrong password


def _written_bytes(*roots: Path) -> bytes:
    """Every byte the runs wrote (logs, lanes, status files, the store itself)."""
    out = []
    for root in roots:
        for path in root.rglob("*"):
            if path.is_file():
                out.append(path.read_bytes())
    return b"\n".join(out)


def _status(run_dir: Path, *extra: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "autodev_shell.cli", "status", "--run", str(run_dir), *extra],
        capture_output=True, text=True, timeout=120, check=True,
    )
    return done.stdout + done.stderr


def test_daemons_over_tls_share_a_limit_and_never_show_the_password(
    tmp_path: Path, tls_server: RedisServer, certs: Certificates
) -> None:
    from test_sharing_daemons import Daemon, first, wait_for

    # The URL comes from --share (share_daemon.py); the CA and a generous timeout from here.
    ca_setting = f"share: {{url: 'rediss://placeholder:1/0', ca: '{certs.ca}', timeout: 2}}\n"
    a = Daemon(tmp_path, "a", {"ana": "claude"}, ACCOUNTS, {
        "claude": [{"kind": "limit", "notice": "Usage limit reached. Try again in 40 minutes."}],
        "default": {"post": "ok", "sleep": 0.05},
    }, settings=ca_setting)
    b = Daemon(tmp_path, "b", {"bob": "claude"}, ACCOUNTS, {
        "default": {"post": "ok", "sleep": 0.05},
    }, settings=ca_setting)
    c = Daemon(tmp_path, "c", {"cy": "claude"}, ACCOUNTS, {
        "default": {"post": "ok", "sleep": 0.05},
    }, settings=ca_setting)
    wrong = tls_server.url.replace(PASSWORD, "Wrong-pw-41xq")
    factor = 150.0  # A's 40-minute limit lasts 16 s: time for B to start on a loaded machine
    real = time.time()
    virtual = datetime.now(UTC).replace(hour=9, minute=0, second=0, microsecond=0)
    try:
        a.start(tls_server.url, factor, virtual, real, seconds=35)
        c.start(wrong, factor, virtual, real, seconds=20)
        wait_for(lambda: any("claude limited until" in m for m in a.messages()), "A's limit")
        b.start(tls_server.url, factor, virtual, real, seconds=30)
        wait_for(lambda: any("every participant limited" in m for m in b.messages()),
                 "B's wait")
        assert b.calls() == 0  # B learned A's limit over TLS before any call
        shown = _status(b.run_dir)
        as_json = _status(b.run_dir, "--json")
        assert f"sharing: on — rediss://***@127.0.0.1:{tls_server.port}/0" in shown, shown
        assert json.loads(as_json)["sharing"]["url"] == (
            f"rediss://***@127.0.0.1:{tls_server.port}/0")
        assert json.loads(as_json)["sharing"]["state"] == "on"
        # C, with the wrong password, goes on with its own limits and posts (A25).
        wait_for(lambda: any("cy posted via claude" in m for m in c.messages()), "C's post")
        c_status = _status(c.run_dir) + _status(c.run_dir, "--json")
        wait_for(lambda: any("bob posted via claude" in m for m in b.messages()), "B's post")
        a.finish()
        b.finish()
        c.finish()
    finally:
        a.kill()
        b.kill()
        c.kill()
    lost = [m for m in c.messages() if m.startswith("limit sharing lost")]
    assert lost == [
        f"limit sharing lost (rediss://***@127.0.0.1:{tls_server.port}/0: invalid "
        "username-password pair or user is disabled.); carrying on with this run's own limits"
    ], c.messages()
    assert "sharing: lost" in c_status
    assert first(b.lines(), "(reported by ")[1].startswith("claude limited until")
    everything = _written_bytes(a.run_dir, b.run_dir, c.run_dir, tmp_path / "team-a",
                                tmp_path / "team-b", tmp_path / "team-c")
    for secret in (PASSWORD, "Wrong-pw-41xq"):
        assert secret.encode() not in everything
        assert secret not in shown + as_json + c_status
