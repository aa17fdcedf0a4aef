"""docs/sharing.md "Engine accounts" (issue 42 item 3; A8): `accounts:` may name an engine's
account (`claude@work: acme-max`). A record is keyed by the shared account's name and the engine
WITHOUT the local label, so two runs calling one real account by different labels share its
limits; a record heard reaches only the local engine whose account maps to its shared name, so a
limit on `claude@work` never benches `claude@home`. A team naming no account keys records as
before (tests/e2e/test_sharing_redis.py, unchanged, pins that).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from helpers.redis_server import RedisServer, needs_redis
from hypothesis import given
from hypothesis import strategies as st

from autodev_core.engine import PROVIDERS, Engine
from autodev_core.errors import ConfigError
from autodev_core.scheduler import EngineLimit, EngineUsage
from autodev_shell.sharing import ShareSettings, check_accounts, unshared_accounts
from autodev_shell.sharing.settings import account_key, shared_engine

# ------------------------------------------------------------------------------------------------
# The mapping alone (no server)

LABELS = ("work", "home", "job", "ci")
SHARED = ("acme-max", "me-pro", "team", "x.y")
MODELS = (None, "opus", "sonnet")


@st.composite
def mappings(draw: st.DrawFn) -> dict[str, str]:
    """An `accounts:` mapping as check_accounts takes it: per provider, its plain key and
    account keys, each to a shared name used at most once per provider."""
    found: dict[str, str] = {}
    for provider in PROVIDERS:
        keys = draw(st.lists(st.sampled_from((None, *LABELS)), unique=True, max_size=3))
        names = draw(st.lists(st.sampled_from(SHARED), unique=True, min_size=len(keys),
                              max_size=len(keys)))
        for label, name in zip(keys, names, strict=True):
            found[provider if label is None else f"{provider}@{label}"] = name
    return found


engines = st.builds(
    Engine, st.sampled_from(PROVIDERS), st.sampled_from(MODELS),
    account=st.sampled_from((None, *LABELS)))


def settings(accounts: dict[str, str], name: str = "ci", **kw: str) -> ShareSettings:
    return ShareSettings(url=kw.get("url", "redis://127.0.0.1:1/0"), accounts=accounts,
                         name=name, prefix=kw.get("prefix", "p"))


@given(mappings(), engines)
def test_local_to_shared_to_local_round_trips(accounts: dict[str, str], engine: Engine) -> None:
    """A8: the engine a record is about, heard back by the same mapping, is the engine it came
    from; an engine `accounts:` does not name has no key (not shared)."""
    s = settings(check_accounts(accounts, source="s"))
    shared = s.account(engine)
    if shared is None:
        assert s.key(engine) is None and s.usage_key(engine) is None
        assert account_key(engine) not in accounts
        return
    wire = shared_engine(engine)
    assert wire.account is None and (wire.provider, wire.model) == (engine.provider, engine.model)
    assert s.local(shared, wire) == engine
    assert s.key(engine) == f"p:limit:{shared}:{wire}"


@given(mappings(), mappings(), engines, engines)
def test_a_record_reaches_another_run_only_on_the_same_shared_account(
    mine: dict[str, str], theirs: dict[str, str], engine: Engine, other: Engine
) -> None:
    """Across two runs whose labels differ: a record of `engine` in one run reaches `other` in
    the second exactly when both map to one shared account and name one provider and model —
    never another account's engine, whatever the labels."""
    a = settings(check_accounts(mine, source="a"))
    b = settings(check_accounts(theirs, source="b"))
    shared = a.account(engine)
    if shared is None:
        return
    reached = b.local(shared, shared_engine(engine))
    same = (b.account(other) == shared and shared_engine(other) == shared_engine(engine))
    assert (reached == other) == same
    if reached is not None:
        assert b.account(reached) == shared and b.key(reached) == a.key(engine)


def test_accounts_may_name_engine_accounts() -> None:
    assert check_accounts({"claude@work": "acme-max", "claude@home": "me-pro", "codex": "team"},
                          source="s") == {"claude@work": "acme-max", "claude@home": "me-pro",
                                          "codex": "team"}
    with pytest.raises(ConfigError, match=r"'claude@work:opus' is a provider or an engine's "
                       r"account such as claude@work"):
        check_accounts({"claude@work:opus": "x"}, source="s")
    with pytest.raises(ConfigError, match="unknown provider 'gpt'"):
        check_accounts({"gpt@work": "x"}, source="s")
    with pytest.raises(ConfigError, match=r"accounts\.claude@home: claude@work names 'acme' "
                       "already; one account has one label in a team"):
        check_accounts({"claude@work": "acme", "claude@home": "acme"}, source="s")
    # One shared name for two providers is two accounts (as before).
    assert check_accounts({"claude": "team", "codex": "team"}, source="s")


def test_a_key_naming_no_participants_account_is_one_line_and_unnamed_ones_are_listed() -> None:
    s = settings({"claude@work": "acme-max", "codex": "team"})
    assert unshared_accounts(s, {"claude@work", "claude@home"}, source="t/autodev.yaml") == (
        "claude@home",)
    assert unshared_accounts(settings({"claude": "w"}), set(), source="t") == ()
    with pytest.raises(ConfigError) as info:
        unshared_accounts(settings({"claude@nowhere": "x"}), {"claude@work"},
                          source="t/autodev.yaml")
    assert str(info.value) == ("t/autodev.yaml: accounts.claude@nowhere: no participant names "
                               "that account")


