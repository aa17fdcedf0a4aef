"""docs/sharing.md (shell): the subscriber's mirror on a real redis-server.

A turn start reads memory while the subscription is live (a PONG within LIVE_SECONDS) and the
mirror was rebuilt under it; after a kill and restart, a paused server or a stale subscriber, it
makes the round trip again (`round_trips` counts them, `mirror_reads` the reads from memory).
Each test starts its own server on a free loopback port in a temp dir (helpers.redis_server).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

import pytest
from helpers.redis_server import RedisServer, needs_redis
from helpers.sharing_redis import CLAUDE, CODEX, SONNET, TEAM, WAIT, settings_for, wait_for

from autodev_core.engine import Engine
from autodev_core.scheduler import EngineLimit, EngineUsage

pytestmark = needs_redis

redis = pytest.importorskip("redis", reason="the redis extra is not installed: pip install "
                            "'autodev[redis]'")

from autodev_shell.sharing import LimitSharing, ShareSettings, millis  # noqa: E402
from autodev_shell.sharing import mirror as sharing_mirror  # noqa: E402

_counter = iter(range(10**9))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    with RedisServer(tmp_path_factory.mktemp("redis")) as srv:
        yield srv


def limit(until: datetime, seen: datetime, *, engine: Engine = CLAUDE,
          read: bool = True) -> EngineLimit:
    return EngineLimit(engine=engine, until=until, read=read, seen=seen)


def read_from_the_mirror(sharer: LimitSharing, now: datetime) -> None:
    """Once subscribed, a turn start rebuilds the mirror (one round trip) and the next reads it."""
    wait_for(lambda: sharer.subscription is not None)
    sharer.sync(TEAM, now)
    sharer.sync(TEAM, now)
    assert (sharer.round_trips, sharer.mirror_reads) == (1, 1)


def heard(sharer: LimitSharing) -> Callable[[], bool]:
    """Woken by the subscriber (a message from another run is in)."""
    return sharer.has_news


def test_a_turn_start_with_a_live_rebuilt_mirror_makes_no_round_trip(
    server: RedisServer,
) -> None:
    prefix = f"m{next(_counter)}"
    a = LimitSharing(settings_for(server, "laptop", prefix), subscribe=False)
    b = LimitSharing(settings_for(server, "ci", prefix))
    now = datetime.now(UTC)
    a.publish([limit(now + timedelta(hours=1), now, read=False)], now)  # before b listens
    wait_for(lambda: b.subscription is not None)
    first = b.sync(TEAM, now)  # the rebuild: one round trip under the live subscription
    assert b.round_trips == 1 and b.mirror_reads == 0
    assert [(str(o.engine), o.source) for o in first] == [("claude", "laptop")]
    # What other runs write meanwhile arrives by pub/sub; the turn starts read memory.
    a.publish([limit(now + timedelta(minutes=20), now, engine=SONNET)], now)
    a.publish_usage([EngineUsage(engine=CODEX, utilization=0.97, window="five_hour",
                                 until=now + timedelta(hours=2), read=True, seen=now)], now)
    got: list = []
    deadline = time.monotonic() + WAIT
    while len(got) < 2 and time.monotonic() < deadline:
        wait_for(heard(b))
        got += b.sync(TEAM, now)
    assert [(type(o).__name__, str(o.engine), o.source) for o in got] == [
        ("LimitObserved", "claude:sonnet", "laptop"), ("UsageObserved", "codex", "laptop")]
    assert b.sync(TEAM, now) == []  # each record once
    assert b.round_trips == 1  # not one more: every turn start since read the mirror
    assert b.mirror_reads >= 2
    # This run's own write comes back as a message too (the mirror holds what Redis holds),
    # never as a record delivered to its own core.
    b.publish([limit(now + timedelta(hours=3), now, engine=CODEX)], now)
    trips = b.round_trips
    wait_for(lambda: not b._inbox.empty())  # heard, without waking the sleeper
    assert not b.has_news()
    assert b.sync(TEAM, now) == []
    assert [r.who for r in b._mirror.read([("team", CODEX)], millis(now))[0]] == ["ci"]
    assert b.round_trips == trips
    a.close()
    b.close()


def test_the_mirror_applies_a_reset_locally(server: RedisServer) -> None:
    """A record whose reset has passed is never read out of the mirror (reset <= now, in ms),
    without waiting for Redis to expire it."""
    prefix = f"m{next(_counter)}"
    a = LimitSharing(settings_for(server, "laptop", prefix), subscribe=False)
    b = LimitSharing(settings_for(server, "ci", prefix))
    now = datetime.now(UTC)
    reset = now + timedelta(minutes=10)
    a.publish([limit(reset, now)], now)
    a.publish_usage([EngineUsage(engine=CODEX, utilization=0.5, window="", until=reset,
                                 read=True, seen=now)], now)
    wait_for(lambda: b.subscription is not None)
    assert len(b.sync(TEAM, now)) == 2  # the rebuild, which holds both
    reads = b.mirror_reads
    for at, expected in ((reset - timedelta(milliseconds=1), 2), (reset, 0)):
        b.forget_told()  # as if told nothing yet
        assert len(b.sync(TEAM, at)) == expected
    assert b.mirror_reads == reads + 2 and b.round_trips == 1
    a.close()
    b.close()


def test_after_a_kill_and_restart_the_first_turn_start_makes_the_round_trip(
    own_redis: RedisServer,
) -> None:
    lines: list[str] = []
    s = settings_for(own_redis, "ci", "k", timeout=0.3)
    b = LimitSharing(s, say=lines.append, retry_seconds=0.2)
    now = datetime.now(UTC)
    read_from_the_mirror(b, now)
    old = b.subscription
    own_redis.kill()
    own_redis.start()  # the same port, empty
    wait_for(lambda: b.subscription not in (None, old))  # subscribed again: a new generation
    reads = b.mirror_reads
    a = LimitSharing(ShareSettings(url=s.url, accounts=s.accounts, name="laptop",
                                   prefix=s.prefix), subscribe=False)
    a.publish([limit(now + timedelta(hours=1), now)], now)
    got: list = []
    deadline = time.monotonic() + WAIT
    while b.round_trips < 2 and time.monotonic() < deadline:
        got += b.sync(TEAM, now)  # not from the mirror: it was built under the old subscription
        assert b.mirror_reads == reads
        time.sleep(0.05)
    assert b.round_trips == 2  # the rebuild
    got += b.sync(TEAM, now)
    assert b.mirror_reads == reads + 1 and b.round_trips == 2  # trusted again
    assert [(str(o.engine), o.source) for o in got] == [("claude", "laptop")]
    assert all("lost" in line or "back" in line for line in lines)
    a.close()
    b.close()


def test_a_paused_server_makes_the_turn_start_fall_back_to_the_round_trip(
    own_redis: RedisServer,
) -> None:
    """SIGSTOP: the subscription stays open but no PONG comes back, so after LIVE_SECONDS the
    mirror is not trusted: the turn start tries the round trip (which times out: lost)."""
    lines: list[str] = []
    b = LimitSharing(settings_for(own_redis, "ci", "p", timeout=0.3), say=lines.append,
                     retry_seconds=60)
    now = datetime.now(UTC)
    read_from_the_mirror(b, now)
    own_redis.pause()
    try:
        time.sleep(sharing_mirror.LIVE_SECONDS + 0.5)
        b.sync(TEAM, now)
    finally:
        own_redis.resume()
    assert b.mirror_reads == 1  # not read from memory
    assert [line.split(" (")[0] for line in lines] == ["limit sharing lost"]  # it tried Redis
    b.close()


def test_a_stale_subscriber_makes_the_turn_start_fall_back_to_the_round_trip(
    server: RedisServer, monkeypatch: pytest.MonkeyPatch,
) -> None:
    b = LimitSharing(settings_for(server, "ci", f"m{next(_counter)}"))
    now = datetime.now(UTC)
    read_from_the_mirror(b, now)
    # No PONG is recent enough (as when this daemon was stopped and its subscriber did not run).
    monkeypatch.setattr(sharing_mirror, "LIVE_SECONDS", -1.0)
    b.sync(TEAM, now)
    assert (b.round_trips, b.mirror_reads) == (2, 1)
    monkeypatch.undo()
    b.sync(TEAM, now)
    assert (b.round_trips, b.mirror_reads) == (2, 2)
    # A subscriber that stopped listening (its connection closed) is not live at all.
    b._stop.set()
    assert b._thread is not None
    b._thread.join(timeout=WAIT)
    assert b.subscription is None
    b.sync(TEAM, now)
    assert (b.round_trips, b.mirror_reads) == (3, 2)
    b.close()


def test_a_limit_seen_while_redis_is_down_is_published_to_an_empty_server(
    own_redis: RedisServer,
) -> None:
    """Killed, then started again with an EMPTY database: what this run saw before
    and during the outage is re-published, and a second run receives it."""
    lines: list[str] = []
    s = settings_for(own_redis, "laptop", "e", timeout=0.3)
    a = LimitSharing(s, say=lines.append, retry_seconds=0.2)
    now = datetime.now(UTC)
    a.publish([limit(now + timedelta(hours=1), now, engine=SONNET)], now)  # before
    own_redis.kill()
    a.publish([limit(now + timedelta(hours=2), now)], now)  # while down
    assert not a.up
    own_redis.start()
    client = redis.Redis.from_url(s.url)
    assert client.dbsize() == 0  # empty
    deadline = time.monotonic() + WAIT
    while not a.up and time.monotonic() < deadline:
        time.sleep(0.1)
        if a.has_news():
            a.sync(TEAM, now)
    assert [line.split(" (")[0] for line in lines] == [
        "limit sharing lost", "limit sharing is back"]
    held = {key.decode(): json.loads(client.get(key)) for key in client.keys("e:limit:*")}
    assert {k: (v["reset"], v["who"]) for k, v in held.items()} == {
        "e:limit:work-max:claude": (millis(now + timedelta(hours=2)), "laptop"),
        "e:limit:work-max:claude:sonnet": (millis(now + timedelta(hours=1)), "laptop"),
    }
    b = LimitSharing(ShareSettings(url=s.url, accounts=s.accounts, name="ci", prefix=s.prefix))
    got = b.sync(TEAM, now)
    assert sorted((str(o.engine), o.source) for o in got) == [
        ("claude", "laptop"), ("claude:sonnet", "laptop")]
    client.close()
    a.close()
    b.close()


def test_a_dropped_subscriber_connection_is_a_gap_the_mirror_is_rebuilt_after(
    server: RedisServer,
) -> None:
    """The server drops the subscriber's connection (CLIENT KILL): a message published before
    it subscribes again is never heard, so the next turn start makes the round trip (a new
    generation: redis-py may subscribe again by itself, or the subscriber reconnects)."""
    prefix = f"m{next(_counter)}"
    a = LimitSharing(settings_for(server, "laptop", prefix), subscribe=False)
    b = LimitSharing(settings_for(server, "ci", prefix))
    now = datetime.now(UTC)
    read_from_the_mirror(b, now)
    old = b.subscription
    admin = redis.Redis.from_url(server.url)
    assert admin.client_kill_filter(_type="pubsub") >= 1
    a.publish([limit(now + timedelta(hours=1), now)], now)  # likely unheard by b
    wait_for(lambda: b.subscription not in (None, old))
    got = b.sync(TEAM, now)
    assert b.round_trips == 2  # the rebuild, not the mirror built under the old subscription
    assert [(str(o.engine), o.source) for o in got] == [("claude", "laptop")]
    admin.close()
    a.close()
    b.close()
