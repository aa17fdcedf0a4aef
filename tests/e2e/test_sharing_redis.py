"""docs/sharing.md (shell): the shared limit registry on a real redis-server.

Each test starts its own server on a free loopback port in a temp dir (helpers.redis_server).
The server-side script must follow the core's rule; the model below states that rule on its own
(a read reset beats a defaulted one, else the later reset wins; a limit seen after the recorded
one ended starts anew; one whose reset had passed before the recorded one was seen is older and
ignored; ties go to the smaller name, then the earlier sighting; a read reset more than a week
and ten minutes after its sighting is taken as claude's default hour after it, unread:
docs/sharing.md "Clocks").
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import attrs
import pytest
from helpers.redis_server import RedisServer, needs_redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autodev_core.engine import Engine
from autodev_core.errors import ConfigError
from autodev_core.scheduler import EngineLimit, EngineUsage
from autodev_core.scheduler.registry import merge_limit

pytestmark = needs_redis

redis = pytest.importorskip("redis", reason="the redis extra is not installed: pip install "
                            "'autodev[redis]'")

from autodev_shell.sharing import (  # noqa: E402
    LimitSharing,
    SharedUsage,
    ShareSettings,
    check_accounts,
    check_url,
    from_millis,
    millis,
    redacted,
)

#: In the future of the real clock: Redis expires keys in real time.
T0 = datetime.now(UTC).replace(microsecond=0, second=0) + timedelta(days=1)
CLAUDE = Engine("claude")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    with RedisServer(tmp_path_factory.mktemp("redis"), password="s3cret-pw") as srv:
        yield srv


_counter = iter(range(10**9))


def settings_for(server: RedisServer, name: str, *, prefix: str | None = None,
                 timeout: float = 0.25) -> ShareSettings:
    return ShareSettings(
        url=server.url,
        accounts={"claude": "work-max", "codex": "team"},
        name=name,
        prefix=prefix or f"t{next(_counter)}",
        timeout=timeout,
    )


def record(until: datetime, *, read: bool = True, seen: datetime = T0) -> EngineLimit:
    return EngineLimit(engine=CLAUDE, until=until, read=read, seen=seen)


# ------------------------------------------------------------------------------------------------
# The server-side rule equals the core's, on every sequence


@st.composite
def sightings(draw: st.DrawFn) -> tuple[str, int, int, bool]:
    who = draw(st.sampled_from(("a", "b", "c")))
    seen = draw(st.integers(0, 240))
    read = draw(st.booleans())
    # Now and then a misreading past any window of claude's (a week and ten minutes), or just
    # within it: the script must doubt the one as the core does, and keep the other.
    ahead = draw(st.one_of(st.integers(1, 180), st.sampled_from(
        (WEEK_AND_GRACE, WEEK_AND_GRACE + 1, 365 * 24 * 60))))
    until = seen + (ahead if read else 60)
    return who, seen, until, read


#: docs/sharing.md "Clocks": claude's longest window (7 days) and A6's grace, in minutes.
WEEK_AND_GRACE = 7 * 24 * 60 + 10


def model(seq: list[tuple[str, int, int, bool]]) -> tuple[int, bool, int, str] | None:
    """The rule over arrivals in this order (minutes), as Redis holds it (no ended records)."""
    rec: tuple[int, bool, int, str] | None = None  # (until, read, seen, who)
    for who, seen, until, read in seq:
        if read and until - seen > WEEK_AND_GRACE:
            until, read = seen + 60, False  # beyond any window: claude's A6 hour, unread
        if rec is not None and seen >= rec[0]:
            rec = None
        if rec is None:
            rec = (until, read, seen, who)
        elif until <= rec[2]:
            continue
        elif read != rec[1]:
            if read:
                rec = (until, read, seen, who)
        elif until != rec[0]:
            if until > rec[0]:
                rec = (until, read, seen, who)
        elif who != rec[3]:
            if who < rec[3]:
                rec = (until, read, seen, who)
        elif seen < rec[2]:
            rec = (until, read, seen, who)
    return rec


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seq=st.lists(sightings(), min_size=1, max_size=6))
def test_the_script_moves_a_reset_only_by_the_rule(server: RedisServer, seq: list) -> None:
    sharers = {}
    base = settings_for(server, "x")
    now = T0  # every record is still to come, as Redis only holds those
    for who, seen, until, read in seq:
        if who not in sharers:
            sharers[who] = LimitSharing(
                ShareSettings(url=base.url, accounts=base.accounts, name=who,
                              prefix=base.prefix), subscribe=False)
        sharers[who].publish(
            [record(T0 + timedelta(minutes=until), read=read,
                    seen=T0 + timedelta(minutes=seen))], now - timedelta(days=1))
    client = redis.Redis.from_url(base.url)
    raw = client.get(base.key(CLAUDE))
    expected = model(seq)
    assert raw is not None and expected is not None
    data = json.loads(raw)
    assert (data["reset"], data["read"], data["seen"], data["who"]) == (
        millis(T0 + timedelta(minutes=expected[0])), expected[1],
        millis(T0 + timedelta(minutes=expected[2])), expected[3],
    )
    # ... and the core's merge, over the same records, ends with that record too.
    core: EngineLimit | None = None
    for who, seen, until, read in seq:
        core = merge_limit(core, EngineLimit(CLAUDE, T0 + timedelta(minutes=until), read,
                                             T0 + timedelta(minutes=seen), who),
                           now - timedelta(days=1))
    assert core is not None
    assert (millis(core.until), core.read, millis(core.seen or T0), core.source) == (
        data["reset"], data["read"], data["seen"], data["who"])
    for sharer in sharers.values():
        sharer.close()
    client.close()


# ------------------------------------------------------------------------------------------------
# Keys, TTL, one round trip, pub/sub


def test_one_key_per_account_and_engine_with_a_ttl_ending_at_the_reset(server: RedisServer) -> None:
    s = settings_for(server, "laptop")
    a = LimitSharing(s, subscribe=False)
    now = datetime.now(UTC)
    reset = now + timedelta(seconds=90)
    a.publish([EngineLimit(engine=Engine("claude", "sonnet"), until=reset, read=True, seen=now)],
              now)
    client = redis.Redis.from_url(s.url)
    key = f"{s.prefix}:limit:work-max:claude:sonnet"
    assert client.exists(key)
    # The TTL ends at the reset (as the time left by the writer's clock; both are this one).
    assert abs(client.pexpiretime(key) - millis(reset)) <= 2_000
    # A provider with no named account is never shared.
    a.publish([EngineLimit(engine=Engine("agy"), until=reset, read=True, seen=now)], now)
    assert not [k for k in client.keys(f"{s.prefix}:*") if b"agy" in k]
    a.close()
    client.close()


def test_a_turn_start_is_one_round_trip_and_delivers_each_record_once(server: RedisServer) -> None:
    s = settings_for(server, "ci")
    a = LimitSharing(ShareSettings(url=s.url, accounts=s.accounts, name="laptop",
                                   prefix=s.prefix), subscribe=False)
    b = LimitSharing(s, subscribe=False)
    now = datetime.now(UTC)
    a.publish([record(now + timedelta(hours=1), read=False, seen=now)], now)
    before = b.round_trips
    got = b.sync([CLAUDE, Engine("codex"), Engine("agy"), CLAUDE], now)
    assert b.round_trips == before + 1
    assert [(str(o.engine), o.read, o.source) for o in got] == [("claude", False, "laptop")]
    assert b.sync([CLAUDE], now) == []  # already told
    # Its own records never come back to a run.
    assert a.sync([CLAUDE], now) == []
    a.close()
    b.close()


def test_pub_sub_wakes_a_sleeper_at_once_with_an_earlier_read_reset(server: RedisServer) -> None:
    s = settings_for(server, "ci")
    b = LimitSharing(s)
    a = LimitSharing(ShareSettings(url=s.url, accounts=s.accounts, name="laptop",
                                   prefix=s.prefix), subscribe=False)
    now = datetime.now(UTC)
    time.sleep(0.5)  # the subscriber is listening
    a.publish([record(now + timedelta(hours=1), read=False, seen=now)], now)
    a.publish([record(now + timedelta(minutes=5), read=True, seen=now)], now)
    deadline = time.monotonic() + 30
    got: list = []
    while time.monotonic() < deadline and not any(o.read for o in got):
        while not b.has_news() and time.monotonic() < deadline:
            time.sleep(0.05)  # woken by the subscriber, not by a read of the keys
        got += b.sync([], now)  # the messages alone: no engine is read
    assert [(o.until, o.read) for o in got][-1] == (
        datetime.fromtimestamp(millis(now + timedelta(minutes=5)) / 1000, UTC), True)
    assert b.round_trips == 0
    a.close()
    b.close()


def test_another_account_is_never_mixed(server: RedisServer) -> None:
    s = settings_for(server, "ci")
    other = ShareSettings(url=s.url, accounts={"claude": "personal"}, name="laptop",
                          prefix=s.prefix)
    a = LimitSharing(other, subscribe=False)
    b = LimitSharing(s)
    now = datetime.now(UTC)
    time.sleep(0.5)
    a.publish([record(now + timedelta(hours=1), seen=now)], now)
    time.sleep(1.0)
    assert b.sync([CLAUDE], now) == []
    a.close()
    b.close()


# ------------------------------------------------------------------------------------------------
# Redis trouble never blocks a turn


def test_a_stopped_server_costs_at_most_the_timeout_then_nothing_until_retry(
    own_redis: RedisServer,
) -> None:
    lines: list[str] = []
    s = settings_for(own_redis, "ci", timeout=0.3)
    a = LimitSharing(s, say=lines.append, subscribe=False, retry_seconds=60)
    now = datetime.now(UTC)
    assert a.sync([CLAUDE], now) == []
    own_redis.pause()
    try:
        started = time.monotonic()
        a.publish([record(now + timedelta(hours=1), seen=now)], now)
        first = time.monotonic() - started
        started = time.monotonic()
        for _ in range(20):
            a.sync([CLAUDE], now)
        later = time.monotonic() - started
    finally:
        own_redis.resume()
    # One line when lost, none for the other attempts (which are not even tried until retry).
    assert [line.split(" (")[0] for line in lines] == ["limit sharing lost"]
    assert "127.0.0.1" in lines[0] and not a.up
    # The first operation waited for its timeout; the next twenty did not wait for Redis at all
    # (compared as a ratio in one run, not as an absolute time).
    assert later < first
    a.close()


def test_lost_then_back_republishes_what_was_learned_meanwhile(own_redis: RedisServer) -> None:
    lines: list[str] = []
    s = settings_for(own_redis, "laptop", timeout=0.3)
    a = LimitSharing(s, say=lines.append, subscribe=False, retry_seconds=0.2)
    now = datetime.now(UTC)
    own_redis.kill()
    a.publish([record(now + timedelta(hours=2), read=True, seen=now)], now)
    assert not a.up
    own_redis.start()  # the same port, empty: everything it held is gone
    deadline = time.monotonic() + 30
    while not a.up and time.monotonic() < deadline:
        time.sleep(0.25)
        if a.has_news():
            a.sync([CLAUDE], now)
    assert a.up
    assert [line.split(" (")[0] for line in lines] == [
        "limit sharing lost", "limit sharing is back"
    ]
    b = LimitSharing(ShareSettings(url=s.url, accounts=s.accounts, name="ci", prefix=s.prefix),
                     subscribe=False)
    got = b.sync([CLAUDE], now)
    assert [(o.source, o.read) for o in got] == [("laptop", True)]
    a.close()
    b.close()


# ------------------------------------------------------------------------------------------------
# URLs, passwords, accounts


def test_the_password_never_shows(server: RedisServer) -> None:
    s = settings_for(server, "ci")
    assert "s3cret-pw" in s.url
    assert "s3cret-pw" not in s.shown_url and "***@127.0.0.1" in s.shown_url
    assert redacted("rediss://user:pw@example.test:6380/1") == "rediss://***@example.test:6380/1"
    assert redacted("redis://localhost:6379/0") == "redis://localhost:6379/0"
    lines: list[str] = []
    wrong = ShareSettings(url=s.url.replace("s3cret-pw", "wrong-pw"), accounts=s.accounts,
                          name="ci", prefix=s.prefix)
    a = LimitSharing(wrong, say=lines.append, subscribe=False)
    a.sync([CLAUDE], datetime.now(UTC))
    assert lines and all("wrong-pw" not in line for line in lines)
    assert "wrong-pw" not in a.describe()
    a.close()


@pytest.mark.parametrize(
    "url",
    ["http://localhost:6379", "localhost:6379", "redis://", "redis://:pw@host:notaport/0"],
)
def test_a_bad_url_is_one_clear_error_without_the_password(url: str) -> None:
    with pytest.raises(ConfigError, match="share: ") as info:
        check_url(url, source="team/autodev.yaml")
    assert "pw@" not in str(info.value)
    assert check_url("rediss://:pw@cache.example.test:6380/2") .startswith("rediss://")


def test_accounts_name_providers() -> None:
    assert check_accounts({"claude": "work-max", "codex": "team"}, source="s") == {
        "claude": "work-max", "codex": "team"}
    with pytest.raises(ConfigError, match="unknown provider 'gpt'"):
        check_accounts({"gpt": "x"}, source="s")
    with pytest.raises(ConfigError, match=r"accounts\.claude: an account name"):
        check_accounts({"claude": "has space"}, source="s")
    with pytest.raises(ConfigError, match="expected a mapping"):
        check_accounts(["claude"], source="s")


# ------------------------------------------------------------------------------------------------
# Usage readings, shared beside limits by the core's rule (newest wins per window)


def usage(util: float, until: datetime, *, seen: datetime = T0, window: str = "five_hour",
          read: bool = True, engine: Engine = CLAUDE, threshold: float | None = None,
          source: str = "") -> EngineUsage:
    return EngineUsage(engine=engine, utilization=util, window=window, until=until, read=read,
                       seen=seen, source=source, threshold=threshold)


@st.composite
def readings_seen(draw: st.DrawFn) -> tuple[str, str, int, float, int, bool, float | None]:
    who = draw(st.sampled_from(("a", "b", "c")))
    window = draw(st.sampled_from(("five_hour", "seven_day", "")))
    seen = draw(st.integers(0, 30))
    util = draw(st.sampled_from((0.5, 0.9, 0.97, 1.0)))
    until = draw(st.integers(-30, 120))  # minutes after the instant the scripts run at
    read = draw(st.booleans())
    threshold = draw(st.sampled_from((None, 0.75, 0.9)))
    return who, window, seen, util, until, read, threshold


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(seq=st.lists(readings_seen(), min_size=1, max_size=6))
def test_the_usage_script_keeps_what_the_cores_merge_keeps(server: RedisServer, seq: list) -> None:
    """Per engine and window, Redis ends with the core's `merge_usage` of every reading whose
    window had not reset when it was written (a reset one is dropped), whatever the order."""
    from autodev_core.scheduler.registry import merge_usage

    base = settings_for(server, "x")
    now = T0 + timedelta(minutes=60)
    sharers = {}
    expected: dict[str, EngineUsage] = {}
    for who, window, seen, util, until, read, threshold in seq:
        if who not in sharers:
            sharers[who] = LimitSharing(
                ShareSettings(url=base.url, accounts=base.accounts, name=who,
                              prefix=base.prefix), subscribe=False)
        reading = usage(util, now + timedelta(minutes=until), window=window, read=read,
                        seen=T0 + timedelta(minutes=seen), threshold=threshold)
        sharers[who].publish_usage([reading], now)
        if until > 0:
            expected[window] = merge_usage(expected.get(window), attrs.evolve(reading, source=who),
                                           now)
    client = redis.Redis.from_url(base.url)
    held = {k.decode(): json.loads(v) for k, v in
            client.hgetall(base.usage_key(CLAUDE)).items()}  # type: ignore[union-attr]
    got = {w: (d["util"], d["reset"], d["read"], d["seen"], d["who"], d["threshold"])
           for w, d in held.items()}
    assert got == {
        w: (r.utilization, millis(r.until), r.read, millis(r.seen), r.source,  # type: ignore[arg-type]
            r.threshold)
        for w, r in expected.items()
    }
    for sharer in sharers.values():
        sharer.close()
    client.close()


def test_a_reading_is_one_field_of_the_engines_hash_expiring_with_its_last_window(
    server: RedisServer,
) -> None:
    s = settings_for(server, "laptop")
    a = LimitSharing(s, subscribe=False)
    now = datetime.now(UTC)
    sonnet = Engine("claude", "sonnet")
    a.publish_usage([usage(0.97, now + timedelta(minutes=90), seen=now, engine=sonnet,
                           threshold=0.9),
                     usage(0.4, now + timedelta(days=2), seen=now, window="seven_day",
                           engine=sonnet),
                     usage(0.99, now - timedelta(seconds=1), seen=now, window="seven_day_opus",
                           engine=sonnet)], now)  # reset already: dropped
    client = redis.Redis.from_url(s.url)
    key = f"{s.prefix}:usage:work-max:claude:sonnet"
    assert sorted(client.hkeys(key)) == [b"five_hour", b"seven_day"]
    assert json.loads(client.hget(key, "five_hour")) == {
        "util": 0.97, "reset": millis(now + timedelta(minutes=90)), "read": True,
        "seen": millis(now), "who": "laptop", "threshold": 0.9,
        "run": a.run_id}  # docs/sharing.md "Names": the writer's run id
    assert abs(client.pexpiretime(key) - millis(now + timedelta(days=2))) <= 2_000
    # The script drops a reset window too (a writer whose own check was skipped, e.g. a late
    # re-publish): nothing is written, nothing published.
    past = SharedUsage(account="work-max", engine=sonnet, window="seven_day_opus",
                       utilization=0.99, reset=millis(now) - 1, read=True, seen=millis(now),
                       who="laptop")
    assert a._merge_usage(past, now) is False
    assert sorted(client.hkeys(key)) == [b"five_hour", b"seven_day"]
    # A full tie but the threshold: the said threshold stays, whichever came first (a join).
    for first, second in ((None, 0.75), (0.75, None)):
        window = f"tie-{first}"
        for threshold in (first, second):
            a.publish_usage([usage(0.5, now + timedelta(hours=1), seen=now, engine=sonnet,
                                   window=window, threshold=threshold)], now)
        assert json.loads(client.hget(key, window))["threshold"] == 0.75
    # Limits keep their own keys: a reading is never a limit (A2).
    assert not client.exists(f"{s.prefix}:limit:work-max:claude:sonnet")
    a.publish_usage([usage(0.97, now + timedelta(hours=1), seen=now, engine=Engine("agy"))], now)
    assert not [k for k in client.keys(f"{s.prefix}:*") if b"agy" in k]
    a.close()
    client.close()


def test_a_turn_start_reads_limits_and_readings_in_one_round_trip_each_once(
    server: RedisServer,
) -> None:
    s = settings_for(server, "ci")
    a = LimitSharing(ShareSettings(url=s.url, accounts=s.accounts, name="laptop",
                                   prefix=s.prefix), subscribe=False)
    b = LimitSharing(s, subscribe=False)
    now = datetime.now(UTC)
    reset = now + timedelta(hours=2)
    a.publish([record(now + timedelta(hours=1), read=False, seen=now)], now)
    a.publish_usage([usage(0.97, reset, seen=now, threshold=0.9),
                     usage(0.5, now + timedelta(hours=3), seen=now, read=False,
                           engine=Engine("codex"), window="")], now)
    before = b.round_trips
    got = b.sync([CLAUDE, Engine("codex"), Engine("agy")], now)
    assert b.round_trips == before + 1
    assert type(got[0]).__name__ == "LimitObserved"  # limits first
    readings = [(str(o.engine), o.reading.window, o.reading.utilization, o.reading.resets_at,
                 o.reading.threshold, o.source) for o in got[1:]]  # type: ignore[union-attr]
    assert readings == [
        ("claude", "five_hour", 0.97, from_millis(millis(reset)), 0.9, "laptop"),
        ("codex", "", 0.5, None, None, "laptop"),  # an unsaid reset stays unsaid
    ]
    assert b.sync([CLAUDE, Engine("codex")], now) == []  # already told
    assert a.sync([CLAUDE, Engine("codex")], now) == []  # its own never come back
    # Once the window has reset, a reading is dropped, not delivered.
    c = LimitSharing(ShareSettings(url=s.url, accounts=s.accounts, name="other",
                                   prefix=s.prefix), subscribe=False)
    later = [o for o in c.sync([CLAUDE], reset + timedelta(seconds=1))
             if type(o).__name__ == "UsageObserved"]
    assert later == []
    for sharer in (a, b, c):
        sharer.close()


def test_pub_sub_delivers_a_newer_reading_and_never_another_accounts(
    server: RedisServer,
) -> None:
    s = settings_for(server, "ci")
    b = LimitSharing(s)
    a = LimitSharing(ShareSettings(url=s.url, accounts=s.accounts, name="laptop",
                                   prefix=s.prefix), subscribe=False)
    other = LimitSharing(ShareSettings(url=s.url, accounts={"claude": "personal"},
                                       name="home", prefix=s.prefix), subscribe=False)
    now = datetime.now(UTC)
    time.sleep(0.5)  # the subscriber is listening
    other.publish_usage([usage(0.99, now + timedelta(hours=1), seen=now)], now)
    a.publish_usage([usage(0.96, now + timedelta(hours=1), seen=now)], now)
    a.publish_usage([usage(0.3, now + timedelta(hours=1), seen=now + timedelta(seconds=1))], now)
    deadline = time.monotonic() + 30
    got: list = []
    while time.monotonic() < deadline and not any(o.reading.utilization == 0.3 for o in got):
        while not b.has_news() and time.monotonic() < deadline:
            time.sleep(0.05)
        got += b.sync([], now)  # the messages alone: no engine is read
    assert [(o.reading.utilization, o.source) for o in got] == [(0.96, "laptop"), (0.3, "laptop")]
    assert b.round_trips == 0
    for sharer in (a, b, other):
        sharer.close()


def test_lost_then_back_republishes_the_readings_too(own_redis: RedisServer) -> None:
    s = settings_for(own_redis, "laptop", timeout=0.3)
    a = LimitSharing(s, subscribe=False, retry_seconds=0.2)
    now = datetime.now(UTC)
    own_redis.kill()
    a.publish_usage([usage(0.97, now + timedelta(hours=2), seen=now)], now)
    assert not a.up
    own_redis.start()  # the same port, empty
    deadline = time.monotonic() + 30
    while not a.up and time.monotonic() < deadline:
        time.sleep(0.25)
        if a.has_news():
            a.sync([CLAUDE], now)
    b = LimitSharing(ShareSettings(url=s.url, accounts=s.accounts, name="ci", prefix=s.prefix),
                     subscribe=False)
    got = b.sync([CLAUDE], now)
    assert [(o.source, o.reading.utilization) for o in got] == [("laptop", 0.97)]  # type: ignore[union-attr]
    a.close()
    b.close()
