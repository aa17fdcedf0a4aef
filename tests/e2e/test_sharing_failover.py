"""docs/sharing.md "Cluster, Sentinel, managed services, Valkey" (issue 40 item 7): a Sentinel
failover and a Cluster resharding under a running daemon, on real servers on loopback ports.

A daemon (stand-in CLIs, helpers/share_daemon.py, as in test_sharing_daemons.py) meets a claude
limit and shares it; then the servers change under it — `SENTINEL FAILOVER` promotes the replica,
or the team's hash slot moves to another cluster node (CLUSTER SETSLOT IMPORTING/MIGRATING,
MIGRATE, SETSLOT NODE, as `--cluster reshard` does) — and the test asserts what an operator
relies on (A8, A25): the daemon says lost and back once each at most, its live limit is on the
new primary / the new node within a few seconds, a daemon started afterwards makes no call on the
limited engine, and a limit met after the change is shared too. The Sentinel runs on Valkey (one
Sentinel, one primary, one replica), the cluster on redis-server and on Valkey;
test_sharing_cluster.py runs each topology on both servers.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from helpers.redis_server import (
    RedisServer,
    free_port,
    needs_redis,
    needs_valkey,
    server_binary,
)
from test_sharing_cluster import Cluster
from test_sharing_daemons import Daemon, status, wait_for

from autodev_shell.standins import write_script

redis = pytest.importorskip("redis", reason="the redis extra is not installed: pip install "
                            "'autodev[redis]'")

SERVICE = "mymaster"
ACCOUNTS = {"claude": "work-max", "codex": "team"}
OK = {"post": "ok", "sleep": 0.05}
#: A claude notice whose reset (3 hours, at 150x: 72 real seconds) outlives every test here.
LIMIT = {"kind": "limit", "notice": "Usage limit reached. Try again in 3 hours."}
CODEX_LIMIT = {"kind": "limit", "notice": "You've hit your usage limit. Try again in 3 hours."}
FACTOR = 150.0
RECOVER = 10.0  # seconds: what "within a few seconds" means on a loaded machine
KEY = "autodev:limit:work-max:claude"


def start_clock() -> tuple[datetime, float]:
    """The daemons' fast clock starts at this machine's time: a daemon's subscriber checks that
    Redis still holds its live records on the machine's clock (docs/sharing.md "When Redis
    loses records"), so their resets must be live on it too."""
    real = time.time()
    return datetime.fromtimestamp(real, UTC), real


def within(seconds: float, predicate: Callable[[], bool], what: str) -> float:
    """Wait until `predicate()`; fail after `seconds`. The seconds it took."""
    start = time.monotonic()
    while not predicate():
        assert time.monotonic() - start < seconds, f"timed out ({seconds:g} s): {what}"
        time.sleep(0.05)
    return time.monotonic() - start


def sharing_lines(daemon: Daemon) -> tuple[list[str], list[str]]:
    messages = daemon.messages()
    return ([m for m in messages if m.startswith("limit sharing lost")],
            [m for m in messages if m.startswith("limit sharing is back")])


def holds(client: redis.Redis, key: str) -> bool:
    try:
        return bool(client.exists(key))
    except redis.RedisError:
        return False


