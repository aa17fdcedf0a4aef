"""docs/sharing.md "Cluster and Sentinel" (issue 40 item 7): sharing through a 3-node Redis
Cluster on loopback ports and through a Sentinel watching one primary, with redis-py's own
clients. Each test starts its servers in a temp dir (no config file but the ones it writes) and
takes a few seconds, once on redis-server and once on valkey-server (the `binary` fixture; each
skipped, as needs_redis skips, when its binary is absent).
"""

from __future__ import annotations

import socket
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from helpers.redis_server import (
    RedisServer,
    free_port,
    needs_redis,
    server_binary,
    server_params,
)
from helpers.sharing_redis import CLAUDE, CODEX, TEAM, wait_for

from autodev_core.scheduler import EngineLimit, EngineUsage

pytestmark = needs_redis

redis = pytest.importorskip("redis", reason="the redis extra is not installed: pip install "
                            "'autodev[redis]'")

from autodev_shell.sharing import LimitSharing, ShareSettings  # noqa: E402

ACCOUNTS = {"claude": "work-max", "codex": "team"}


@pytest.fixture(params=server_params())
def binary(request: pytest.FixtureRequest) -> str:
    """The server program a test runs on: `redis-server` or `valkey-server`."""
    return str(request.param)


class Cluster:
    """Three redis-server nodes with `--cluster-enabled yes`, the 16384 slots split between
    them (CLUSTER ADDSLOTSRANGE, CLUSTER MEET: no redis-cli needed); `binary` names the server
    program (`valkey-server`: a Valkey cluster)."""

    def __init__(self, directory: Path, binary: str = "redis-server") -> None:
        self.directory = directory
        self.binary = server_binary(binary)
        self.ports = [cluster_port() for _ in range(3)]
        self.processes: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> Cluster:
        for port in self.ports:
            folder = self.directory / str(port)
            folder.mkdir(parents=True)
            self.processes.append(subprocess.Popen(
                [self.binary, "--bind", "127.0.0.1", "--port", str(port), "--dir", str(folder),
                 "--save", "", "--appendonly", "no", "--protected-mode", "no",
                 "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                 "--logfile", str(folder / "redis.log")], stdin=subprocess.DEVNULL))
        clients = [redis.Redis(port=p, host="127.0.0.1") for p in self.ports]
        for client in clients:
            wait_for(lambda c=client: _answers(c))
        bounds = [(0, 5460), (5461, 10922), (10923, 16383)]
        for client, (low, high) in zip(clients, bounds, strict=True):
            client.execute_command("CLUSTER", "ADDSLOTSRANGE", low, high)
        for port in self.ports[1:]:
            clients[0].execute_command("CLUSTER", "MEET", "127.0.0.1", port)
        for client in clients:
            wait_for(lambda c=client: b"cluster_state:ok" in c.execute_command("CLUSTER", "INFO")
                     and len(c.execute_command("CLUSTER", "NODES").splitlines()) == 3)
            client.close()
        return self

    def __exit__(self, *exc: object) -> None:
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            process.wait(timeout=30)

    @property
    def url(self) -> str:
        return f"redis+cluster://127.0.0.1:{self.ports[0]}/0"


def cluster_port() -> int:
    """A free port whose cluster bus port (port + 10000) is free too."""
    while True:
        port = free_port()
        if port + 10000 > 65535:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        return port


def _answers(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.ConnectionError:
        return False


def share(url: str, name: str, prefix: str) -> ShareSettings:
    return ShareSettings(url=url, accounts=ACCOUNTS, name=name, prefix=prefix)


def limit(until: datetime, seen: datetime) -> EngineLimit:
    return EngineLimit(engine=CLAUDE, until=until, read=True, seen=seen)


def exchange(url: str, prefix: str) -> None:
    """Two runs: a limit and a reading one publishes reach the other by pub/sub (it is woken)
    and by the round trip of a third started afterwards."""
    said: list[str] = []
    a = LimitSharing(share(url, "laptop", prefix), say=said.append)
    b = LimitSharing(share(url, "ci", prefix), say=said.append)
    try:
        wait_for(lambda: b.subscription is not None)
        now = datetime.now(UTC)
        assert b.sync(TEAM, now) == []  # the rebuild, under the live subscription
        a.publish([limit(now + timedelta(hours=1), now)], now)
        a.publish_usage([EngineUsage(engine=CODEX, utilization=0.9, window="five_hour",
                                     until=now + timedelta(hours=2), read=True, seen=now)], now)
        got: list = []
        deadline = time.monotonic() + 30
        while len(got) < 2 and time.monotonic() < deadline:
            wait_for(b.has_news)
            got += b.sync(TEAM, now)
        assert [(type(o).__name__, str(o.engine), o.source) for o in got] == [
            ("LimitObserved", "claude", "laptop"), ("UsageObserved", "codex", "laptop")]
        c = LimitSharing(share(url, "late", prefix), subscribe=False, say=said.append)
        assert sorted((type(o).__name__, str(o.engine)) for o in c.sync(TEAM, now)) == [
            ("LimitObserved", "claude"), ("UsageObserved", "codex")]
        c.close()
        assert said == [] and a.up and b.up and a.problems() == [] == b.problems()
    finally:
        a.close()
        b.close()


def test_sharing_through_a_three_node_cluster(tmp_path: Path, binary: str) -> None:
    with Cluster(tmp_path, binary) as cluster:
        exchange(cluster.url, "acme")
        node = redis.cluster.RedisCluster(host="127.0.0.1", port=cluster.ports[0])
        keys = sorted(k.decode() for k in node.keys(target_nodes=node.ALL_NODES))
        assert keys == ["{acme}:limit:work-max:claude", "{acme}:usage:team:codex"]
        assert len({node.keyslot(k) for k in keys}) == 1  # one slot: one MGET
        node.close()


def test_sharing_through_a_sentinel_with_one_primary(tmp_path: Path, binary: str) -> None:
    with RedisServer(tmp_path / "primary", password="pw", binary=binary) as primary:
        port = free_port()
        folder = tmp_path / "sentinel"
        folder.mkdir()
        conf = folder / "sentinel.conf"
        conf.write_text(
            f"port {port}\nbind 127.0.0.1\ndir {folder}\n"
            f"sentinel monitor mymaster 127.0.0.1 {primary.port} 1\n"
            "sentinel auth-pass mymaster pw\n", encoding="utf-8")
        process = subprocess.Popen([server_binary(binary), str(conf), "--sentinel", "--logfile",
                                    str(folder / "sentinel.log")], stdin=subprocess.DEVNULL)
        try:
            watcher = redis.Redis(host="127.0.0.1", port=port)
            wait_for(lambda: _answers(watcher))
            wait_for(lambda: watcher.execute_command(
                "SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster") is not None)
            watcher.close()
            exchange(f"redis+sentinel://:pw@127.0.0.1:{port}/mymaster/0", "acme")
            client = redis.Redis.from_url(primary.url)
            assert sorted(client.keys("acme:*")) == [b"acme:limit:work-max:claude",
                                                     b"acme:usage:team:codex"]
            client.close()
        finally:
            process.terminate()
            process.wait(timeout=30)


@pytest.mark.parametrize(("url", "expected"), [
    ("redis+sentinel://:hunter2@127.0.0.1:26379/", "a Sentinel URL is redis+sentinel://HOST:PORT"),
    ("redis+sentinel://127.0.0.1/mymaster", "a Sentinel URL is redis+sentinel://HOST:PORT"),
    ("redis+cluster:///0", "expected a redis:// or rediss:// URL (or redis+cluster://, redis+sentinel://)"),
    ("redis+sentinel://h:1/m/0?ssl_ca_certs=/x", "ssl_ca_certs is for TLS"),
])
def test_a_bad_cluster_or_sentinel_url_is_one_line(url: str, expected: str) -> None:
    from autodev_core.errors import ConfigError
    from autodev_shell.sharing import check_url

    with pytest.raises(ConfigError) as caught:
        check_url(url, source="team/autodev.yaml")
    assert expected in str(caught.value) and "hunter2" not in str(caught.value)
    assert "\n" not in str(caught.value)


def test_only_a_cluster_puts_the_prefix_in_a_hash_tag() -> None:
    assert share("redis+cluster://h:7000", "a", "acme").key(CLAUDE) == (
        "{acme}:limit:work-max:claude")
    assert share("redis+sentinel://h:26379/m", "a", "acme").key(CLAUDE) == (
        "acme:limit:work-max:claude")  # one primary: the keys of every other run
    assert share("redis://h:6379", "a", "acme").usage_key(CODEX) == "acme:usage:team:codex"
