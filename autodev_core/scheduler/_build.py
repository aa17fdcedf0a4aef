"""Builders for the values `step` derives itself, without attrs' checks (issue 13).

"An illegal value cannot exist" is kept at the boundary: every event and config a caller builds
is validated when it is built (events.py, state.py), and a state a caller builds is checked by
`SchedulerState`. Inside a step every effect and every piece of the new state is made from such
a validated event and the validated state — a `now` that is already an aware UTC instant, an
engine of the team, a status or log kind the code names literally — so re-checking them at every
step only cost time (a sixth of a step). These builders set exactly the fields the attrs
`__init__` sets, in the same slots, so what they build is equal to, hashes and reprs as the
checked value built from the same arguments; tests/test_scheduler_builders.py holds them to it.

Each builder lists its class's fields by name; the import fails if the class ever gains, loses
or reorders a field, so a builder cannot silently leave a slot unset.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import attrs

from ..engine import Engine
from .effects import Log, LogKind, Sleep, StartCall, Status, StatusChanged, TurnKind
from .state import Call, EngineLimit, Outage, SchedulerConfig, SchedulerState

_new = object.__new__
Setter = Callable[[Any, Any], None]


def _setters(cls: type, names: tuple[str, ...]) -> tuple[Setter, ...]:
    """The slot setters of `cls`'s fields, which must be exactly `names`, in order."""
    fields = tuple(a.name for a in attrs.fields(cls))
    if fields != names:  # pragma: no cover - a class changed under its builder
        raise ImportError(f"{cls.__name__}'s fields are {fields}: update its builder in _build.py")
    return tuple(cls.__dict__[name].__set__ for name in names)


(_log_at, _log_message, _log_kind, _log_participant, _log_engine, _log_provider, _log_target,
 _log_colleague, _log_until, _log_count, _log_failure) = _setters(Log, (
    "at", "message", "kind", "participant", "engine", "provider", "target", "colleague",
    "until", "count", "failure"))


def new_log(
    at: datetime,
    message: str,
    kind: LogKind,
    participant: str | None = None,
    engine: Engine | None = None,
    provider: str | None = None,
    target: Engine | None = None,
    colleague: str | None = None,
    until: datetime | None = None,
    count: int | None = None,
    failure: str | None = None,
) -> Log:
    log: Log = _new(Log)
    _log_at(log, at)
    _log_message(log, message)
    _log_kind(log, kind)
    _log_participant(log, participant)
    _log_engine(log, engine)
    _log_provider(log, provider)
    _log_target(log, target)
    _log_colleague(log, colleague)
    _log_until(log, until)
    _log_count(log, count)
    _log_failure(log, failure)
    return log


(_start_at, _start_participant, _start_engine, _start_model, _start_turn_kind,
 _start_turn_owner) = _setters(StartCall, (
    "at", "participant", "engine", "model", "turn_kind", "turn_owner"))


def new_start_call(
    at: datetime,
    participant: str,
    engine: Engine,
    model: str | None,
    turn_kind: TurnKind,
    turn_owner: str,
) -> StartCall:
    effect: StartCall = _new(StartCall)
    _start_at(effect, at)
    _start_participant(effect, participant)
    _start_engine(effect, engine)
    _start_model(effect, model)
    _start_turn_kind(effect, turn_kind)
    _start_turn_owner(effect, turn_owner)
    return effect


_sleep_until, _sleep_status, _sleep_wakes = _setters(
    Sleep, ("until", "status", "wakes_on_message"))


def new_sleep(until: datetime, status: Status, wakes_on_message: bool) -> Sleep:
    effect: Sleep = _new(Sleep)
    _sleep_until(effect, until)
    _sleep_status(effect, status)
    _sleep_wakes(effect, wakes_on_message)
    return effect


_changed_at, _changed_status = _setters(StatusChanged, ("at", "status"))


def new_status_changed(at: datetime, status: Status) -> StatusChanged:
    effect: StatusChanged = _new(StatusChanged)
    _changed_at(effect, at)
    _changed_status(effect, status)
    return effect


(_call_participant, _call_engine, _call_started_at, _call_turn_owner,
 _call_approved) = _setters(Call, ("participant", "engine", "started_at", "turn_owner",
                                   "approved"))


def new_call(
    participant: str, engine: Engine, started_at: datetime, turn_owner: str, approved: bool
) -> Call:
    call: Call = _new(Call)
    _call_participant(call, participant)
    _call_engine(call, engine)
    _call_started_at(call, started_at)
    _call_turn_owner(call, turn_owner)
    _call_approved(call, approved)
    return call


_limit_engine, _limit_until, _limit_read, _limit_seen, _limit_source = _setters(
    EngineLimit, ("engine", "until", "read", "seen", "source"))


def new_engine_limit(
    engine: Engine, until: datetime, read: bool, seen: datetime | None, source: str
) -> EngineLimit:
    record: EngineLimit = _new(EngineLimit)
    _limit_engine(record, engine)
    _limit_until(record, until)
    _limit_read(record, read)
    _limit_seen(record, seen)
    _limit_source(record, source)
    return record


_outage_provider, _outage_retry_at, _outage_attempts = _setters(
    Outage, ("provider", "retry_at", "attempts"))


def new_outage(provider: str, retry_at: datetime, attempts: int) -> Outage:
    record: Outage = _new(Outage)
    _outage_provider(record, provider)
    _outage_retry_at(record, retry_at)
    _outage_attempts(record, attempts)
    return record


(_s_config, _s_status, _s_due, _s_approved, _s_gates, _s_limits, _s_outages, _s_failures,
 _s_empties, _s_seats, _s_passed, _s_call, _s_wait_until, _s_fresh, _s_last_runner,
 _s_iterations, _s_runtime, _s_last_event_at) = _setters(SchedulerState, (
    "config", "status", "due", "approved", "gates", "limits", "outages", "failures", "empties",
    "seats", "passed", "call", "wait_until", "fresh", "last_runner", "iterations", "runtime",
    "last_event_at"))


def new_state(
    config: SchedulerConfig,
    status: Status,
    due: int,
    approved: str | None,
    gates: frozenset[str],
    limits: tuple[EngineLimit, ...],
    outages: tuple[Outage, ...],
    failures: int,
    empties: tuple[int, ...],
    seats: tuple[int, ...],
    passed: tuple[int, ...],
    call: Call | None,
    wait_until: datetime | None,
    fresh: bool,
    last_runner: str | None,
    iterations: int,
    runtime: timedelta,
    last_event_at: datetime | None,
) -> SchedulerState:
    state: SchedulerState = _new(SchedulerState)
    _s_config(state, config)
    _s_status(state, status)
    _s_due(state, due)
    _s_approved(state, approved)
    _s_gates(state, gates)
    _s_limits(state, limits)
    _s_outages(state, outages)
    _s_failures(state, failures)
    _s_empties(state, empties)
    _s_seats(state, seats)
    _s_passed(state, passed)
    _s_call(state, call)
    _s_wait_until(state, wait_until)
    _s_fresh(state, fresh)
    _s_last_runner(state, last_runner)
    _s_iterations(state, iterations)
    _s_runtime(state, runtime)
    _s_last_event_at(state, last_event_at)
    return state
