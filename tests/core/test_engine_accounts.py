"""Accounts (docs/participants.md, Accounts): `claude@work` and `claude@home` are two engines of
one provider. Property-tested as every engine rule is: the name round-trips through
`Engine.parse`/`str` and JSON, the order is total and agrees with `==`, `.primary` keeps the
account (`claude@work:opus` -> `claude@work`, the account a usage window belongs to), and a
limit on one account never benches the other (A8): the participant hops to the other account
(A11), and the run waits only when both are limited (A18)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autodev_core.detection.classification import LimitNotice
from autodev_core.engine import Engine
from autodev_core.participant import Participant, parse_participant
from autodev_core.scheduler import (
    CallEnded,
    Log,
    RunStarted,
    SchedulerConfig,
    StartCall,
    initial_state,
    step,
)
from autodev_core.serialization import from_json, to_json

NOW = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)
models = st.none() | st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._\-\[\]/@]{0,11}", fullmatch=True)
accounts = st.none() | st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,9}", fullmatch=True)
engines = st.builds(Engine, provider=st.sampled_from(("claude", "codex", "agy")), model=models,
                    account=accounts)


def name_of(engine: Engine) -> str:
    """Stated on its own: provider, then `@account`, then `:model`, each when there is one."""
    name = engine.provider + ("" if engine.account is None else "@" + engine.account)
    return name + ("" if engine.model is None else ":" + engine.model)


@given(engine=engines)
def test_an_engine_with_an_account_round_trips_its_name(engine: Engine) -> None:
    assert str(engine) == name_of(engine)
    assert Engine.parse(str(engine)) == engine
    assert from_json(to_json(engine), Engine) == engine
    assert to_json(engine) == f'"{name_of(engine)}"'


@given(a=engines, b=engines)
def test_the_order_with_accounts_is_total_and_agrees_with_equality(a: Engine, b: Engine) -> None:
    assert sum((a < b, a == b, a > b)) == 1
    assert (a == b) is ((a.provider, a.model, a.account) == (b.provider, b.model, b.account))
    if a == b:
        assert hash(a) == hash(b)


@given(engine=engines)
def test_primary_keeps_the_account(engine: Engine) -> None:
    assert engine.primary == Engine(engine.provider, account=engine.account)
    assert engine.primary.primary == engine.primary


def test_primary_of_an_account_model_is_the_account() -> None:
    assert Engine.parse("claude@work:opus").primary == Engine.parse("claude@work")
    assert str(Engine.parse("claude@home:opus").primary) == "claude@home"


@pytest.mark.parametrize("text", ["claude@", "claude@:opus", "claude@wo rk", "claude@-x"])
def test_a_malformed_account_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        Engine.parse(text)


def test_a_participant_file_names_its_account_and_chain_accounts() -> None:
    ana = parse_participant("---\nprovider: claude@work\nmodel: opus\n"
                            "failover: [claude@home, codex]\n---\nWork.", id="ana")
    assert [str(e) for e in ana.entries] == ["claude@work", "claude@home", "codex"]
    assert ana.model_for(ana.primary) == "opus"  # A13: the pin on the primary


def _two_accounts() -> SchedulerConfig:
    return SchedulerConfig(team=(
        Participant(id="ana", provider="claude", account="work",
                    failover=(Engine("claude", account="home"),)),
    ))


def _limited(state, engine: Engine, hours: int):  # type: ignore[no-untyped-def]
    notice = LimitNotice(provider="claude", reset_at=state.last_event_at + timedelta(hours=hours),
                         text="limit")
    return step(state, CallEnded(now=state.last_event_at, participant="ana", engine=engine,
                                 kind="limit", limit=notice))


@given(hours=st.integers(1, 8))
def test_A8_a_limit_on_one_account_never_benches_the_other(hours: int) -> None:
    work, home = Engine("claude", account="work"), Engine("claude", account="home")
    state, effects = step(initial_state(_two_accounts()), RunStarted(now=NOW))
    assert [e.engine for e in effects if isinstance(e, StartCall)] == [work]
    state, effects = _limited(state, work, hours)
    assert [e.engine for e in effects if isinstance(e, StartCall)] == [home]  # A11
    assert "ana: claude@work limited → claude@home" in [
        e.message for e in effects if isinstance(e, Log)]
    assert [r.engine for r in state.limits] == [work]
    # home limited too: only now does the run wait (A18), for the earlier of the two.
    state, effects = _limited(state, home, hours + 1)
    assert state.status == "rate_limited"
    assert state.wait_until == NOW + timedelta(hours=hours)
