"""Builders for the values `step` derives itself, without attrs' checks (issue 13).

"An illegal value cannot exist" is kept at the boundary: every event and config a caller builds
is validated when it is built (events.py, state.py), and a state a caller builds is checked by
`SchedulerState`. Inside a step every effect and every piece of the new state is made from such
a validated event and the validated state — a `now` that is already an aware UTC instant, an
engine of the team, a status or log kind the code names literally — so re-checking them at every
step only cost time. These builders set exactly the fields the attrs `__init__` sets, so what
they build is equal to, hashes and reprs as the checked value built from the same arguments;
tests/test_scheduler_builders.py holds them to it, and the scheduler's state machine rebuilds
every derived value through the checked constructors after every step.

How: each class here has a twin (`autodev_core/_twins.py`): a class with the same slots and no
`__setattr__` of its own, filled by plain assignment and then made an instance of the frozen
class by setting its `__class__`. The import fails if a class and its twin ever stop matching,
so a builder cannot leave a slot unset.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from .._twins import check_twin
from ..detection.classification import LimitNotice
from ..engine import Engine
from .effects import Log, LogKind, Sleep, StartCall, Status, StatusChanged, TurnKind
from .events import CallEnded, CallKind, Woke, _CallEndedSlots
from .state import (
    Call,
    EngineLimit,
    LimitIndex,
    Outage,
    SchedulerConfig,
    SchedulerState,
    index_limits,
)

_new = object.__new__


def _twin(cls: type, twin: type) -> None:
    check_twin(cls, twin, "scheduler/_build.py")


_twin(CallEnded, _CallEndedSlots)  # CallEnded's own `__init__` fills it through its twin


def new_call_ended(
    now: datetime,
    participant: str,
    engine: Engine,
    kind: CallKind,
    posted: bool = False,
    limit: LimitNotice | None = None,
    exit_code: int | None = None,
) -> CallEnded:
    """A `CallEnded` made from the fields of one already checked (e.g. the same call ended at
    another instant, `now` an aware UTC datetime): the value `CallEnded(...)` builds from the
    same arguments, without its checks."""
    event = _new(_CallEndedSlots)
    event.now = now
    event.participant = participant
    event.engine = engine
    event.kind = kind
    event.posted = posted
    event.limit = limit
    event.exit_code = exit_code
    event.__class__ = CallEnded  # type: ignore[assignment]
    return event  # type: ignore[return-value]


class _WokeSlots:
    __slots__ = ("now",)
    now: datetime


_twin(Woke, _WokeSlots)


def new_woke(now: datetime) -> Woke:
    """`Woke(now)` for an instant already held as an aware UTC datetime (the `until` of a
    `Sleep` the core planned), without its checks."""
    event = _new(_WokeSlots)
    event.now = now
    event.__class__ = Woke  # type: ignore[assignment]
    return event  # type: ignore[return-value]


class _LogSlots:
    __slots__ = (  # noqa: RUF023 - in field order: the frozen class's layout
        "at", "message", "kind", "participant", "engine", "provider", "target",
        "colleague", "until", "count", "failure")
    at: datetime
    message: str
    kind: LogKind
    participant: str | None
    engine: Engine | None
    provider: str | None
    target: Engine | None
    colleague: str | None
    until: datetime | None
    count: int | None
    failure: str | None


_twin(Log, _LogSlots)


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
    log = _new(_LogSlots)
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
    log.__class__ = Log  # type: ignore[assignment]
    return log  # type: ignore[return-value]


class _StartCallSlots:
    __slots__ = (  # noqa: RUF023 - in field order: the frozen class's layout
        "at", "participant", "engine", "model", "turn_kind", "turn_owner")
    at: datetime
    participant: str
    engine: Engine
    model: str | None
    turn_kind: TurnKind
    turn_owner: str


_twin(StartCall, _StartCallSlots)


def new_start_call(
    at: datetime,
    participant: str,
    engine: Engine,
    model: str | None,
    turn_kind: TurnKind,
    turn_owner: str,
) -> StartCall:
    effect = _new(_StartCallSlots)
    effect.at = at
    effect.participant = participant
    effect.engine = engine
    effect.model = model
    effect.turn_kind = turn_kind
    effect.turn_owner = turn_owner
    effect.__class__ = StartCall  # type: ignore[assignment]
    return effect  # type: ignore[return-value]


class _SleepSlots:
    __slots__ = (  # noqa: RUF023 - in field order: the frozen class's layout
        "until", "status", "wakes_on_message")
    until: datetime
    status: Status
    wakes_on_message: bool


_twin(Sleep, _SleepSlots)


def new_sleep(until: datetime, status: Status, wakes_on_message: bool) -> Sleep:
    effect = _new(_SleepSlots)
    effect.until = until
    effect.status = status
    effect.wakes_on_message = wakes_on_message
    effect.__class__ = Sleep  # type: ignore[assignment]
    return effect  # type: ignore[return-value]


class _StatusChangedSlots:
    __slots__ = ("at", "status")
    at: datetime
    status: Status


_twin(StatusChanged, _StatusChangedSlots)


def new_status_changed(at: datetime, status: Status) -> StatusChanged:
    effect = _new(_StatusChangedSlots)
    effect.at = at
    effect.status = status
    effect.__class__ = StatusChanged  # type: ignore[assignment]
    return effect  # type: ignore[return-value]


class _CallSlots:
    __slots__ = (  # noqa: RUF023 - in field order: the frozen class's layout
        "participant", "engine", "started_at", "turn_owner", "approved")
    participant: str
    engine: Engine
    started_at: datetime
    turn_owner: str
    approved: bool


_twin(Call, _CallSlots)


def new_call(
    participant: str, engine: Engine, started_at: datetime, turn_owner: str, approved: bool
) -> Call:
    call = _new(_CallSlots)
    call.participant = participant
    call.engine = engine
    call.started_at = started_at
    call.turn_owner = turn_owner
    call.approved = approved
    call.__class__ = Call  # type: ignore[assignment]
    return call  # type: ignore[return-value]


class _EngineLimitSlots:
    __slots__ = (  # noqa: RUF023 - in field order: the frozen class's layout
        "engine", "until", "read", "seen", "source")
    engine: Engine
    until: datetime
    read: bool
    seen: datetime | None
    source: str


_twin(EngineLimit, _EngineLimitSlots)


def new_engine_limit(
    engine: Engine, until: datetime, read: bool, seen: datetime | None, source: str
) -> EngineLimit:
    record = _new(_EngineLimitSlots)
    record.engine = engine
    record.until = until
    record.read = read
    record.seen = seen
    record.source = source
    record.__class__ = EngineLimit  # type: ignore[assignment]
    return record  # type: ignore[return-value]


class _OutageSlots:
    __slots__ = (  # noqa: RUF023 - in field order: the frozen class's layout
        "provider", "retry_at", "attempts")
    provider: str
    retry_at: datetime
    attempts: int


_twin(Outage, _OutageSlots)


def new_outage(provider: str, retry_at: datetime, attempts: int) -> Outage:
    record = _new(_OutageSlots)
    record.provider = provider
    record.retry_at = retry_at
    record.attempts = attempts
    record.__class__ = Outage  # type: ignore[assignment]
    return record  # type: ignore[return-value]


class StateSlots:
    """SchedulerState's slots, mutable: `step` fills one from its draft, then `freeze`s it."""

    __slots__ = (  # noqa: RUF023 - in field order: the frozen class's layout
        "config", "status", "due", "approved", "gates", "limits", "outages",
        "failures", "empties", "seats", "passed", "call", "wait_until", "fresh",
        "last_runner", "iterations", "runtime", "last_event_at", "limit_index", "_effects",
        "_limited")
    config: SchedulerConfig
    status: Status
    due: int
    approved: str | None
    gates: frozenset[str]
    limits: tuple[EngineLimit, ...]
    outages: tuple[Outage, ...]
    failures: int
    empties: tuple[int, ...]
    seats: tuple[int, ...]
    passed: tuple[int, ...]
    call: Call | None
    wait_until: datetime | None
    fresh: bool
    last_runner: str | None
    iterations: int
    runtime: timedelta
    last_event_at: datetime | None
    limit_index: LimitIndex
    _effects: None
    _limited: None


_twin(SchedulerState, StateSlots)


def freeze_state(state: StateSlots) -> SchedulerState:
    """`state`, every slot filled, made the SchedulerState it holds."""
    state.__class__ = SchedulerState  # type: ignore[assignment]
    return state  # type: ignore[return-value]


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
    state = _new(StateSlots)
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
    state.limit_index = index_limits(config, limits)
    state._effects = None
    state._limited = None
    return freeze_state(state)