class Sentinel:
    """One primary, one replica in sync with it, and one Sentinel watching them (started after
    the replica is in sync, so its first INFO of the primary names the replica)."""

    def __init__(self, directory: Path, binary: str) -> None:
        self.directory = directory
        self.binary = binary
        self.port = free_port()
        # The replica's first sync at once (the default waits 5 s for more replicas).
        self.primary = RedisServer(directory / "primary", binary=binary,
                                   args=("--repl-diskless-sync-delay", "0"))
        self.replica: RedisServer | None = None
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Sentinel:
        try:
            self._start()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _start(self) -> None:
        self.primary.start()
        self.replica = RedisServer(self.directory / "replica", binary=self.binary,
                                   args=("--replicaof", "127.0.0.1", str(self.primary.port)))
        self.replica.start()
        replica = redis.Redis(host="127.0.0.1", port=self.replica.port)
        wait_for(lambda: replica.info("replication").get("master_link_status") == "up",
                 "the replica in sync")
        replica.close()
        folder = self.directory / "sentinel"
        folder.mkdir()
        conf = folder / "sentinel.conf"
        conf.write_text(
            f"port {self.port}\nbind 127.0.0.1\ndir {folder}\n"
            f"sentinel monitor {SERVICE} 127.0.0.1 {self.primary.port} 1\n"
            f"sentinel down-after-milliseconds {SERVICE} 2000\n"
            f"sentinel failover-timeout {SERVICE} 20000\n", encoding="utf-8")
        self.process = subprocess.Popen(
            [server_binary(self.binary), str(conf), "--sentinel", "--logfile",
             str(folder / "sentinel.log")], stdin=subprocess.DEVNULL)
        watcher = self.watcher()
        wait_for(lambda: _answers(watcher), "the Sentinel")
        watcher.close()

    def ready(self) -> None:
        """Until the Sentinel knows the replica (a few seconds after it starts): it can fail
        over to it."""
        watcher = self.watcher()
        wait_for(lambda: _replicas(watcher) == 1, "the Sentinel to know the replica")
        watcher.close()

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=30)
        for server in (self.primary, self.replica):
            if server is not None:
                server.stop()

    def watcher(self) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=5)

    def primary_port(self) -> int:
        watcher = self.watcher()
        try:
            return int(watcher.execute_command(
                "SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE)[1])
        finally:
            watcher.close()

    @property
    def url(self) -> str:
        return f"redis+sentinel://127.0.0.1:{self.port}/{SERVICE}/0"


def _answers(client: redis.Redis) -> bool:
    try:
        return client.execute_command(
            "SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE) is not None
    except redis.RedisError:
        return False


def _replicas(watcher: redis.Redis) -> int:
    try:
        found = watcher.execute_command("SENTINEL", "REPLICAS", SERVICE)
    except redis.RedisError:
        return 0
    return sum(1 for r in found if b"disconnected" not in _flags(r) and b"s_down" not in
               _flags(r))


def _flags(reply: object) -> bytes:
    if isinstance(reply, dict):
        return bytes(reply.get(b"flags") or reply.get("flags") or b"")
    items = list(reply)  # type: ignore[call-overload]
    return bytes(items[items.index(b"flags") + 1])


@pytest.fixture
def sentinel(tmp_path: Path) -> Iterator[Sentinel]:
    with Sentinel(tmp_path / "servers", "valkey-server") as servers:
        yield servers


@needs_valkey
@pytest.mark.parametrize("how", ["SENTINEL FAILOVER", "primary killed"])
def test_a_sentinel_failover_under_a_running_daemon(
    tmp_path: Path, sentinel: Sentinel, how: str
) -> None:
    """The primary changes while A waits on its claude limit — asked (`SENTINEL FAILOVER`) or
    because it died (`kill -9`; the Sentinel sees it down after 2 s): A says lost and back once
    each at most (once each when its primary died under it), its limit is on the new primary
    within seconds, its status says on, and B, started after the failover, makes no claude call
    (A8) but reads A's limit there."""
    a = Daemon(tmp_path, "a", {"ana": "claude"}, ACCOUNTS, {"claude": [LIMIT], "default": OK})
    b = Daemon(tmp_path, "b", {"bob": "claude"}, ACCOUNTS, {"default": OK})
    virtual, real = start_clock()
    old = sentinel.primary_port()
    try:
        a.start(sentinel.url, FACTOR, virtual, real, seconds=60)
        wait_for(lambda: any(m.startswith("claude limited until") for m in a.messages()),
                 "A's limit")
        first = redis.Redis(host="127.0.0.1", port=old)
        within(RECOVER, lambda: holds(first, KEY), "A's limit on the first primary")
        first.close()
        sentinel.ready()
        began = time.monotonic()
        if how == "primary killed":
            sentinel.primary.kill()
        else:
            watcher = sentinel.watcher()
            watcher.execute_command("SENTINEL", "FAILOVER", SERVICE)
            watcher.close()
        within(30, lambda: sentinel.primary_port() != old, "the failover")
        switched = time.monotonic() - began
        primary = redis.Redis(host="127.0.0.1", port=sentinel.primary_port())
        within(30, lambda: primary.info("replication").get("role") == "master",
               "the new primary to serve")
        within(RECOVER, lambda: holds(primary, KEY), "A's limit on the new primary")
        on_new = time.monotonic() - began
        if how == "primary killed":  # A met the dead primary: lost, then back on the new one
            within(RECOVER, lambda: len(sharing_lines(a)[1]) == 1, "A saying it is back")
        recovered = time.monotonic() - began
        # A write the old primary acknowledged but had not yet replicated is gone with it
        # (replication is asynchronous): A's subscriber, now on the new primary, re-publishes.
        primary.delete(KEY)
        within(RECOVER, lambda: holds(primary, KEY), "A re-publishing on the new primary")
        within(RECOVER, lambda: any(
            m.startswith("limit sharing: Redis no longer held this run's live records")
            for m in a.messages()), "A saying it re-published")
        assert "sharing: on — redis+sentinel://" in status(a.run_dir)
        b.start(sentinel.url, FACTOR, virtual, real, seconds=30)
        wait_for(lambda: any("every participant limited" in m for m in b.messages()),
                 "B's wait")
        assert b.calls() == 0
        assert any("claude limited until" in m and "(reported by" in m and m.endswith("/a)")
                   for m in b.messages()), b.messages()
        assert holds(primary, KEY)
        primary.close()
    finally:
        a.kill()
        b.kill()
    lost, back = sharing_lines(a)
    if how == "primary killed":
        assert len(lost) == len(back) == 1, (lost, back)
        assert a.messages().index(lost[0]) < a.messages().index(back[0])
    else:
        assert len(lost) == len(back) <= 1, (lost, back)
    assert sharing_lines(b) == ([], [])
    print(f"{how}: new primary named after {switched:.1f} s, A's limit on it after "
          f"{on_new:.1f} s, A back after {recovered:.1f} s; A said {len(lost)} lost / "
          f"{len(back)} back")


def _owner(client: redis.Redis, slot: int) -> tuple[str, int]:
    """The node id and port serving `slot` (CLUSTER SHARDS/SLOTS as any node sees it)."""
    for low, high, main, *_replicas in client.execute_command("CLUSTER", "SLOTS"):
        if int(low) <= slot <= int(high):
            return main[2].decode(), int(main[1])
    raise AssertionError(f"no node serves slot {slot}")


class SlotMove:
    """What `redis-cli --cluster reshard --cluster-from A --cluster-to B --cluster-slots 1` does
    for one slot: `begin` sets IMPORTING on the target, MIGRATING on the source and MIGRATEs the
    keys there now (a key written meanwhile goes to the target: ASK); `finish` MIGRATEs what
    is left and sets SETSLOT NODE everywhere."""

    def __init__(self, cluster: Cluster, slot: int, to_port: int) -> None:
        self.slot = slot
        self.to_port = to_port
        self.clients = {p: redis.Redis(host="127.0.0.1", port=p) for p in cluster.ports}
        self.source_id, self.source_port = _owner(self.clients[to_port], slot)
        assert self.source_port != to_port
        self.target_id = self.clients[to_port].execute_command("CLUSTER", "MYID").decode()

    def begin(self) -> None:
        target, source = self.clients[self.to_port], self.clients[self.source_port]
        target.execute_command("CLUSTER", "SETSLOT", self.slot, "IMPORTING", self.source_id)
        source.execute_command("CLUSTER", "SETSLOT", self.slot, "MIGRATING", self.target_id)
        self._migrate()

    def _migrate(self) -> None:
        source = self.clients[self.source_port]
        while keys := source.execute_command("CLUSTER", "GETKEYSINSLOT", self.slot, 100):
            source.execute_command("MIGRATE", "127.0.0.1", self.to_port, "", 0, 5000, "KEYS",
                                   *keys)

    def finish(self) -> None:
        self._migrate()
        for port in (self.to_port, self.source_port, *self.clients):
            self.clients[port].execute_command("CLUSTER", "SETSLOT", self.slot, "NODE",
                                               self.target_id)
        for client in self.clients.values():
            wait_for(lambda c=client: _owner(c, self.slot)[1] == self.to_port,
                     "every node to agree")
            client.close()


@pytest.mark.parametrize(("binary", "when"), [
    pytest.param("redis-server", "after", marks=needs_redis, id="redis-server-after"),
    pytest.param("valkey-server", "after", marks=needs_valkey, id="valkey-server-after"),
    pytest.param("redis-server", "during", marks=needs_redis, id="redis-server-during"),
])
def test_a_resharding_under_a_running_daemon(tmp_path: Path, binary: str, when: str) -> None:
    """The team's slot (`{autodev}`) moves to another node while A waits on its claude limit:
    B, started after the move, reads that limit and makes no claude call; a codex limit A meets
    after the move (or `during` it: the slot MIGRATING, its keys moved, a new one written to the
    target by ASK) is shared too; A says lost and back once each at most."""
    with Cluster(tmp_path / "cluster", binary) as cluster:
        url = f"redis+cluster://127.0.0.1:{cluster.ports[0]}/0"
        key = "{autodev}:limit:work-max:claude"
        a = Daemon(tmp_path, "a", {"ana": "claude", "cid": "codex"}, ACCOUNTS,
                   {"claude": [LIMIT], "default": OK})
        b = Daemon(tmp_path, "b", {"bob": "claude", "dan": "codex"}, ACCOUNTS,
                   {"default": OK})
        virtual, real = start_clock()
        node = redis.cluster.RedisCluster(host="127.0.0.1", port=cluster.ports[0])
        try:
            a.start(url, FACTOR, virtual, real, seconds=60)
            wait_for(lambda: any(m.startswith("claude limited until") for m in a.messages()),
                     "A's limit")
            within(RECOVER, lambda: holds(node, key), "A's limit in the cluster")
            slot = int(node.execute_command("CLUSTER", "KEYSLOT", key))
            _id, before = _owner(redis.Redis(host="127.0.0.1", port=cluster.ports[0]), slot)
            target = next(p for p in cluster.ports if p != before)
            move = SlotMove(cluster, slot, target)
            move.begin()
            if when == "after":
                move.finish()
            there = redis.Redis(host="127.0.0.1", port=target)
            assert there.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) >= 1
            # A meets a codex limit after (or during) the move: published to the new node.
            write_script(a.script, {"codex": {"default": CODEX_LIMIT}, "default": OK})
            published = within(
                60, lambda: any(m.startswith("codex limited until") for m in a.messages()),
                "A's codex limit")
            within(RECOVER, lambda: bool(there.execute_command(
                "CLUSTER", "COUNTKEYSINSLOT", slot) >= 2), "A's codex limit on the new node")
            there.close()
            if when == "during":
                time.sleep(1)  # A's subscriber checks its records meanwhile (every 2 s)
                move.finish()
            b.start(url, FACTOR, virtual, real, seconds=30)
            wait_for(lambda: any("every participant limited" in m for m in b.messages()),
                     "B's wait")
            assert b.calls() == 0
            reported = [m for m in b.messages() if "(reported by" in m]
            assert any(m.startswith("claude limited until") for m in reported), b.messages()
            assert any(m.startswith("codex limited until") for m in reported), b.messages()
        finally:
            node.close()
            a.kill()
            b.kill()
    lost, back = sharing_lines(a)
    assert len(lost) == len(back) <= 1, (lost, back)
    assert sharing_lines(b) == ([], [])
    assert not any(m.startswith("limit sharing cannot") for m in a.messages()), a.messages()
    print(f"resharding {when} on {binary}: A's codex limit {published:.1f} s after the move; "
          f"A said {len(lost)} lost / {len(back)} back")