# ------------------------------------------------------------------------------------------------
# On a real redis-server

redis_only = needs_redis
T0 = datetime.now(UTC).replace(microsecond=0, second=0) + timedelta(days=1)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    with RedisServer(tmp_path_factory.mktemp("redis")) as srv:
        yield srv


_counter = iter(range(10**9))


def pair(server: RedisServer) -> tuple[ShareSettings, ShareSettings]:
    """Two runs on one real account `acme-max`, which one calls claude@work and the other
    claude@job; each has another claude account of its own."""
    prefix = f"acc{next(_counter)}"
    a = ShareSettings(url=server.url, accounts={"claude@work": "acme-max",
                                                "claude@home": "me-pro"},
                      name="laptop", prefix=prefix)
    b = ShareSettings(url=server.url, accounts={"claude@job": "acme-max", "claude": "other"},
                      name="ci", prefix=prefix)
    return a, b


def limit(engine: Engine, until: datetime, seen: datetime) -> EngineLimit:
    return EngineLimit(engine=engine, until=until, read=True, seen=seen)


@redis_only
def test_two_labels_of_one_account_share_its_limit_and_no_other(server: RedisServer) -> None:
    pytest.importorskip("redis")
    import redis

    from autodev_shell.sharing import LimitSharing

    sa, sb = pair(server)
    a = LimitSharing(sa, subscribe=False)
    b = LimitSharing(sb, subscribe=False)
    now = datetime.now(UTC)
    work, home = Engine("claude", "opus", account="work"), Engine("claude", "opus", account="home")
    job, plain = Engine("claude", "opus", account="job"), Engine("claude", "opus")
    a.publish([limit(work, now + timedelta(hours=1), now)], now)
    a.publish([limit(home, now + timedelta(hours=2), now)], now)
    client = redis.Redis.from_url(server.url)
    # Keyed by the shared account and the engine without its local label.
    assert sorted(client.keys(f"{sa.prefix}:limit:*")) == [
        f"{sa.prefix}:limit:acme-max:claude:opus".encode(),
        f"{sa.prefix}:limit:me-pro:claude:opus".encode()]
    got = b.sync([job, plain, Engine("claude", account="job")], now)
    # Heard on claude@job (acme-max); claude@home's limit (me-pro) reaches none of b's engines.
    assert [(o.engine, o.source) for o in got] == [(job, "laptop")]
    # And back: b's limit on its own claude@job reaches a's claude@work, never claude@home.
    b.publish([limit(job, now + timedelta(hours=3), now + timedelta(seconds=1))], now)
    back = a.sync([work, home], now)
    assert [(o.engine, o.source) for o in back] == [(work, "ci")]
    client.close()
    a.close()
    b.close()


@redis_only
def test_pub_sub_and_readings_reach_only_the_mapped_account(server: RedisServer) -> None:
    pytest.importorskip("redis")
    from autodev_shell.sharing import LimitSharing

    sa, sb = pair(server)
    b = LimitSharing(sb)
    a = LimitSharing(sa, subscribe=False)
    now = datetime.now(UTC)
    work, home = Engine("claude", account="work"), Engine("claude", account="home")
    time.sleep(0.5)  # the subscriber is listening
    a.publish([limit(home, now + timedelta(hours=2), now)], now)
    a.publish_usage([EngineUsage(engine=home, utilization=0.99, window="five_hour",
                                 until=now + timedelta(hours=2), read=True, seen=now)], now)
    a.publish_usage([EngineUsage(engine=work, utilization=0.5, window="five_hour",
                                 until=now + timedelta(hours=1), read=True, seen=now)], now)
    a.publish([limit(work, now + timedelta(hours=1), now)], now)
    deadline = time.monotonic() + 30
    got: list = []
    while time.monotonic() < deadline and not any(hasattr(o, "until") for o in got):
        while not b.has_news() and time.monotonic() < deadline:
            time.sleep(0.05)
        got += b.sync([], now)  # the messages alone
    job = Engine("claude", account="job")
    assert {(type(o).__name__, o.engine) for o in got} <= {
        ("UsageObserved", job), ("LimitObserved", job)}
    assert ("LimitObserved", job) in {(type(o).__name__, o.engine) for o in got}
    # The reading on claude@work, published before its limit, was heard before it.
    assert [o.reading.utilization for o in got if hasattr(o, "reading")] == [0.5]
    assert b.round_trips == 0
    a.close()
    b.close()


@redis_only
def test_the_start_line_names_the_accounts_left_unshared(server: RedisServer,
                                                        tmp_path: Path) -> None:
    pytest.importorskip("redis")
    from autodev_shell.cli.commands import _open_sharing

    notes: list[str] = []

    class Log:
        def note(self, _at: datetime, line: str) -> None:
            notes.append(line)

    class Clock:
        def now(self) -> datetime:
            return T0

    sa, _sb = pair(server)
    sharing = _open_sharing(sa, Log(), Clock(), tmp_path, ("claude@spare",))  # type: ignore[arg-type]
    assert sharing is not None
    sharing.close()
    assert notes[-1] == (
        f"sharing limits via {server.url} as 'laptop' (accounts: claude@home as me-pro, "
        "claude@work as acme-max; not shared: claude@spare, not named under accounts:)")
