"""docs/sharing.md (issue 40): what an operator of several daemons meets, on a real redis-server.

Two runs with one name, a store that loses records (FLUSHALL, a deleted key, a restart empty),
a merge script the server refuses (a wrongly typed key, an ACL user without scripting), an ACL
user without channel rights, a dead server in `autodev status`, a clock apart from Redis's, and
the daemons told apart in `CLIENT LIST`. Each test starts what it needs on a free loopback port
(helpers.redis_server) and takes a few seconds. The same faults on Valkey 8 (Debian's
bookworm-backports) are in test_sharing_valkey.py, failover and resharding in
test_sharing_failover.py.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import attrs
import pytest
from helpers.redis_server import RedisServer, needs_redis
from helpers.sharing_redis import CLAUDE, TEAM, settings_for, wait_for
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autodev_core.engine import Engine
from autodev_core.scheduler import EngineLimit, EngineUsage, LimitObserved

pytestmark = needs_redis

redis = pytest.importorskip("redis", reason="the redis extra is not installed: pip install "
                            "'autodev[redis]'")

from autodev_shell.sharing import LimitSharing, ShareSettings, millis  # noqa: E402
from autodev_shell.sharing import client as sharing_client  # noqa: E402
from autodev_shell.sharing.settings import account_key, shared_engine  # noqa: E402
from autodev_shell.status.sharing import sharing_facts, sharing_line  # noqa: E402

_counter = iter(range(10**9))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    with RedisServer(tmp_path_factory.mktemp("redis")) as srv:
        yield srv


@pytest.fixture
def raw(server: RedisServer) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(server.url)
    yield client
    client.close()


def prefix() -> str:
    return f"f{next(_counter)}"


def limit(until: datetime, seen: datetime, engine: Engine = CLAUDE) -> EngineLimit:
    return EngineLimit(engine=engine, until=until, read=True, seen=seen)


def as_user(settings: ShareSettings, server: RedisServer, user: str) -> ShareSettings:
    return attrs.evolve(settings, url=f"redis://{user}:pw-{user}@127.0.0.1:{server.port}/0")


def add_user(raw: redis.Redis, user: str, *rules: str) -> None:
    raw.execute_command("ACL", "SETUSER", user, "reset", "on", f">pw-{user}", *rules)


# --- item 1: two runs with one name -------------------------------------------------------------


def test_two_runs_with_one_name_each_take_the_others_limit_and_say_so(
    server: RedisServer,
) -> None:
    """The default name `<host>/<team folder>` is the same for two `team` folders on one
    host: each run still takes the other's limit as another run's (its run id differs), and
    says once that another run has its name."""
    p = prefix()
    said_a: list[str] = []
    said_b: list[str] = []
    a = LimitSharing(settings_for(server, "host/team", p), subscribe=False, say=said_a.append)
    b = LimitSharing(settings_for(server, "host/team", p), subscribe=False, say=said_b.append)
    assert a.run_id != b.run_id
    now = datetime.now(UTC)
    a.publish([limit(now + timedelta(hours=1), now)], now)
    got = b.sync(TEAM, now)
    assert [(type(o).__name__, str(o.engine), o.source, o.until) for o in got] == [
        ("LimitObserved", "claude", "host/team", (now + timedelta(hours=1)).replace(
            microsecond=(now.microsecond // 1000) * 1000))]
    assert said_b == [
        f"limit sharing: another run also calls itself 'host/team' (run {a.run_id}); each "
        "takes the other's records as another run's — give each run its own share.name"]
    assert a.sync(TEAM, now) == []  # its own record: never told back to it
    assert said_a == []
    b.sync(TEAM, now)
    assert len(said_b) == 1  # once
    assert f"another run is also named 'host/team' (run {a.run_id})" in b.problems()
    a.close()
    b.close()


def test_a_restarted_run_takes_its_former_records_as_another_runs(server: RedisServer) -> None:
    """A daemon started again (A25 forgets its registry) is a new process with a new run id:
    it learns what it published before it stopped, and no name collision is said for it."""
    p = prefix()
    said: list[str] = []
    before = LimitSharing(settings_for(server, "laptop", p), subscribe=False)
    now = datetime.now(UTC) - timedelta(seconds=5)  # seen before the new process started
    before.publish([limit(now + timedelta(hours=1), now)], now)
    before.close()
    after = LimitSharing(settings_for(server, "laptop", p), subscribe=False, say=said.append)
    got = after.sync(TEAM, now)
    assert [(str(o.engine), o.source) for o in got] == [("claude", "laptop")]
    assert said == []
    after.close()


# --- item 2: records Redis lost -----------------------------------------------------------------


@pytest.mark.parametrize("fault", ["flushall", "del", "evicted"])
def test_records_redis_lost_are_republished_by_the_run_that_saw_them(
    server: RedisServer, raw: redis.Redis, fault: str,
) -> None:
    """FLUSHALL, a deleted key or an eviction (`UNLINK`, as `allkeys-lru` does) between two of
    the run's operations: its subscriber notices within CHECK_SECONDS, re-publishes the live
    records through the merge scripts and says so once; a run started afterwards reads them."""
    p = prefix()
    said: list[str] = []
    a = LimitSharing(settings_for(server, "laptop", p), say=said.append)
    wait_for(lambda: a.subscription is not None)
    now = datetime.now(UTC)
    a.publish([limit(now + timedelta(hours=1), now)], now)
    key = a.settings.key(CLAUDE)
    assert key is not None and raw.exists(key)
    if fault == "flushall":
        raw.flushall()
    elif fault == "del":
        raw.delete(key)
    else:
        raw.unlink(key)
    wait_for(lambda: raw.exists(key))  # re-published by the subscriber, with no turn start
    assert json.loads(raw.get(key))["reset"] == millis(now + timedelta(hours=1))
    assert 0 < raw.pttl(key) <= 3_600_000
    wait_for(a.has_news)
    a.sync(TEAM, now)  # the line reaches the log at the loop's next turn
    assert said == [
        f"limit sharing: Redis no longer held this run's live records ({a.settings.url}: "
        "emptied, restarted or evicted); re-published them"]
    c = LimitSharing(settings_for(server, "ci", p), subscribe=False)
    assert [(str(o.engine), o.source) for o in c.sync(TEAM, now)] == [("claude", "laptop")]
    a.close()
    c.close()


def test_a_restart_empty_between_two_round_trips_is_noticed_at_the_turn_start(
    tmp_path: Path,
) -> None:
    """Without a subscriber (it alone would notice first): the turn start's round trip asks
    whether the run's live records are still held, and re-publishes them."""
    with RedisServer(tmp_path / "r") as srv:
        said: list[str] = []
        a = LimitSharing(settings_for(srv, "laptop", "e"), subscribe=False, say=said.append)
        now = datetime.now(UTC)
        a.publish([limit(now + timedelta(hours=1), now)], now)
        srv.kill()
        srv.start()  # empty, and the run never saw it down
        a.sync(TEAM, now)
        client = redis.Redis.from_url(srv.url)
        assert client.exists("e:limit:work-max:claude")
        assert said == [
            f"limit sharing: Redis no longer held this run's live records ({srv.url}: "
            "emptied, restarted or evicted); re-published them"]
        client.close()
        a.close()


