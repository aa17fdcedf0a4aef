"""Issue 13: `step` builds its effects and its new state without attrs' checks, because it derives
them from an event and a state that were checked when the caller built them. Two things must
then hold, and are checked here:

- an unchecked value is indistinguishable from the checked one built from the same arguments
  (equal, same hash, same repr), so the public types behave exactly as before;
- what `step` derives is legal: tests/core/test_scheduler_stateful.py rebuilds every effect and the
  new state through the checked constructors after every step of its random runs.
"""

from __future__ import annotations

import copy
import itertools
import pickle
import random
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import attrs
import pytest
from helpers.builders import same
from helpers.clock import T0
from hypothesis import example, given
from hypothesis import strategies as st

from autodev_core.detection.classification import LimitNotice, UsageReading
from autodev_core.engine import Engine
from autodev_core.scheduler import (
    Call,
    CallEnded,
    EngineLimit,
    Log,
    Outage,
    RunStarted,
    SchedulerConfig,
    SchedulerState,
    Sleep,
    StartCall,
    StatusChanged,
    Woke,
    initial_state,
    step,
)
from autodev_core.scheduler._build import (
    new_call,
    new_call_ended,
    new_engine_limit,
    new_log,
    new_outage,
    new_sleep,
    new_start_call,
    new_state,
    new_status_changed,
)
from autodev_core.scheduler.state import index_limits
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
    checked = SchedulerState(**fields)
    unchecked = new_state(**fields)
    same(checked, unchecked)
    assert unchecked.limit_index == checked.limit_index  # not compared by `==`: checked here
    assert checked.limit_index.earliest == until  # the one record's reset


@given(config=scheduler_configs(max_team=3), until=instants, now=instants)
def test_27_the_draft_of_a_step_holds_every_field_of_the_state_before(
    config: Any, until: datetime, now: datetime
) -> None:
    """`step`'s draft is filled from the state before by `_Draft.fill`, the one list of the
    fields the scheduler writes (issue 27 item 4): it sets every field, leaves each value as
    it was (but the instant, the step's), and starts the step's scratch empty."""
    import sys

    step_module = sys.modules["autodev_core.scheduler.step"]
    n = len(config.team)
    before = attrs.evolve(
        initial_state(config), status="rate_limited", due=n - 1, failures=3,
        limits=(EngineLimit(engine=config.team[0].primary, until=until),),
        outages=(Outage(provider=config.team[0].provider, retry_at=until),),
        wait_until=until, fresh=False, last_runner=config.team[0].id, iterations=7,
        runtime=timedelta(minutes=5), last_event_at=min(now, until))
    draft = object.__new__(step_module._Draft)
    draft.fill(before, now)
    for field in attrs.fields(SchedulerState):
        value = getattr(draft, field.name)  # an unset slot raises AttributeError
        if field.name == "last_event_at":
            assert value == now
        elif field.name == "_effects":
            assert value == []
        elif field.name == "_limited":
            assert value is None or value is before.limit_index.known_at(now)
        else:
            assert value is getattr(before, field.name), field.name


# -- CallEnded: a hand-written `__init__` (issue 13) against attrs' own, stated here on its own


def _is_instant(_instance: object, attribute: Any, value: Any) -> None:
    if not isinstance(value, datetime) or value.utcoffset() is None:
        raise ValueError(f"{attribute.name} must be an aware datetime")


def _in_utc(value: Any) -> Any:
    if isinstance(value, datetime) and value.utcoffset() is not None:
        return value.astimezone(UTC)
    return value


def _participant(_instance: object, attribute: Any, value: Any) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{attribute.name} must be a str")
    if not value:
        raise ValueError(f"{attribute.name} cannot be empty")


def _optional_int(_instance: object, attribute: Any, value: Any) -> None:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
        raise TypeError(f"{attribute.name} must be an int")


@attrs.frozen
class ReferenceCallEnded:
    """What CallEnded is, as attrs would build it with one validator per field, then the rules
    of how the fields fit together (A2-A4, A17, A26, A28, A31, A32)."""

    now: datetime = attrs.field(converter=_in_utc, validator=_is_instant)
    participant: str = attrs.field(validator=_participant)
    engine: Engine = attrs.field(validator=attrs.validators.instance_of(Engine))
    kind: str = attrs.field(validator=attrs.validators.in_(
        ("post", "limit", "network", "login", "exit", "timeout", "empty")))
    posted: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))
    limit: LimitNotice | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.instance_of(
            LimitNotice)))
    exit_code: int | None = attrs.field(default=None, validator=_optional_int)
    usage: UsageReading | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.instance_of(
            UsageReading)))

    def __attrs_post_init__(self) -> None:
        if (self.kind == "limit") != (self.limit is not None):
            raise ValueError("a limit notice exactly when the kind is limit")
        if self.limit is not None and self.limit.provider != self.engine.provider:
            raise ValueError("the notice's provider is the engine's")
        if self.kind == "post" and not self.posted:
            raise ValueError("a post posted")
        if self.posted and self.kind not in ("post", "limit"):
            raise ValueError("posted only in a post or a limit")
        if self.kind == "exit" and not self.exit_code:
            raise ValueError("an exit has a non-zero code")
        # Issue 25: a usage reading is the engine's own, and comes with a healthy call only.
        if self.usage is not None and self.usage.provider != self.engine.provider:
            raise ValueError("the reading's provider is the engine's")
        if self.usage is not None and self.kind in ("limit", "network", "login"):
            raise ValueError("a reading with a healthy call only")




