"""Builders for the values `step` derives itself, without attrs' checks (issue 13).

"An illegal value cannot exist" is kept at the boundary: every event and config a caller builds
is validated when it is built (events.py, state.py), and a state a caller builds is checked by
`SchedulerState`. Inside a step every effect and every piece of the new state is made from such
a validated event and the validated state — a `now` that is already an aware UTC instant, an
engine of the team, a status or log kind the code names literally — so re-checking them at every
step only cost time. These builders set exactly the fields the attrs `__init__` sets, so what
they build is equal to, hashes and reprs as the checked value built from the same arguments;
tests/core/test_scheduler_builders.py holds them to it, and the scheduler's state machine rebuilds
every derived value through the checked constructors after every step.

How: each class here has a twin generated from it (`_twins.twin_of`): a subclass that adds no
slot and writes by plain assignment, made an instance of the frozen class by setting its
`__class__` once every field is filled. Generated from the class, a twin cannot fall out of
step with its fields.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Final

from .._twins import twin_of
from ..detection.classification import LimitNotice, UsageReading
from ..engine import Engine
from .effects import Log, LogKind, Sleep, StartCall, Status, StatusChanged, TurnKind
from .events import CallEnded, CallKind, Woke, _CallEndedTwin
from .limited import index_limits
from .state import (
    Call,
    EngineLimit,
    EngineUsage,
    Outage,
    SchedulerConfig,
    SchedulerState,
)

_new = object.__new__



def new_call_ended(
    now: datetime,
    participant: str,
    engine: Engine,
    kind: CallKind,
    posted: bool = False,
    limit: LimitNotice | None = None,
    exit_code: int | None = None,
    usage: UsageReading | None = None,
) -> CallEnded:
    """A `CallEnded` made from the fields of one already checked (e.g. the same call ended at
    another instant, `now` an aware UTC datetime): the value `CallEnded(...)` builds from the
    same arguments, without its checks."""
    event = _new(_CallEndedTwin)
    event.now = now
    event.participant = participant
    event.engine = engine
    event.kind = kind
    event.posted = posted
    event.limit = limit
    event.exit_code = exit_code
    event.usage = usage
    event.__class__ = CallEnded
    return event  # type: ignore[no-any-return]


_WOKE: Final[Any] = twin_of(Woke)


def new_woke(now: datetime) -> Woke:
    """`Woke(now)` for an instant already held as an aware UTC datetime (the `until` of a
    `Sleep` the core planned), without its checks."""
    event = _new(_WOKE)
    event.now = now
    event.__class__ = Woke
    return event  # type: ignore[no-any-return]


_LOG: Final[Any] = twin_of(Log)


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
    log = _new(_LOG)
    log.at = at
    log.message = message
    log.kind = kind
    log.participant = participant
    log.engine = engine
    log.provider = provider
    log.target = target
    log.colleague = colleague
    log.until = until
    log.count = count
    log.failure = failure
    log.__class__ = Log
    return log  # type: ignore[no-any-return]


_START_CALL: Final[Any] = twin_of(StartCall)


def new_start_call(
    at: datetime,
    participant: str,
    engine: Engine,
    model: str | None,
    turn_kind: TurnKind,
    turn_owner: str,
) -> StartCall:
    effect = _new(_START_CALL)
    effect.at = at
    effect.participant = participant
    effect.engine = engine
    effect.model = model
    effect.turn_kind = turn_kind
    effect.turn_owner = turn_owner
    effect.__class__ = StartCall
    return effect  # type: ignore[no-any-return]


_SLEEP: Final[Any] = twin_of(Sleep)


def new_sleep(until: datetime, status: Status, wakes_on_message: bool) -> Sleep:
    effect = _new(_SLEEP)
    effect.until = until
    effect.status = status
    effect.wakes_on_message = wakes_on_message
    effect.__class__ = Sleep
    return effect  # type: ignore[no-any-return]


_STATUS_CHANGED: Final[Any] = twin_of(StatusChanged)


def new_status_changed(at: datetime, status: Status) -> StatusChanged:
    effect = _new(_STATUS_CHANGED)
    effect.at = at
    effect.status = status
    effect.__class__ = StatusChanged
    return effect  # type: ignore[no-any-return]


_CALL: Final[Any] = twin_of(Call)


def new_call(
    participant: str, engine: Engine, started_at: datetime, turn_owner: str, approved: bool
) -> Call:
    call = _new(_CALL)
    call.participant = participant
    call.engine = engine
    call.started_at = started_at
    call.turn_owner = turn_owner
    call.approved = approved
    call.__class__ = Call
    return call  # type: ignore[no-any-return]


_ENGINE_LIMIT: Final[Any] = twin_of(EngineLimit)


def new_engine_limit(
    engine: Engine, until: datetime, read: bool, seen: datetime | None, source: str
) -> EngineLimit:
    record = _new(_ENGINE_LIMIT)
    record.engine = engine
    record.until = until
    record.read = read
    record.seen = seen
    record.source = source
    record.__class__ = EngineLimit
    return record  # type: ignore[no-any-return]


_ENGINE_USAGE: Final[Any] = twin_of(EngineUsage)


def new_engine_usage(
    engine: Engine,
    utilization: float,
    window: str,
    until: datetime,
    read: bool,
    seen: datetime | None,
    source: str,
    threshold: float | None,
) -> EngineUsage:
    record = _new(_ENGINE_USAGE)
    record.engine = engine
    record.utilization = utilization
    record.window = window
    record.until = until
    record.read = read
    record.seen = seen
    record.source = source
    record.threshold = threshold
    record.__class__ = EngineUsage
    return record  # type: ignore[no-any-return]


_OUTAGE: Final[Any] = twin_of(Outage)


def new_outage(provider: str, retry_at: datetime, attempts: int) -> Outage:
    record = _new(_OUTAGE)
    record.provider = provider
    record.retry_at = retry_at
    record.attempts = attempts
    record.__class__ = Outage
    return record  # type: ignore[no-any-return]


_STATE: Final[Any] = twin_of(SchedulerState)


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
    readings: tuple[EngineUsage, ...] = (),
) -> SchedulerState:
    state = _new(_STATE)
    state.config = config
    state.status = status
    state.due = due
    state.approved = approved
    state.gates = gates
    state.limits = limits
    state.outages = outages
    state.failures = failures
    state.empties = empties
    state.seats = seats
    state.passed = passed
    state.call = call
    state.wait_until = wait_until
    state.fresh = fresh
    state.last_runner = last_runner
    state.iterations = iterations
    state.runtime = runtime
    state.last_event_at = last_event_at
    state.readings = readings
    state.limit_index = index_limits(config, limits)
    state._effects = None
    state._limited = None
    state.__class__ = SchedulerState
    return state  # type: ignore[no-any-return]