# --- item 3: the merge script refused -----------------------------------------------------------


def test_a_wrongly_typed_key_is_repaired_without_a_lost_or_back_line(
    server: RedisServer, raw: redis.Redis,
) -> None:
    p = prefix()
    said: list[str] = []
    a = LimitSharing(settings_for(server, "laptop", p), subscribe=False, say=said.append)
    key = a.settings.key(CLAUDE)
    assert key is not None
    raw.rpush(key, "not a record")  # a list where autodev keeps a string
    now = datetime.now(UTC)
    a.publish([limit(now + timedelta(hours=1), now)], now)
    a.sync(TEAM, now)
    assert said == [f"limit sharing repaired {key}: it held a list, not autodev's string; "
                    "deleted so that the shared records can be written again"]
    assert json.loads(raw.get(key))["who"] == "laptop"
    assert a.up and a.lost_count == 0
    a.close()


def test_an_acl_user_without_scripting_is_said_once_and_never_flaps(
    tmp_path: Path, server: RedisServer, raw: redis.Redis,
) -> None:
    """Reads work, the merge script is refused (NOPERM): one line, status says what is wrong
    and stays `on`, and many turn starts later there is still no lost/back pair."""
    p = prefix()
    add_user(raw, "noeval", f"~{p}:*", f"&{p}:*", "+@read", "+@write", "+ping",
             "+publish", "+subscribe", "+client|setname", "+time")
    said: list[str] = []
    status = tmp_path / "sharing.json"
    a = LimitSharing(as_user(settings_for(server, "laptop", p), server, "noeval"),
                     subscribe=False, say=said.append, status_file=status)
    now = datetime.now(UTC)
    for _ in range(5):
        a.publish([limit(now + timedelta(hours=1), now)], now)
        a.sync(TEAM, now)
    key = a.settings.key(CLAUDE)
    assert len(said) == 1, said
    assert said[0].startswith(f"limit sharing cannot write {key} (redis://***@127.0.0.1:"
                              f"{server.port}/0: ")
    assert "no permissions" in said[0]
    assert said[0].endswith("this run's records there are not shared")
    assert a.up and a.lost_count == 0
    facts = sharing_facts(status)
    assert facts is not None and facts["state"] == "on"
    line = sharing_line(facts)
    assert line.startswith("sharing: on — ") and f"; cannot write {key} (" in line
    assert "pw-noeval" not in status.read_text()
    # Granted scripting, the next write works and says so.
    raw.execute_command("ACL", "SETUSER", "noeval", "+evalsha", "+eval", "+script|load")
    a.publish([limit(now + timedelta(hours=2), now)], now)
    assert said[1:] == [f"limit sharing can write again (redis://***@127.0.0.1:{server.port}/0)"]
    assert a.problems() == []
    a.close()