def _fields(value: Any) -> dict[str, Any]:
    return {f.name: getattr(value, f.name) for f in attrs.fields(type(value))}


def call_fields(wrong_types: bool) -> st.SearchStrategy[dict[str, Any]]:
    """Arguments of a call's end: every combination of kinds and fields (how they fit together),
    and with `wrong_types` also values of the wrong type or zone."""

    def maybe(right: st.SearchStrategy[Any], *wrong: Any) -> st.SearchStrategy[Any]:
        return st.one_of(right, st.sampled_from(wrong)) if wrong_types else right

    return st.fixed_dictionaries(
        {
            "now": st.one_of(
                instants, instants.map(lambda t: t.astimezone(timezone(timedelta(hours=-3))))
            ).flatmap(lambda t: maybe(st.just(t), t.replace(tzinfo=None), t.isoformat())),
            "participant": maybe(names, "", 3, None),
            "engine": maybe(engines, "codex", None),
            "kind": maybe(st.sampled_from(
                ("post", "limit", "network", "login", "exit", "timeout", "empty")), "crash", 1),
        },
        optional={
            "posted": maybe(st.booleans(), "yes", 1, None),
            "limit": st.none() | maybe(
                st.builds(LimitNotice, provider=st.sampled_from(("claude", "codex", "agy")),
                          reset_at=optional_instants, text=st.just("x")),
                "limit"),
            "exit_code": st.none() | maybe(st.integers(-2, 3), True, "1", 1.0),
            "usage": st.none() | maybe(
                st.builds(UsageReading, provider=st.sampled_from(("claude", "codex", "agy")),
                          utilization=st.sampled_from((0.5, 0.97)),
                          window=st.sampled_from(("", "five_hour"))),
                "usage", 0.97),
        },
    )


def agrees_with_the_reference(fields: dict[str, Any]) -> None:
    """CallEnded(**fields) refuses what the reference refuses, with the same exception type,
    and otherwise builds the value the reference builds."""
    try:
        reference = ReferenceCallEnded(**fields)
    except (TypeError, ValueError) as refused:
        with pytest.raises(type(refused)):
            CallEnded(**fields)
        return
    built = CallEnded(**fields)
    assert type(built) is CallEnded
    assert _fields(built) == _fields(reference)
    assert repr(built) == repr(reference).replace("ReferenceCallEnded(", "CallEnded(", 1)
    assert built.now.tzinfo is UTC
    same(built, new_call_ended(**_fields(built)))
    same(built, CallEnded(*_fields(built).values()))  # positionally too
    same(built, copy.copy(built))
    same(built, pickle.loads(pickle.dumps(built)))
    same(built, attrs.evolve(built))
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        built.kind = "post"  # type: ignore[misc]


@given(fields=call_fields(wrong_types=False) | call_fields(wrong_types=True))
# Issue 25 (seed 13): a reading of the wrong type is a TypeError before any rule of how the
# fields fit together, as attrs checks every field before `__attrs_post_init__`.
@example(fields={"now": T0, "participant": "a", "engine": Engine("claude"), "kind": "limit",
                 "usage": "usage"})
@example(fields={"now": T0, "participant": "a", "engine": Engine("claude"), "kind": "post",
                 "usage": "usage"})
def test_CallEnded_builds_and_refuses_exactly_what_a_checked_attrs_class_would(
    fields: dict[str, Any],
) -> None:
    agrees_with_the_reference(fields)


CODEX_NOTICE = LimitNotice(provider="codex", reset_at=None, text="limit")
CLAUDE_NOTICE = LimitNotice(provider="claude", reset_at=None, text="limit")


CODEX_READING = UsageReading(provider="codex", utilization=0.97, window="five_hour")
CLAUDE_READING = UsageReading(provider="claude", utilization=0.97, window="five_hour")


