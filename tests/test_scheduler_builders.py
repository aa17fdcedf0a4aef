"""Issue 13: `step` builds its effects and its new state without attrs' checks, because it derives
them from an event and a state that were checked when the caller built them. Two things must
then hold, and are checked here:

- an unchecked value is indistinguishable from the checked one built from the same arguments
  (equal, same hash, same repr), so the public types behave exactly as before;
- what `step` derives is legal: tests/test_scheduler_stateful.py rebuilds every effect and the
  new state through the checked constructors after every step of its random runs.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from autodev_core.engine import Engine
from autodev_core.scheduler import (
    Call,
    EngineLimit,
    Log,
    Outage,
    SchedulerState,
    Sleep,
    StartCall,
    StatusChanged,
)
from autodev_core.scheduler._build import (
    new_call,
    new_engine_limit,
    new_log,
    new_outage,
    new_sleep,
    new_start_call,
    new_state,
    new_status_changed,
)
from autodev_core.testing import scheduler_configs

instants = st.datetimes(
    min_value=datetime(2026, 1, 1), max_value=datetime(2027, 12, 31), timezones=st.just(UTC)
)
optional_instants = st.none() | instants
engines = st.builds(
    Engine, provider=st.sampled_from(("claude", "codex", "agy")),
    model=st.none() | st.sampled_from(("sonnet", "o3", "gpt-5.1")),
)
names = st.text(alphabet="abcxyz", min_size=1, max_size=4)


def same(checked: Any, unchecked: Any) -> None:
    assert type(unchecked) is type(checked)
    assert unchecked == checked
    assert checked == unchecked
    assert hash(unchecked) == hash(checked)
    assert repr(unchecked) == repr(checked)


@given(
    at=instants, message=st.text(max_size=20),
    kind=st.sampled_from(("limit", "failed", "note", "wait-own")),
    participant=st.none() | names, engine=st.none() | engines,
    provider=st.none() | st.sampled_from(("claude", "codex")), target=st.none() | engines,
    colleague=st.none() | names, until=optional_instants,
    count=st.none() | st.integers(0, 20), failure=st.none() | st.text(max_size=10),
)
def test_an_unchecked_log_is_the_checked_log(**fields: Any) -> None:
    same(Log(**fields), new_log(**fields))


@given(at=instants, participant=names, engine=engines, model=st.none() | names,
       turn_kind=st.sampled_from(("fresh", "no-new-input")), turn_owner=names)
def test_an_unchecked_start_call_is_the_checked_one(**fields: Any) -> None:
    same(StartCall(**fields), new_start_call(**fields))


@given(until=instants, status=st.sampled_from(("rate_limited", "unreachable", "backing_off")),
       wakes_on_message=st.booleans(), at=instants,
       changed=st.sampled_from(("running", "paused", "stopped", "rate_limited")))
def test_unchecked_sleeps_and_status_changes_are_the_checked_ones(
    until: datetime, status: Any, wakes_on_message: bool, at: datetime, changed: Any
) -> None:
    same(Sleep(until=until, status=status, wakes_on_message=wakes_on_message),
         new_sleep(until, status, wakes_on_message))
    same(StatusChanged(at=at, status=changed), new_status_changed(at, changed))


@given(participant=names, engine=engines, started_at=instants, turn_owner=names,
       approved=st.booleans(), until=instants, read=st.booleans(), seen=optional_instants,
       source=st.sampled_from(("", "laptop")), attempts=st.integers(1, 9))
def test_unchecked_state_parts_are_the_checked_ones(
    participant: str, engine: Engine, started_at: datetime, turn_owner: str, approved: bool,
    until: datetime, read: bool, seen: datetime | None, source: str, attempts: int,
) -> None:
    same(Call(participant=participant, engine=engine, started_at=started_at,
              turn_owner=turn_owner, approved=approved),
         new_call(participant, engine, started_at, turn_owner, approved))
    same(EngineLimit(engine=engine, until=until, read=read, seen=seen, source=source),
         new_engine_limit(engine, until, read, seen, source))
    same(Outage(provider=engine.provider, retry_at=until, attempts=attempts),
         new_outage(engine.provider, until, attempts))


@given(config=scheduler_configs(max_team=3), status=st.sampled_from(("running", "paused")),
       failures=st.integers(0, 12), iterations=st.integers(0, 99),
       runtime=st.integers(0, 10_000).map(lambda s: timedelta(seconds=s)),
       last=optional_instants, until=instants)
def test_an_unchecked_state_is_the_checked_state(
    config: Any, status: Any, failures: int, iterations: int, runtime: timedelta,
    last: datetime | None, until: datetime,
) -> None:
    n = len(config.team)
    fields: dict[str, Any] = {
        "config": config, "status": status, "due": n - 1, "approved": config.team[0].id,
        "gates": frozenset({config.team[-1].id}),
        "limits": (EngineLimit(engine=config.team[0].primary, until=until),),
        "outages": (Outage(provider=config.team[0].provider, retry_at=until),),
        "failures": failures, "empties": (1,) * n, "seats": (0,) * n, "passed": (0,) * n,
        "call": None, "wait_until": until, "fresh": False, "last_runner": config.team[0].id,
        "iterations": iterations, "runtime": runtime, "last_event_at": last,
    }
    same(SchedulerState(**fields), new_state(**fields))