def test_a_full_redis_under_noeviction_is_said_once_and_reads_go_on(tmp_path: Path) -> None:
    """`maxmemory` with `noeviction`: every write is refused (OOM), reads work: one line,
    no lost/back pair, and the limits Redis holds are still read."""
    with RedisServer(tmp_path / "r") as srv:
        client = redis.Redis.from_url(srv.url)
        said: list[str] = []
        other = LimitSharing(settings_for(srv, "ci", "o"), subscribe=False)
        now = datetime.now(UTC)
        other.publish([limit(now + timedelta(hours=1), now)], now)
        client.config_set("maxmemory-policy", "noeviction")
        client.config_set("maxmemory", 1)
        a = LimitSharing(settings_for(srv, "laptop", "o"), subscribe=False, say=said.append)
        for minutes in range(1, 6):
            a.publish([limit(now + timedelta(minutes=minutes), now,
                             engine=Engine("codex"))], now)
            got = a.sync(TEAM, now)
        assert len(said) == 1 and "command not allowed when used memory" in said[0], said
        assert said[0].startswith("limit sharing cannot write o:limit:team:codex (")
        assert a.up and a.lost_count == 0
        a.forget_told()
        got = a.sync(TEAM, now)
        assert [(str(o.engine), o.source) for o in got] == [("claude", "ci")]
        client.config_set("maxmemory", 0)
        client.close()
        a.close()
        other.close()


# --- item 4: no channel rights ------------------------------------------------------------------


