"""A turn start's round trip while one engine's usage hash cannot be read (docs/sharing.md, "The
local mirror"), on a real redis-server: the key holds another type (`WRONGTYPE` for HGETALL),
as a newer or older autodev, or a hand, may leave it. The other engines' limits and readings
still reach the core, once each; the unreadable engine's limit too (its own key reads fine);
and the rebuilt mirror does not vouch for the unreadable hash, so every turn start wanting that
engine makes the round trip again instead of reading "no readings" out of memory — while a turn
start wanting only the others reads the mirror. The mirror's own rule:
tests/shell/test_mirror_unreadable_usage.py."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from helpers.redis_server import RedisServer, needs_redis
from helpers.sharing_redis import CLAUDE, CODEX, SONNET, TEAM, settings_for, wait_for

from autodev_core.engine import Engine
from autodev_core.scheduler import EngineLimit, EngineUsage

pytestmark = needs_redis

redis = pytest.importorskip("redis", reason="the redis extra is not installed: pip install "
                            "'autodev[redis]'")

from autodev_shell.sharing import LimitSharing  # noqa: E402


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    with RedisServer(tmp_path_factory.mktemp("redis")) as srv:
        yield srv


def usage(engine: Engine, now: datetime, window: str = "five_hour") -> EngineUsage:
    return EngineUsage(engine=engine, utilization=0.97, window=window,
                       until=now + timedelta(hours=2), read=True, seen=now)


def test_an_unreadable_usage_hash_keeps_the_others_and_is_never_read_from_memory(
    server: RedisServer,
) -> None:
    prefix = "unreadable"
    laptop = LimitSharing(settings_for(server, "laptop", prefix), subscribe=False)
    said: list[str] = []
    ci = LimitSharing(settings_for(server, "ci", prefix), say=said.append)
    now = datetime.now(UTC)
    for engine in TEAM:
        laptop.publish([EngineLimit(engine=engine, until=now + timedelta(hours=1), read=True,
                                    seen=now)], now)
    laptop.publish_usage([usage(CLAUDE, now), usage(CODEX, now, "seven_day")], now)
    raw = redis.Redis.from_url(server.url)
    sonnet_hash = ci.settings.usage_key(SONNET)  # between the others: read in team order
    assert sonnet_hash is not None
    raw.set(sonnet_hash, "not a hash")  # HGETALL answers WRONGTYPE
    try:
        wait_for(lambda: ci.subscription is not None)
        first = ci.sync(TEAM, now)  # the round trip under the live subscription: a rebuild
        assert ci.round_trips == 1
        # (Some may have come by pub/sub first: each is told once, whichever way it came.)
        told = sorted((type(o).__name__, str(o.engine), o.source) for o in first)
        assert told == [
            ("LimitObserved", "claude", "laptop"),
            ("LimitObserved", "claude:sonnet", "laptop"),
            ("LimitObserved", "codex", "laptop"),
            ("UsageObserved", "claude", "laptop"),
            ("UsageObserved", "codex", "laptop"),
        ]
        # The mirror vouches for the engines it read whole ...
        reads = ci.mirror_reads
        assert ci.sync([CLAUDE, CODEX], now) == []
        assert ci.round_trips == 1 and ci.mirror_reads == reads + 1
        # ... never for sonnet's usage: a turn start wanting it goes to Redis again.
        assert ci.sync(TEAM, now) == []
        assert ci.round_trips == 2
        # Once the hash is readable again, its readings come through and the mirror is
        # trusted for the whole team.
        raw.delete(sonnet_hash)
        laptop.publish_usage([usage(SONNET, now)], now)
        # Said once, listed in status while it lasts (docs/sharing.md, issue 40 item 3).
        assert [line.split(" (")[0] for line in said] == [
            f"limit sharing cannot read {sonnet_hash}"]
        assert "WRONGTYPE" in said[0] and said[0].endswith(
            "other runs' records there are not read")
        assert [p.split(" (")[0] for p in ci.problems()] == [f"cannot read {sonnet_hash}"]
        got = ci.sync(TEAM, now)
        assert ci.problems() == [] and len(said) == 1  # readable again
        assert [(type(o).__name__, str(o.engine)) for o in got] == [
            ("UsageObserved", "claude:sonnet")]
        trips = ci.round_trips
        assert ci.sync(TEAM, now) == []
        assert ci.round_trips == trips
    finally:
        raw.close()
        laptop.close()
        ci.close()
