"""docs/sharing.md "Cluster, Sentinel, managed services, Valkey" (issue 40 item 7): the operator's
table on Valkey 8 (valkey-server from Debian 12's backports; .ci/run installs it), a small, cheap
subset of what test_sharing_redis.py and test_sharing_faults.py show on redis-server — the same
test functions, collected here again with this module's fixtures, which start valkey-server:

- pub/sub wakes a sleeping run at once with another run's limit;
- records Redis lost (FLUSHALL, a deleted key, an eviction) are re-published by the run that saw
  them, and a restart with an empty store is noticed (here by the subscriber);
- an ACL user without channel rights gets one line and a waiting daemon polls.

A Valkey cluster and a Sentinel are in test_sharing_cluster.py, a Sentinel failover under a
running daemon in test_sharing_failover.py. Skipped, as the redis-server tests are, when
valkey-server is absent.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import test_sharing_faults as on_redis
import test_sharing_redis as on_redis_too
from helpers.redis_server import RedisServer, needs_valkey
from helpers.sharing_redis import settings_for, wait_for
from test_sharing_faults import limit

pytestmark = needs_valkey
redis = pytest.importorskip("redis", reason="the redis extra is not installed: pip install "
                            "'autodev[redis]'")

from autodev_shell.sharing import LimitSharing  # noqa: E402

#: What Valkey 8 answers a SUBSCRIBE the ACL refuses (redis-server 7: "this user has no
#: permissions to access one of the channels used as arguments").
VALKEY_NOPERM = "No permissions to access a channel"

# The redis-server tests, collected again here on this module's valkey-server fixtures.
test_valkey_pub_sub_wakes_a_sleeper_at_once_with_an_earlier_read_reset = (
    on_redis_too.test_pub_sub_wakes_a_sleeper_at_once_with_an_earlier_read_reset)
test_valkey_records_lost_are_republished_by_the_run_that_saw_them = (
    on_redis.test_records_redis_lost_are_republished_by_the_run_that_saw_them)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """One valkey-server for the module (each test uses its own key prefix)."""
    with RedisServer(tmp_path_factory.mktemp("valkey"), binary="valkey-server") as srv:
        client = redis.Redis.from_url(srv.url)
        assert "valkey_version" in client.info("server")  # Valkey's, not a redis-server
        client.close()
        yield srv


@pytest.fixture
def raw(server: RedisServer) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(server.url)
    yield client
    client.close()


def test_valkey_restarted_empty_under_a_subscriber_gets_the_records_back(tmp_path: Path) -> None:
    """kill -9 and a start with an empty store, as an operator's restart does: the run's
    subscriber notices within a few seconds (the restart closed its connection) and its live
    limit is on the restarted server again; one line says so, no lost/back pair."""
    with RedisServer(tmp_path / "v", binary="valkey-server") as srv:
        said: list[str] = []
        a = LimitSharing(settings_for(srv, "laptop", "v"), say=said.append)
        try:
            wait_for(lambda: a.subscription is not None)
            now = datetime.now(UTC)
            a.publish([limit(now + timedelta(hours=1), now)], now)
            client = redis.Redis.from_url(srv.url)
            assert client.exists("v:limit:work-max:claude")
            srv.kill()
            srv.start()  # empty, on the same port
            began = time.monotonic()
            client = redis.Redis.from_url(srv.url)
            wait_for(lambda: bool(client.exists("v:limit:work-max:claude")))
            assert time.monotonic() - began < 10
            wait_for(a.has_news)
            a.sync([], now)  # the daemon's loop writes the subscriber's line
            assert said == [
                f"limit sharing: Redis no longer held this run's live records ({srv.url}: "
                "emptied, restarted or evicted); re-published them"]
            client.close()
        finally:
            a.close()


def test_valkey_an_acl_user_without_channel_rights_says_so_and_a_waiting_daemon_polls(
    tmp_path: Path, server: RedisServer, raw: redis.Redis,
) -> None:
    """test_sharing_faults' test of the same name, in Valkey's words: a new Valkey user has no
    channels either; one line, status says on with the polling, and a waiting run hears another
    run's limit within POLL_SECONDS by its round trip."""
    on_redis.check_acl_without_channels(tmp_path, server, raw, "vacl", VALKEY_NOPERM)