#: What redis-server 7 answers a SUBSCRIBE by a user without channel rights.
REDIS_NOPERM = "this user has no permissions to access one of the channels used as arguments"


def test_an_acl_user_without_channel_rights_says_so_and_a_waiting_daemon_polls(
    tmp_path: Path, server: RedisServer, raw: redis.Redis,
) -> None:
    """Redis 7 gives a new user no channels: SUBSCRIBE answers NOPERM. One line, status says
    it, and a daemon waiting on a defaulted reset still hears another run's read reset within
    POLL_SECONDS (has_news, then the round trip)."""
    check_acl_without_channels(tmp_path, server, raw, prefix(), REDIS_NOPERM)


def check_acl_without_channels(tmp_path: Path, server: RedisServer, raw: redis.Redis, p: str,
                               denial: str) -> None:
    """The test above on any server, `denial` being its NOPERM words (Valkey has its own)."""
    add_user(raw, "nochan", f"~{p}:*", "+@all")  # keys, commands, no channels
    said: list[str] = []
    status = tmp_path / "sharing.json"
    waiting = LimitSharing(as_user(settings_for(server, "ci", p), server, "nochan"),
                           say=said.append, status_file=status)
    other = LimitSharing(settings_for(server, "laptop", p), subscribe=False)
    try:
        now = datetime.now(UTC)
        assert waiting.sync(TEAM, now) == []
        wait_for(lambda: "no pub/sub" in " ".join(waiting.problems()))
        other.publish([limit(now + timedelta(minutes=5), now)], now)
        start = time.monotonic()
        wait_for(waiting.has_news)
        got = waiting.sync(TEAM, now)
        assert time.monotonic() - start <= sharing_client.POLL_SECONDS + 1.5
        assert [(str(o.engine), o.source) for o in got] == [("claude", "laptop")]
        assert said == [
            f"limit sharing cannot subscribe to {p}:limits (redis://***@127.0.0.1:"
            f"{server.port}/0: {denial}); a waiting daemon asks Redis every 2 s instead "
            f"(grant the user &{p}:*)"]
        facts = sharing_facts(status)
        assert facts is not None and facts["state"] == "on"
        assert f"; no pub/sub ({denial}): polling every 2 s" in sharing_line(facts)
    finally:
        waiting.close()
        other.close()


#: The minimal ACL of docs/sharing.md "ACL users", for the prefix `{p}`.
MINIMAL_ACL = ("resetchannels", "~{p}:*", "&{p}:*", "+@read", "+@write", "+evalsha", "+eval",
               "+script|load", "+publish", "+subscribe", "+ping", "+time", "+client|setname")


def test_the_minimal_acl_of_the_docs_shares_everything_and_says_nothing(
    tmp_path: Path, server: RedisServer, raw: redis.Redis,
) -> None:
    p = prefix()
    add_user(raw, "minimal", *(rule.format(p=p) for rule in MINIMAL_ACL))
    said: list[str] = []
    a = LimitSharing(as_user(settings_for(server, "laptop", p), server, "minimal"),
                     say=said.append, status_file=tmp_path / "a.json")
    b = LimitSharing(as_user(settings_for(server, "ci", p), server, "minimal"), say=said.append)
    wait_for(lambda: a.subscription is not None and b.subscription is not None)
    now = datetime.now(UTC)
    b.sync(TEAM, now)
    a.publish([limit(now + timedelta(hours=1), now)], now)
    wait_for(b.has_news)
    assert [(str(o.engine), o.source) for o in b.sync(TEAM, now)] == [("claude", "laptop")]
    raw.flushall()  # and the check and the re-publish work under it too
    key = a.settings.key(CLAUDE)
    wait_for(lambda: raw.exists(key))
    a.sync(TEAM, now)
    assert said == [
        f"limit sharing: Redis no longer held this run's live records ({a.settings.shown_url}"
        ": emptied, restarted or evicted); re-published them"]
    assert a.problems() == [] and b.problems() == [] and a.state == "on"
    a.close()
    b.close()