def test_CallEnded_agrees_on_every_combination_of_kind_posted_limit_and_exit_code() -> None:
    for kind, posted, limit, exit_code, usage in itertools.product(
        ("post", "limit", "network", "login", "exit", "timeout", "empty"),
        (False, True),
        (None, CODEX_NOTICE, CLAUDE_NOTICE),
        (None, 0, 1, -1),
        (None, CODEX_READING, CLAUDE_READING),  # issue 25
    ):
        agrees_with_the_reference({"now": T0, "participant": "rui", "engine": Engine("codex"),
                                   "kind": kind, "posted": posted, "limit": limit,
                                   "exit_code": exit_code, "usage": usage})


@pytest.mark.parametrize(
    "wrong",
    [
        {"now": datetime(2026, 12, 1, 9)}, {"now": "2026-12-01T09:00:00+00:00"}, {"now": None},
        {"participant": ""}, {"participant": 3}, {"participant": None},
        {"engine": "codex"}, {"engine": None},
        {"kind": "crash"}, {"kind": None},
        {"posted": "yes"}, {"posted": 1}, {"posted": None},
        {"limit": "limit", "kind": "limit"},
        {"exit_code": True}, {"exit_code": "1"}, {"exit_code": 1.0},
    ],
)
def test_CallEnded_refuses_each_wrong_field_as_the_reference_does(wrong: dict[str, Any]) -> None:
    fields: dict[str, Any] = {"now": T0, "participant": "rui", "engine": Engine("codex"),
                              "kind": "exit", "exit_code": 2}
    fields.update(wrong)
    agrees_with_the_reference(fields)
    with pytest.raises((TypeError, ValueError)):
        CallEnded(**fields)




# -- the limit registry read by engine number (issue 13), carried in the state


def _a_run(seed: int, config: SchedulerConfig, steps: int) -> list[tuple[Any, Any]]:
    """The (state, event) pairs of a run under random limits, outages and failures."""
    rng = random.Random(seed)
    state = initial_state(config)
    now = T0
    pairs: list[tuple[Any, Any]] = []
    event: Any = RunStarted(now=now)
    while len(pairs) < steps:
        pairs.append((state, event))
        state, _ = step(state, event)
        if state.call is not None:
            now += timedelta(minutes=rng.randint(1, 90))
            call = state.call
            roll = rng.random()
            common: dict[str, Any] = {
                "now": now, "participant": call.participant, "engine": call.engine}
            if roll < 0.4:
                reset = rng.choice((None, now + timedelta(minutes=rng.randint(1, 240))))
                event = CallEnded(**common, kind="limit", posted=rng.random() < 0.3,
                                  limit=LimitNotice(call.engine.provider, reset, "x"))
            elif roll < 0.5:
                event = CallEnded(**common, kind="network")
            elif roll < 0.55:
                event = CallEnded(**common, kind="exit", exit_code=2)
            else:
                event = CallEnded(**common, kind="post", posted=True)
        elif state.wait_until is not None:
            now = max(now, state.wait_until) if rng.random() < 0.8 else now
            event = Woke(now=now)
        else:
            break
    return pairs


@given(seed=st.integers(0, 2**32), config=scheduler_configs(max_team=4))
def test_steps_of_one_run_taken_in_any_order_decide_as_in_order(
    seed: int, config: SchedulerConfig
) -> None:
    """States of one run share their registry's reading (`LimitIndex`) while the registry is
    unchanged, with its cache of which engines are limited until the next reset: stepping the
    run's states out of order, back in time as well, must decide exactly as in order."""
    pairs = _a_run(seed, config, 40)
    in_order = [step(state, event) for state, event in pairs]
    order = list(range(len(pairs)))
    random.Random(seed).shuffle(order)
    for index in order:
        state, event = pairs[index]
        after, effects = step(state, event)
        assert (after, effects) == in_order[index]
        # the registry read by number, carried in the state, is the registry's own reading
        assert after.limit_index == index_limits(config, after.limits)
    for (state, _), (after, _) in zip(pairs[1:], in_order, strict=False):
        assert state == after  # and in order, each step led to the next recorded state


def test_a_twin_is_its_class_with_nothing_added_and_one_that_cannot_be_is_refused() -> None:
    """autodev_core/_twins.py: a twin is generated from its class (so it holds exactly its
    fields and a builder that fills them all makes the checked value), and a class with a
    `__weakref__` slot (not `weakref_slot=False`) is refused at import."""
    from autodev_core._twins import twin_of

    @attrs.frozen(weakref_slot=False)
    class Pair:
        a: int
        b: int

    @attrs.frozen
    class WithWeakref:
        a: int
        b: int

    twin = twin_of(Pair)
    assert twin.__mro__[1] is Pair and twin.__slots__ == ()  # its class, no slot added
    made = object.__new__(twin)
    made.a, made.b = 1, 2  # plain assignment: the twin is writable
    made.__class__ = Pair
    same(Pair(1, 2), made)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        made.a = 3  # made the frozen class, it is frozen again
    with pytest.raises(ImportError, match="WithWeakref needs weakref_slot=False"):
        twin_of(WithWeakref)