# --- item 5: status tells the truth -------------------------------------------------------------


def test_status_says_lost_within_two_seconds_of_a_dead_server_with_no_turn_start(
    tmp_path: Path,
) -> None:
    with RedisServer(tmp_path / "r") as srv:
        status = tmp_path / "sharing.json"
        a = LimitSharing(settings_for(srv, "laptop", "s"), status_file=status)
        wait_for(lambda: a.subscription is not None)
        assert sharing_line(sharing_facts(status)).startswith("sharing: on")
        srv.kill()
        killed = time.monotonic()
        wait_for(lambda: (sharing_facts(status) or {}).get("state") == "lost")
        assert time.monotonic() - killed <= 2.0
        assert sharing_line(sharing_facts(status)).startswith("sharing: lost")
        srv.start()
        wait_for(lambda: (sharing_facts(status) or {}).get("state") == "on")
        a.close()


def test_status_says_lost_when_a_stopped_server_leaves_a_ping_unanswered(
    tmp_path: Path,
) -> None:
    """SIGSTOP (or a partition): the port answers nothing. While something is live the
    subscriber PINGs every PING_SECONDS, so status says lost once one is LIVE_SECONDS old."""
    with RedisServer(tmp_path / "r") as srv:
        status = tmp_path / "sharing.json"
        a = LimitSharing(settings_for(srv, "laptop", "s"), status_file=status)
        wait_for(lambda: a.subscription is not None)
        a.sync(TEAM, datetime.now(UTC))  # a turn start: the keepalive is fast
        time.sleep(0.6)  # a PING answered since
        srv.pause()
        try:
            paused = time.monotonic()
            wait_for(lambda: (sharing_facts(status) or {}).get("state") == "lost")
            # LIVE_SECONDS after a PING, sent at most PING_SECONDS after the pause; the rest is
            # slack for a loaded machine (docs/sharing.md: "within about 3 s")
            assert time.monotonic() - paused <= 2 + sharing_client.PING_SECONDS + 1.5
        finally:
            srv.resume()
        wait_for(lambda: (sharing_facts(status) or {}).get("state") == "on")
        a.close()


def test_a_sharing_file_left_by_a_killed_daemon_says_nothing_beside_not_running(
    tmp_path: Path,
) -> None:
    status = tmp_path / "sharing.json"
    status.write_text(json.dumps({"state": "on", "url": "redis://h:6379/0", "prefix": "p",
                                  "name": "n", "accounts": {}}))
    assert sharing_line(sharing_facts(status, running=False)) == "sharing: off"
    assert sharing_line(sharing_facts(status)).startswith("sharing: on")


# --- item 6: clocks -----------------------------------------------------------------------------


def test_a_fast_clock_is_said_and_its_instants_reach_others_on_the_real_timeline(
    tmp_path: Path, server: RedisServer, raw: redis.Redis,
) -> None:
    """A writer 30 s fast: one line, status says it, its record is stored on Redis's clock
    (a reader with a right clock waits until the same real instant), and the key's TTL ends
    at that instant. A reader 5 min slow reads it onto its own clock."""
    p = prefix()
    said: list[str] = []
    status = tmp_path / "sharing.json"
    fast = LimitSharing(settings_for(server, "fast", p), subscribe=False, say=said.append,
                        wall=lambda: time.time() + 30, status_file=status)
    real = datetime.now(UTC)
    local = real + timedelta(seconds=30)  # what the fast machine's clock says
    fast.sync(TEAM, local)  # the round trip measures Redis's TIME
    assert said == [
        f"limit sharing: this machine's clock is 30 s ahead of the Redis server's "
        f"({server.url}); shared instants are moved onto Redis's clock"]
    assert "this clock is 30 s ahead of Redis's" in sharing_line(sharing_facts(status))
    fast.publish([limit(local + timedelta(minutes=10), local)], local)
    key = fast.settings.key(CLAUDE)
    stored = json.loads(raw.get(key))
    assert abs(stored["reset"] - millis(real + timedelta(minutes=10))) <= 1_000
    assert abs(raw.pttl(key) - 600_000) <= 2_000
    right = LimitSharing(settings_for(server, "right", p), subscribe=False)
    got = right.sync(TEAM, real)
    assert len(got) == 1 and isinstance(got[0], LimitObserved)
    assert abs((got[0].until - (real + timedelta(minutes=10))).total_seconds()) <= 1
    slow = LimitSharing(settings_for(server, "slow", p), subscribe=False,
                        wall=lambda: time.time() - 300)
    slow.sync(TEAM, real - timedelta(minutes=5))  # measures, and may learn at once
    slow.forget_told()
    got = slow.sync(TEAM, real - timedelta(minutes=5))
    assert len(got) == 1 and isinstance(got[0], LimitObserved)
    assert abs((got[0].until - (real + timedelta(minutes=5))).total_seconds()) <= 1
    for sharer in (fast, right, slow):
        sharer.close()


@pytest.mark.parametrize("form", ["epoch", "clock", "date", "relative"])
def test_a_reset_the_provider_named_absolutely_is_shared_as_it_is(
    server: RedisServer, raw: redis.Redis, form: str,
) -> None:
    """A writer 30 s fast reads claude's `resetsAt` (an epoch), or a clock time or a date: that
    reset is an instant of the real timeline, not of the writer's clock, so it is stored as
    read, and a reader with a right clock lifts it at that instant (moving it onto Redis's clock
    as if this clock had made it would publish it 30 s early: readers would call inside the
    limit). A relative reset ("in 10 minutes") was counted on the fast clock and is moved."""
    p = prefix()
    real = datetime.now(UTC)
    local = real + timedelta(seconds=30)
    fast = LimitSharing(settings_for(server, "fast", p), subscribe=False,
                        wall=lambda: time.time() + 30)
    fast.sync(TEAM, local)
    if form == "relative":
        record, truth = limit(local + timedelta(minutes=10), local), real + timedelta(minutes=10)
    else:
        truth = real + timedelta(minutes=10)
        record = limit(truth, local)
    fast.publish([record], local, forms={CLAUDE: form})
    stored = json.loads(raw.get(fast.settings.key(CLAUDE)))
    assert abs(stored["reset"] - millis(truth)) <= 1_000
    right = LimitSharing(settings_for(server, "right", p), subscribe=False)
    got = right.sync(TEAM, real)
    assert len(got) == 1 and isinstance(got[0], LimitObserved)
    assert abs((got[0].until - truth).total_seconds()) <= 1
    for sharer in (fast, right):
        sharer.close()


@pytest.mark.parametrize("read", [True, False])
def test_a_usage_window_end_the_cli_said_is_shared_as_it_is(
    server: RedisServer, raw: redis.Redis, read: bool,
) -> None:
    """A reading's window end the CLI said (`resetsAt`, codex's `resets_at`) is an instant of
    the real timeline: a writer 30 s fast stores it as read. One it defaulted (no end said)
    was counted on its own clock and is moved onto Redis's."""
    p = prefix()
    real = datetime.now(UTC)
    local = real + timedelta(seconds=30)
    fast = LimitSharing(settings_for(server, "fast", p), subscribe=False,
                        wall=lambda: time.time() + 30)
    fast.sync(TEAM, local)
    end = (real if read else local) + timedelta(hours=2)
    fast.publish_usage([EngineUsage(engine=CLAUDE, utilization=0.9, window="five_hour",
                                    until=end, read=read, seen=local)], local)
    key = fast.settings.readings_key(
        fast.settings.accounts[account_key(CLAUDE)], shared_engine(CLAUDE))
    stored = json.loads(raw.hget(key, "five_hour"))
    assert abs(stored["reset"] - millis(real + timedelta(hours=2))) <= 1_000
    fast.close()


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None,
          max_examples=25)
@given(writer=st.integers(-600, 600), reader=st.integers(-600, 600),
       minutes=st.integers(1, 300))
def test_any_two_clocks_see_a_shared_reset_at_the_same_real_instant(
    server: RedisServer, writer: int, reader: int, minutes: int,
) -> None:
    """The invariant behind "Clocks": whatever two machines' clocks say (each measured
    against Redis's TIME at its round trip), a reset one publishes is read by the other at the
    same real instant: within SKEW_SECONDS for each clock (a difference under it is not
    corrected) and the measurement's noise."""
    p = prefix()
    real = datetime.now(UTC)
    a = LimitSharing(settings_for(server, "a", p), subscribe=False,
                     wall=lambda: time.time() + writer)
    b = LimitSharing(settings_for(server, "b", p), subscribe=False,
                     wall=lambda: time.time() + reader)
    a_now = real + timedelta(seconds=writer)
    b_now = real + timedelta(seconds=reader)
    a.sync(TEAM, a_now)  # each measures Redis's clock at its first round trip
    b.sync(TEAM, b_now)
    a.publish([limit(a_now + timedelta(minutes=minutes), a_now)], a_now)
    got = b.sync(TEAM, b_now)
    assert len(got) == 1 and isinstance(got[0], LimitObserved)
    lag = (got[0].until - timedelta(seconds=reader)) - (real + timedelta(minutes=minutes))
    assert abs(lag.total_seconds()) <= 2 * sharing_client.SKEW_SECONDS + 0.3
    a.close()
    b.close()


# --- item 7: the daemons told apart, the keepalive ----------------------------------------------


def test_each_daemon_names_its_connections(server: RedisServer, raw: redis.Redis) -> None:
    p = prefix()
    a = LimitSharing(settings_for(server, "laptop/team", p))
    wait_for(lambda: a.subscription is not None)
    a.sync(TEAM, datetime.now(UTC))
    names = [c["name"] for c in raw.client_list()]
    assert names.count(f"autodev:laptop/team:{a.run_id}") >= 2  # the loop's, the subscriber's
    a.close()


def test_an_acl_without_client_setname_shares_all_the_same(
    server: RedisServer, raw: redis.Redis,
) -> None:
    """The name is a courtesy: a user the ACL refuses `CLIENT SETNAME` connects unnamed."""
    p = prefix()
    add_user(raw, "noname", *(r.format(p=p) for r in MINIMAL_ACL if r != "+client|setname"))
    said: list[str] = []
    a = LimitSharing(as_user(settings_for(server, "laptop", p), server, "noname"),
                     say=said.append)
    wait_for(lambda: a.subscription is not None)
    now = datetime.now(UTC)
    a.sync(TEAM, now)
    a.publish([limit(now + timedelta(hours=1), now)], now)
    assert said == [] and a.up and a.problems() == []
    assert a.settings.key(CLAUDE) and raw.exists(a.settings.key(CLAUDE))
    users = [c for c in raw.client_list() if c["user"] == "noname"]
    assert len(users) >= 2 and all(c["name"] == "" for c in users)
    a.close()


def test_the_keepalive_is_fast_only_while_something_is_live(server: RedisServer) -> None:
    p = prefix()
    a = LimitSharing(settings_for(server, "laptop", p), subscribe=False)
    assert not a._active()  # idle: a PING every IDLE_PING_SECONDS
    now = datetime.now(UTC)
    a.sync(TEAM, now)
    assert a._active()  # a turn start: the mirror is in use for ACTIVE_SECONDS
    a._active_until = 0.0
    assert not a._active()
    a.publish([limit(now + timedelta(minutes=5), now)], now)
    assert a._active()  # a live limit
    a.close()
