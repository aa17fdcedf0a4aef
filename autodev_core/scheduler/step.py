"""The turn scheduler: the ONE place where the run's transitions are decided (SPEC A8-A43).

Everything that affects a transition lives in this module, as h11's `_state.py` does for HTTP.
`step(state, event) -> (state, effects)` is a pure reducer: time is the event's `now`, the next
deadline is reported in a `Sleep` effect (and by `next_deadline`), and log lines are `Log`
effects built by `logs`. `TRANSITIONS` is the table of what each event may do in each status
(h2's style); an event outside it is a caller's mistake and raises `SchedulerProtocolError`;
the diagram in docs/scheduler.md is generated from it (`diagram.py`).

Inside one step the new state is made in place: a `_Draft` (a twin of `SchedulerState`, see
`_twins.py`) is filled once from the state before, changed by the handlers, and becomes the
frozen new state by setting its class, which keeps the hot path cheap.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

from ..detection.classification import UsageReading
from ..engine import Engine
from ..errors import AutodevError
from ..names import STATUSES, WAIT_STATUSES
from . import logs
from ._build import (
    new_call,
    new_engine_limit,
    new_engine_usage,
    new_log,
    new_outage,
    new_sleep,
    new_start_call,
    new_status_changed,
)
from .effects import Effect, Status, TurnKind
from .events import (
    EVENT_TYPES,
    CallCancelled,
    CallEnded,
    Event,
    GateApproved,
    GateRequested,
    LimitObserved,
    MessageArrived,
    PauseRequested,
    ResumeRequested,
    RunStarted,
    StopRequested,
    UsageObserved,
    Woke,
)
from .limited import Limited, LimitIndex, comes_back, index_limits
from .registry import merge_limit, merge_usage
from .state import (
    EngineLimit,
    EngineUsage,
    SchedulerState,
)


class SchedulerProtocolError(AutodevError):
    """The caller fed `step` an event that makes no sense now (h11's LocalProtocolError):
    a `CallEnded` with no call in flight, for another call, `RunStarted` on a live run, or an
    event whose `now` is earlier than the last event's (time never goes backwards, A38).

    A value that is not an event at all is a `TypeError` instead."""


_new = object.__new__


if TYPE_CHECKING:  # the draft's own fields are typed below (`limit_index` may be None)
    _StateTwin = object
else:
    _StateTwin = SchedulerState


class _Draft(_StateTwin):
    """The state one step makes, mutable while it runs: a twin of SchedulerState (a subclass
    adding no slot, writable: `_twins.twin_of`) filled from the state before (`fill`), changed
    in place by the handlers, then made a SchedulerState by setting its `__class__` (no second
    copy of the fields). Its instant is `last_event_at`; `limit_index` is None while `limits`
    changed and was not read again; `_effects` collects what the shell must do, and `_limited`
    which engines are limited at the step's instant (None: not worked out yet)."""

    __slots__ = ()
    __setattr__ = object.__setattr__
    __delattr__ = object.__delattr__

    def fill(self, state: SchedulerState, now: datetime) -> None:
        """Every field of `state`, at the instant `now`: the one list of them the scheduler
        writes (the type checker reads the draft's writable fields from it, too);
        tests/core/test_scheduler_builders.py checks it leaves none unset."""
        self.config = state.config
        self.status = state.status
        self.due = state.due
        self.approved = state.approved
        self.gates = state.gates
        self.limits = state.limits
        self.outages = state.outages
        self.failures = state.failures
        self.empties = state.empties
        self.seats = state.seats
        self.passed = state.passed
        self.call = state.call
        self.wait_until = state.wait_until
        self.fresh = state.fresh
        self.last_runner = state.last_runner
        self.iterations = state.iterations
        self.runtime = state.runtime
        self.last_event_at = now
        self.readings = state.readings
        index = state.limit_index
        self.limit_index: LimitIndex | None = index
        self._effects: list[Effect] = []
        valid = index.valid  # the engines limited at an earlier step, if no reset passed since
        self._limited: Limited | None = (
            valid[2] if valid is not None and valid[0] <= now < valid[1] else None)

    # -- small helpers ----------------------------------------------------------------------

    def clock(self, at: datetime) -> str:
        """`<time>` of `at` in a line written at the step's instant (logs.clock)."""
        zone = self.config.zone
        return logs.local_clock(at.astimezone(zone), self.last_event_at.astimezone(zone).date())

    def set_status(self, now: datetime, status: Status) -> None:
        if status != self.status:
            self.status = status
            self._effects.append(new_status_changed(now, status))

    def in_force(self) -> Limited:
        """The engines limited now (`Limited`: their numbers, `config.engine_numbers`, a bit
        each, and what follows for the lanes): THE statement of the limit test (A8; A38: a
        reset at `t` has passed when `now >= t`), worked out once per step and again only when
        the registry changes."""
        index = self.limit_index
        if index is None:
            index = self.limit_index = index_limits(self.config, self.limits)
        limited = self._limited = index.at(self.config, self.last_event_at)
        return limited

    def limit_of(self, engine: Engine) -> datetime | None:
        """When `engine`, an engine of the team's lanes, comes back if it is limited now."""
        limited = self._limited or self.in_force()
        return self.limit_index.back_at(  # type: ignore[union-attr]  # read by in_force
            limited, self.config.engine_numbers[(engine.provider, engine.model)])

    def outage_of(self, provider: str) -> datetime | None:
        """When `provider` is tried again, if it is known down now (A26, A36; A38)."""
        for record in self.outages:
            if record.provider == provider:
                retry_at = record.retry_at
                return retry_at if retry_at > self.last_event_at else None
        return None

    def earliest_free(self, runner: int) -> int | None:
        """A23/A24: the first lane entry of `runner` that is neither limited nor unreachable."""
        outages = self.outages
        if not self.limits and not outages:
            return 0  # the common case, kept cheap: nothing is out
        limited = self._limited or self.in_force()
        if not outages:
            return limited.free_entry[runner]
        lane = self.config.lanes[runner]
        for position in limited.free_entries[runner]:
            if self.outage_of(lane[position].provider) is None:
                return position
        return None




def _replace(values: tuple[Any, ...], index: int, value: Any) -> tuple[Any, ...]:
    return (*values[:index], value, *values[index + 1 :])


# ------------------------------------------------------------------------------------------------
# What was learned (A39: written before what is decided)


def _merge_limit(
    d: _Draft, now: datetime, observed: EngineLimit
) -> tuple[EngineLimit | None, EngineLimit]:
    """Join `observed` to the registry (registry.py's rule): the engine's record before, after.
    The registry stays sorted by engine name (`str(engine)`: the provider, then the model)."""
    engine = observed.engine
    name = engine._name  # `str(engine)`, without the call
    limits = d.limits
    record: EngineLimit | None = None
    at = 0  # where the engine's record is, or goes
    for existing in limits:  # names compared: cheaper than Engine.__eq__ and its order
        other = existing.engine._name
        if other >= name:
            if other == name:
                record = existing
            break
        at += 1
    merged = merge_limit(record, observed, now)
    if merged is not record:
        d.limits = (*limits[:at], merged, *limits[at + (record is not None):])
        index = d.limit_index
        if index is None:
            d._limited = None
        else:  # the registry's reading follows the one record that changed
            d.limit_index, d._limited = index.with_reset(
                d.config, d.config.engine_numbers.get((engine.provider, engine.model)),
                None if record is None else record.until, merged.until, now)
    return record, merged


def _record_limit(d: _Draft, now: datetime, engine: Engine, reset_at: datetime | None) -> None:
    """A6/A8: take `engine` out until its reset (or the default wait). A read reset replaces a
    defaulted one even when earlier; otherwise a recorded reset never moves earlier."""
    if reset_at is not None and reset_at > now:
        read = True
        until = reset_at
    else:
        read = False
        until = now + d.config.policy.default_limit_wait(engine.provider)
    _before, merged = _merge_limit(
        d, now, new_engine_limit(engine, until, read, now, "")
    )
    d._effects.append(new_log(
        now, logs.limited_until(engine, d.clock(merged.until)), "limit", engine=engine,
        until=merged.until))


def _observe_limit(d: _Draft, event: LimitObserved) -> bool:
    """Issue 14: join a limit another run saw; written only when it changes the registry."""
    now = event.now
    observed = new_engine_limit(
        event.engine,
        event.until,
        event.read,
        event.seen if event.seen is not None else now,
        event.source,
    )
    record, merged = _merge_limit(d, now, observed)
    if merged == record:
        return False
    if merged.until <= now:
        # An ended limit (A38), kept until the next turn start: nothing to say, also when it
        # ends a defaulted one still in force (a read reset replaces a default, even earlier).
        return True
    d._effects.append(new_log(
        now, logs.limited_elsewhere(event.engine, d.clock(merged.until), merged.source),
        "limit", engine=event.engine, until=merged.until))
    return True


def _record_usage(
    d: _Draft, now: datetime, engine: Engine, reading: UsageReading, seen: datetime, source: str
) -> None:
    """Issue 25: join a usage reading to the engine's record of the same window (claude's
    five-hour and seven-day windows are separate: one at 97 % is not undone by the other at
    40 %), by `registry.merge_usage`: a live reading over one whose window has reset, then the
    newest. With `Policy.headroom` set, a reading
    that puts the engine at or above the threshold when no window of it was is written (what
    was learned, A39). A reading is never a limit: no wait, no lift, no call touched.
    """
    resets_at = reading.resets_at
    until = resets_at if resets_at is not None else (
        seen + d.config.policy.default_limit_wait(engine.provider))  # A6's wait, as for a limit
    observed = new_engine_usage(engine, reading.utilization, reading.window, until,
                                resets_at is not None, seen, source, reading.threshold)
    key = (engine._name, reading.window)
    readings = d.readings
    record: EngineUsage | None = None
    at = 0  # where the window's record is, or goes (sorted by engine name, then window)
    for existing in readings:
        other = (existing.engine._name, existing.window)
        if other >= key:
            if other == key:
                record = existing
            break
        at += 1
    merged = merge_usage(record, observed, now)
    if merged is record:
        return
    headroom = d.config.policy.headroom
    was_near = headroom is not None and engine._name in _near_limit(
        d, now, headroom.hand_over_at)
    d.readings = (*readings[:at], merged, *readings[at + (record is not None):])
    if headroom is None:
        return
    if merged.utilization >= headroom.hand_over_at and now < merged.until and not was_near:
        d._effects.append(new_log(
            now, logs.near_limit(engine, merged.utilization, merged.window,
                                 d.clock(merged.until), merged.source),
            "near-limit", engine=engine, until=merged.until,
            count=logs.percent(merged.utilization)))


def _near_limit(d: _Draft, now: datetime, threshold: float) -> frozenset[str]:
    """Issue 25: the engines (by name) whose last reading is at or above `threshold` of a
    window that has not reset yet (A38: a window ending at `t` has reset when `now >= t`)."""
    return frozenset(
        record.engine._name for record in d.readings
        if record.utilization >= threshold and now < record.until
    )


def _record_outage(d: _Draft, now: datetime, provider: str) -> None:
    """A26/A27: the provider is out for everyone; retried after 1, 2, 4, 8, then every 15 min."""
    attempts = 1
    kept = []
    for record in d.outages:
        if record.provider == provider:
            attempts = record.attempts + 1
        else:
            kept.append(record)
    retry_at = now + d.config.policy.outage_retry_after(attempts)
    kept.append(new_outage(provider, retry_at, attempts))
    kept.sort(key=lambda r: r.provider)
    d.outages = tuple(kept)
    d._effects.append(new_log(
        now, logs.could_not_reach(provider, d.clock(retry_at)), "outage", provider=provider,
        until=retry_at, count=attempts))


def _record_reachable(d: _Draft, now: datetime, provider: str) -> None:
    """A27/A40: any answer proves a provider reachable; its outage ends."""
    if any(record.provider == provider for record in d.outages):
        d.outages = tuple(r for r in d.outages if r.provider != provider)
        d._effects.append(new_log(
            now, logs.reachable_again(provider), "reachable", provider=provider))


def _lift_passed_limits(d: _Draft, now: datetime) -> None:
    """A23: at the start of every turn, limits whose reset has passed are lifted."""
    if d.limits:
        index = d.limit_index
        if index is None:
            index = d.limit_index = index_limits(d.config, d.limits)
        earliest = index.earliest
        if earliest is not None and earliest <= now:
            kept = []
            earliest = None
            for record in d.limits:
                until = record.until
                if until > now:
                    kept.append(record)
                    if earliest is None or until < earliest:
                        earliest = until
            d.limits = tuple(kept)
            d.limit_index = index.lifted(d.config, now, earliest)
            d._limited = None


# ------------------------------------------------------------------------------------------------
# Deciding


def _limits_reached(d: _Draft, now: datetime) -> bool:
    """A30/A43: stop when the calls or the call time allowed are used up (unlimited when unset)."""
    config = d.config
    if config.max_iterations is not None and d.iterations >= config.max_iterations:
        d._effects.append(new_log(
            now, logs.max_iterations_reached(d.iterations), "max-iterations", count=d.iterations))
    elif config.max_runtime is not None and d.runtime >= config.max_runtime:
        d._effects.append(new_log(
            now, logs.max_runtime_reached(config.max_runtime.total_seconds() / 60), "max-runtime",
            count=d.iterations))
    else:
        return False
    d.wait_until = None
    d.set_status(now, "stopped")
    return True


def _start(
    d: _Draft, now: datetime, runner: int, position: int, owner: int, turn: bool = True
) -> None:
    """Start a call of `runner` on lane entry `position` for `owner`'s turn, and remember where
    `runner` sits and which earlier entries it passed because of a limit. A23/A24/A36: at a
    turn's start (`turn`) a participant silently takes its earliest free entry; coming back to
    an entry it had passed because of a limit is announced (an outage's end is not); a hop
    (A11, A26) has said where it goes already."""
    config = d.config
    seat = d.seats[runner]
    if position or seat:
        if turn and position < seat and comes_back(d.passed[runner], position):
            member = config.team[runner]
            back = config.lanes[runner][position]
            d._effects.append(new_log(
                now,
                # back on the primary: the provider alone (A9), compared without building it
                logs.lifted(member.id, back, back.provider == member.provider
                            and back.model is None),
                "lifted",
                participant=member.id, engine=back))
        if config.bounded and _limits_reached(d, now):
            return
        passing = 0  # the entries before `position` it passes because they are limited now
        if position and d.limits:
            passing = (d._limited or d.in_force()).limited_before[runner][position]
        if seat != position:
            seats = d.seats
            d.seats = (*seats[:runner], position, *seats[runner + 1 :])
        passed = d.passed
        if passed[runner] != passing:
            d.passed = (*passed[:runner], passing, *passed[runner + 1 :])
    elif config.bounded and _limits_reached(d, now):
        return
    runner_id = config.team[runner].id
    owner_id = config.team[owner].id
    engine = config.lanes[runner][position]
    kind: TurnKind = "fresh" if d.fresh or d.last_runner != runner_id else "no-new-input"
    d.fresh = False
    d.last_runner = runner_id
    d.iterations += 1
    d.wait_until = None
    d.call = new_call(runner_id, engine, now, owner_id, d.approved is not None)
    if d.status != "running":
        d.set_status(now, "running")
    d._effects.append(
        new_start_call(
            now,
            runner_id,
            engine,
            config.models[runner][position],  # A13: the pin only on the primary
            kind,
            owner_id,
        )
    )


def _owner(d: _Draft) -> int:
    return d.config.index[d.approved] if d.approved is not None else d.due


def _keeps_turn(d: _Draft, owner: int) -> bool:
    """A16/A22/A35: a pending gate or a gate-approved turn never hands over; nor does a team of
    one (it has no one to hand to)."""
    return (
        len(d.config.team) == 1
        or d.approved is not None
        or d.config.team[owner].id in d.gates
    )


def _back_at(d: _Draft, engine: Engine, now: datetime) -> tuple[datetime, str, bool] | None:
    """When a lane entry is free again, what it waits for (engine or provider), and whether a
    limit (rather than only an outage) is involved. None when it is free now."""
    limit = d.limit_of(engine)
    outage = d.outage_of(engine.provider)
    if limit is None and outage is None:
        return None
    if outage is None or (limit is not None and limit >= outage):
        assert limit is not None
        return limit, engine._name, True  # `str(engine)`, without the call
    return outage, engine.provider, limit is not None


def _soonest(
    d: _Draft, now: datetime, owner: int | None
) -> tuple[datetime, str, bool, dict[str, Any]]:
    """The first instant any entry of `owner` (None: of anyone) is free again (A18: the nearest
    reset among all of them, not the last failure's); what it waits for, written (the engine,
    or the provider when an outage ends first; a tie goes to the smaller name) and as the wait
    line's structured side (`{"engine": ...}` or `{"provider": ...}`); and whether any entry is
    limited. Callers ask only when no entry of theirs is free."""
    config = d.config
    if not d.outages:
        # Nothing is out, so every entry waited for is limited now (A8): the first back is the
        # earliest reset among their engines, read by engine number.
        if d._limited is None:
            d.in_force()
        entries = d.limit_index.entries  # type: ignore[union-attr]  # read by in_force
        engines = config.numbered_engines
        first: tuple[datetime, str] | None = None
        chosen = 0
        for number in range(len(engines)) if owner is None else config.lane_numbers[owner]:
            back = (entries[number], engines[number]._name)
            if first is None or back < first:
                first = back
                chosen = number
        if first is None:  # pragma: no cover - a lane has at least one engine
            raise AssertionError("no engine to wait for")
        return first[0], first[1], True, {"engine": engines[chosen]}
    best: tuple[datetime, str] | None = None
    limited = False
    seen: set[tuple[str, str | None]] = set()
    for runner in range(len(config.team)) if owner is None else (owner,):
        for engine in config.lanes[runner]:
            key = (engine.provider, engine.model)  # cheaper to hash than an Engine
            if key in seen:
                continue
            seen.add(key)
            found = _back_at(d, engine, now)
            if found is None:  # pragma: no cover - callers only ask when nothing is free
                raise AssertionError(f"{engine} is free: nothing to wait for")
            limited = limited or found[2]
            if best is None or (found[0], found[1]) < best:
                best = (found[0], found[1])
    assert best is not None
    until, what = best
    for record in d.limits:  # an engine limited until then, else the provider retried then
        if record.until == until and record.engine._name == what:
            return until, what, limited, {"engine": record.engine}
    return until, what, limited, {"provider": what}


def _sleep(d: _Draft, now: datetime, until: datetime, status: Status, on_message: bool) -> None:
    d.wait_until = until
    d.set_status(now, status)
    d._effects.append(new_sleep(until, status, on_message))


def _wait_for_own(d: _Draft, now: datetime, owner: int) -> None:
    """A35 (or A18 for a team of one): nothing of the owner's own is free; wait for it."""
    if len(d.config.team) == 1:
        _wait_for_anyone(d, now)
        return
    until, what, limited, waited = _soonest(d, now, owner)
    d._effects.append(new_log(
        now, logs.cannot_hand_over(d.config.team[owner].id, what, d.clock(until)), "wait-own",
        participant=d.config.team[owner].id, until=until, **waited))
    _sleep(d, now, until, "rate_limited" if limited else "unreachable", False)


def _wait_for_anyone(d: _Draft, now: datetime) -> None:
    """A18/A27/A40: nobody can take the turn; sleep until the first entry comes back."""
    until, what, limited, waited = _soonest(d, now, None)
    if limited:
        d._effects.append(new_log(
            now, logs.every_participant_limited(what, d.clock(until)), "wait-limited",
            until=until, **waited))
        _sleep(d, now, until, "rate_limited", False)
    else:
        d._effects.append(new_log(
            now, logs.no_provider_reachable(d.clock(until)), "wait-unreachable", until=until,
            **waited))
        _sleep(d, now, until, "unreachable", False)


def _colleague(d: _Draft, now: datetime, owner: int) -> tuple[int, int] | None:
    """A15/A33: the first participant after the owner, in team order, with a free entry."""
    if not d.outages:  # worked out once for the engines limited now
        return (d._limited or d.in_force()).colleague[owner]
    n = len(d.config.team)
    for offset in range(1, n + 1):
        runner = (owner + offset) % n
        free = d.earliest_free(runner)
        if free is not None:
            return runner, free
    return None


def _begin_turn(d: _Draft, now: datetime) -> None:
    """A23/A24/A33/A34: start (or attempt again) the owed turn, choosing the engine afresh."""
    if d.call is not None:  # resumed or restarted while a call ran: its end decides
        d.set_status(now, "running")
        return
    if d.limits:
        index = d.limit_index
        if index is None or (index.earliest is not None and index.earliest <= now):
            _lift_passed_limits(d, now)
    owner = d.due if d.approved is None else d.config.index[d.approved]  # `_owner`, inline
    if d.outages:
        position = d.earliest_free(owner)
    else:  # `earliest_free`, inline: nothing unreachable
        position = (d._limited or d.in_force()).free_entry[owner] if d.limits else 0
    if d.readings:
        headroom = d.config.policy.headroom
        if headroom is not None and _hand_over_early(
                d, now, owner, position, headroom.hand_over_at):
            return
    if position is not None:
        _start(d, now, owner, position, owner)
        return
    if _keeps_turn(d, owner):
        _wait_for_own(d, now, owner)
        return
    found = _colleague(d, now, owner)
    if found is None:
        _wait_for_anyone(d, now)
        return
    runner, runner_position = found
    _handover_line(d, now, owner, runner)
    _start(d, now, runner, runner_position, owner)


def _handover_line(d: _Draft, now: datetime, owner: int, runner: int) -> None:
    """A15/A36: the line of a turn start that hands the owner's turn to `runner`."""
    member = d.config.team[owner]
    lane = d.config.lanes[owner]
    if not (d._limited or d.in_force()).has_limited[owner]:
        # A36: no entry of the owner's is limited: it is out only because its providers
        # cannot be reached.
        d._effects.append(new_log(
            now, logs.handover_unreachable(member.id, lane[0].provider, d.config.team[runner].id),
            "handover-unreachable", participant=member.id, provider=lane[0].provider,
            colleague=d.config.team[runner].id))
    else:
        d._effects.append(new_log(  # A15, A24
            now, logs.handover_limited(member.id, d.config.team[runner].id), "handover-limited",
            participant=member.id, colleague=d.config.team[runner].id))


def _hand_over_early(
    d: _Draft, now: datetime, owner: int, position: int | None, threshold: float
) -> bool:
    """Issue 25 (`Policy.headroom`): a turn start prefers an engine that is free and not near
    its limit — the owner's earliest such entry (its chain, A10-A13), else, when the owner may
    hand over (A16, A22: not with a gate, an approved turn or a team of one), the first
    colleague after it in team order with such an entry (A15, A33), on its earliest. Whether
    it started the call; False leaves the turn to the rules of A23-A24 and A15-A18 as they are:
    a warning never makes the run wait (with nothing else free, the warned engine runs)."""
    near = _near_limit(d, now, threshold)
    if not near:
        return False
    config = d.config
    if position is not None and config.lanes[owner][position]._name not in near:
        return False  # the earliest free entry is not near its limit: as without the knob

    def cool(runner: int) -> int | None:
        lane = config.lanes[runner]
        for at in (d._limited or d.in_force()).free_entries[runner]:
            engine = lane[at]
            if engine._name not in near and (not d.outages or d.outage_of(engine.provider) is None):
                return at
        return None

    member = config.team[owner]
    own = cool(owner)
    if own is not None:
        assert position is not None  # a free entry exists, so the earliest free one does
        if d.seats[owner] != own:  # written when it moves there, not at every turn (A24)
            source = config.lanes[owner][position]
            target = config.lanes[owner][own]
            d._effects.append(new_log(
                now, logs.hop_near_limit(member.id, source, target), "hop-near-limit",
                participant=member.id, engine=source, target=target))
        _start(d, now, owner, own, owner)
        return True
    if _keeps_turn(d, owner):
        return False
    n = len(config.team)
    for offset in range(1, n):
        runner = (owner + offset) % n
        entry = cool(runner)
        if entry is None:
            continue
        other = config.team[runner].id
        if position is not None:
            source = config.lanes[owner][position]
            d._effects.append(new_log(
                now, logs.handover_near_limit(member.id, source, other), "handover-near-limit",
                participant=member.id, engine=source, colleague=other))
        else:  # the owner cannot run at all: the A15/A36 line, as without the knob
            _handover_line(d, now, owner, runner)
        _start(d, now, runner, entry, owner)
        return True
    return False


def _reroute(d: _Draft, now: datetime, runner: int, source: Engine, unreachable: bool) -> None:
    """A11-A16, A26, A35, A36: a call reported a limit or an outage and posted nothing; in the
    same step walk the runner's chain, else hand the turn to a colleague, else wait."""
    owner = d.due if d.approved is None else d.config.index[d.approved]  # `_owner`, inline
    member = d.config.team[runner]
    position = d.earliest_free(runner)
    if position is not None:
        target = d.config.lanes[runner][position]
        if unreachable:
            d._effects.append(new_log(
                now, logs.hop_unreachable(member.id, source, target), "hop-unreachable",
                participant=member.id, engine=source, target=target))
        else:
            d._effects.append(new_log(
                now, logs.hop_limited(member.id, source, target), "hop-limited",
                participant=member.id, engine=source, target=target))
        _start(d, now, runner, position, owner, False)
        return
    found: tuple[int, int] | None = None
    if runner != owner:
        # A colleague's chain is exhausted: the owner itself comes first if it can run now.
        own = d.earliest_free(owner)
        if own is not None:
            found = (owner, own)
    if found is None and _keeps_turn(d, owner):
        _wait_for_own(d, now, owner)
        return
    if found is None:
        found = _colleague(d, now, owner)
    if found is None:
        _wait_for_anyone(d, now)
        return
    other, other_position = found
    if unreachable:
        d._effects.append(new_log(
            now, logs.handover_unreachable(member.id, source.provider, d.config.team[other].id),
            "handover-unreachable", participant=member.id, engine=source, provider=source.provider,
            colleague=d.config.team[other].id))
    else:
        d._effects.append(new_log(
            now, logs.handover_limited(member.id, d.config.team[other].id), "handover-limited",
            participant=member.id, engine=source, colleague=d.config.team[other].id))
    _start(d, now, other, other_position, owner)


def _what_failed(event: CallEnded) -> str:
    if event.kind == "timeout":
        return logs.timed_out(event.engine.provider)
    if event.kind == "empty":
        return logs.ended_without_post(event.participant)
    return logs.exited(event.engine.provider, event.exit_code if event.exit_code else 1)


def _fail(d: _Draft, now: datetime, runner: int, event: CallEnded) -> None:
    """A28-A31/A41: count the failure; pause at the 3rd empty turn or the 12th failure in a row,
    else wait the backoff — cut short by an engine coming back first (A30)."""
    what = _what_failed(event)
    member = d.config.team[runner]
    policy = d.config.policy
    if event.kind == "empty" and d.empties[runner] >= policy.empty_turns:
        d._effects.append(new_log(
            now, logs.empty_turns(member.id, policy.empty_turns), "empty-turns",
            participant=member.id, count=d.empties[runner]))
        d.set_status(now, "paused")
        return
    if d.failures >= policy.attempts:
        waited = logs.span(policy.give_up_span())
        d._effects.append(new_log(
            now, logs.gave_up(what, policy.attempts, waited), "gave-up", count=d.failures,
            failure=what))
        d.set_status(now, "paused")
        return
    if d.config.bounded and _limits_reached(d, now):
        return
    until = now + policy.backoff_after(d.failures)  # A38: measured from the end of the failed call
    for record in d.limits:
        if now < record.until < until:
            until = record.until  # A30: a limited engine back first brings the attempt forward
    d._effects.append(new_log(
        now, logs.failed(member.id, event.engine, what, d.clock(until)), "failed",
        participant=member.id, engine=event.engine, until=until, count=d.failures, failure=what))
    _sleep(d, now, until, "backing_off", True)


# ------------------------------------------------------------------------------------------------
# Handlers, one per (status, event) pair of the table


def _on_run_started(d: _Draft, event: RunStarted) -> None:
    d.failures = 0
    d.empties = (0,) * len(d.empties)
    d.fresh = True
    _begin_turn(d, event.now)


def _on_call_ended(d: _Draft, event: CallEnded) -> None:
    call = d.call
    if call is None:
        raise SchedulerProtocolError("CallEnded with no call in flight")
    if call.participant != event.participant or (
        call.engine is not event.engine and call.engine != event.engine
    ):
        raise SchedulerProtocolError(
            f"CallEnded for {event.participant} on {event.engine}, but the call in flight is "
            f"{call.participant} on {call.engine}"
        )
    now = event.now
    d.call = None
    if now > call.started_at:
        d.runtime += now - call.started_at  # A21: only call time is charged
    config = d.config
    participant = event.participant
    runner = config.index[participant]
    engine = event.engine
    kind = event.kind
    live = d.status == "running"  # paused or stopped: learn, count, decide nothing
    # -- learned (A39)
    if kind == "network":
        _record_outage(d, now, engine.provider)
    elif d.outages:  # (with nothing out, nothing ends)
        _record_reachable(d, now, engine.provider)  # A40
    if event.posted:
        d._effects.append(new_log(  # (participant, engine): positional, cheaper
            now, logs.posted_via(participant, engine), "posted", participant, engine))
        if event.usage is not None:  # issue 25: learned after the post
            _record_usage(d, now, engine, event.usage, now, "")
        d.failures = 0  # A30: a call that works resets the count
        if d.empties[runner]:
            d.empties = _replace(d.empties, runner, 0)  # A31: a post resets the count
        if not call.approved:
            d.due = (d.due + 1) % len(config.team)  # A33: the owed turn is taken
        else:
            if d.approved == call.turn_owner:
                d.approved = None  # A22: the inserted turn is taken; the owed one still is owed
            if config.index[call.turn_owner] == d.due:
                d.due = (d.due + 1) % len(config.team)  # (... unless it was the owed one)
        d.fresh = True
        if kind == "post":  # nothing else was learned; the next turn starts
            if live and not (config.bounded and _limits_reached(d, now)):
                _begin_turn(d, now)
            return
    elif event.usage is not None:  # issue 25: a healthy call that did not post
        _record_usage(d, now, engine, event.usage, now, "")
    if event.limit is not None:
        _record_limit(d, now, engine, event.limit.reset_at)  # A17: after the post, if any
    if kind in ("exit", "timeout", "empty"):
        d.failures += 1
        if kind == "empty":
            d.empties = _replace(d.empties, runner, d.empties[runner] + 1)
    # -- decided
    if not live:
        return
    if kind == "login":
        d._effects.append(new_log(  # A32
            now, logs.not_logged_in(engine.provider, event.participant), "not-logged-in",
            participant=event.participant, engine=engine, provider=engine.provider))
        d.set_status(now, "paused")
        return
    if kind in ("exit", "timeout", "empty"):
        _fail(d, now, runner, event)
        return
    if d.config.bounded and _limits_reached(d, now):
        return
    if event.posted:
        _begin_turn(d, now)
    else:
        _reroute(d, now, runner, engine, unreachable=kind == "network")


def _on_call_cancelled(d: _Draft, event: CallCancelled) -> None:
    """The call in flight was cut short (a pause or a stop): it has no outcome, so nothing is
    learned and nothing counted; the turn it ran stays owed (A33) and the next resume or start
    begins it again. Its time so far was call time (A21)."""
    call = d.call
    if call is None:
        raise SchedulerProtocolError("CallCancelled with no call in flight")
    d.call = None
    if event.now > call.started_at:
        d.runtime += event.now - call.started_at


def _on_woke(d: _Draft, event: Woke) -> None:
    now = event.now
    until = d.wait_until
    if until is not None and now < until:  # woke early: keep sleeping (A38: `now >= t`)
        d._effects.append(new_sleep(until, d.status, d.status == "backing_off"))
        return
    d.wait_until = None
    _begin_turn(d, now)


def _on_message_in_backoff(d: _Draft, event: MessageArrived) -> None:
    """A30: a user message ends a failure wait; the next attempt is made at once."""
    d.fresh = True
    d.wait_until = None
    _begin_turn(d, event.now)


def _on_message(d: _Draft, _event: MessageArrived) -> None:
    """A19: a message does not shorten a limit or outage wait; it is new input (B18)."""
    d.fresh = True


def _on_stop(d: _Draft, event: StopRequested) -> None:
    d.wait_until = None
    d.set_status(event.now, "stopped")


def _on_pause(d: _Draft, event: PauseRequested) -> None:
    d.wait_until = None
    d.set_status(event.now, "paused")


def _on_resume(d: _Draft, event: ResumeRequested) -> None:
    """Resume: 'resume to try again' (A29, A31) starts the counts afresh."""
    d.failures = 0
    d.empties = (0,) * len(d.empties)
    _begin_turn(d, event.now)


def _check_member(d: _Draft, participant: str) -> None:
    if participant not in d.config.index:
        raise SchedulerProtocolError(f"no participant {participant!r} in the team")


def _on_gate_requested(d: _Draft, event: GateRequested) -> None:
    _check_member(d, event.participant)
    d.gates = d.gates | {event.participant}


def _on_gate_approved(d: _Draft, event: GateApproved) -> None:
    """A22: the approved participant gets a turn of its own, inserted before the owed one."""
    _check_member(d, event.participant)
    d.gates = d.gates - {event.participant}
    d.approved = event.participant
    if d.status in _WAITS:
        d.wait_until = None
        d.fresh = True
        _begin_turn(d, event.now)


def _on_limit_observed(d: _Draft, event: LimitObserved) -> None:
    """Issue 14: a limit another run saw joins the registry. A call in flight is not touched
    (A24); a limit or outage wait is decided afresh when the registry changed — a read reset
    that replaced a defaulted one may end it now or earlier (A18, A23) — else slept on; a
    failure wait is brought forward to a limited engine's return (A30); a wait whose deadline
    has come is decided as its wake would (A38); paused or stopped: learn, decide nothing."""
    changed = _observe_limit(d, event)
    now = event.now
    status = d.status
    until = d.wait_until
    if until is None:
        return
    if now >= until:  # the wait is over (A38): decide as its wake would
        d.wait_until = None
        _begin_turn(d, now)
        return
    if status == "backing_off":
        for record in d.limits:
            if now < record.until < until:
                until = record.until  # A30: a limited engine back first brings the attempt on
        _sleep(d, now, until, status, True)
        return
    if changed:
        mark = len(d._effects)
        d.wait_until = None
        _begin_turn(d, now)
        if d.call is not None or d.wait_until != until or d.status != status:
            return
        del d._effects[mark:]  # the same wait as before: nothing new to say
    _sleep(d, now, until, status, False)


def _on_usage_observed(d: _Draft, event: UsageObserved) -> None:
    """Issues 14, 25: a reading another run saw joins the readings; nothing is decided (a
    reading never starts, moves or ends a wait, and a call in flight is not touched, A24)."""
    now = event.now
    _record_usage(d, now, event.engine, event.reading,
                  event.seen if event.seen is not None else now, event.source)


def _ignore(_d: _Draft, _event: Any) -> None:
    """Nothing to do in this status (the table says so explicitly)."""


# ------------------------------------------------------------------------------------------------
# The table (h2): (status, event type) -> (handler, the statuses it may lead to)

Handler = Callable[[_Draft, Any], None]
_ALL: Final[frozenset[Status]] = frozenset(STATUSES)
_WAITS: Final[tuple[Status, ...]] = WAIT_STATUSES
#: Starting a turn runs a call, waits for an engine or provider, or stops at a limit (A43);
#: only a call's end can lead to a failure wait or a pause.
_AFTER_DECIDING: Final[frozenset[Status]] = frozenset(
    ("running", "rate_limited", "unreachable", "stopped")
)


def _table() -> dict[tuple[Status, type], tuple[Handler, frozenset[Status]]]:
    t: dict[tuple[Status, type], tuple[Handler, frozenset[Status]]] = {}
    for status in _ALL:
        t[(status, CallEnded)] = (
            _on_call_ended,
            _ALL if status == "running" else frozenset((status,)),
        )
        t[(status, GateRequested)] = (_on_gate_requested, frozenset((status,)))
        t[(status, UsageObserved)] = (_on_usage_observed, frozenset((status,)))
        t[(status, StopRequested)] = (_on_stop, frozenset(("stopped",)))
        t[(status, LimitObserved)] = (
            _on_limit_observed,
            _AFTER_DECIDING | {status} if status in _WAITS else frozenset((status,)),
        )
    t[("stopped", RunStarted)] = (_on_run_started, _AFTER_DECIDING)
    for status in ("running", *_WAITS):
        t[(status, PauseRequested)] = (_on_pause, frozenset(("paused",)))
    for status in ("paused", "stopped"):
        t[(status, PauseRequested)] = (_ignore, frozenset((status,)))
        t[(status, MessageArrived)] = (_on_message, frozenset((status,)))
        t[(status, Woke)] = (_ignore, frozenset((status,)))
        t[(status, GateApproved)] = (_on_gate_approved, frozenset((status,)))
        # A call is cancelled only once a pause or stop took the run out of `running`.
        t[(status, CallCancelled)] = (_on_call_cancelled, frozenset((status,)))
    t[("paused", ResumeRequested)] = (_on_resume, _AFTER_DECIDING)
    for status in ("running", *_WAITS, "stopped"):
        t[(status, ResumeRequested)] = (_ignore, frozenset((status,)))
    t[("running", Woke)] = (_ignore, frozenset(("running",)))
    t[("running", MessageArrived)] = (_on_message, frozenset(("running",)))
    t[("running", GateApproved)] = (_on_gate_approved, frozenset(("running",)))
    for status in _WAITS:
        t[(status, Woke)] = (_on_woke, _AFTER_DECIDING | {status})  # early: sleep on
        t[(status, GateApproved)] = (_on_gate_approved, _AFTER_DECIDING)
    t[("backing_off", MessageArrived)] = (_on_message_in_backoff, _AFTER_DECIDING)
    t[("rate_limited", MessageArrived)] = (_on_message, frozenset(("rate_limited",)))
    t[("unreachable", MessageArrived)] = (_on_message, frozenset(("unreachable",)))
    return t


_TABLE: Final = _table()
#: `_TABLE` by event type, then status: what `step` looks up (no key tuple to build and compare)
_BY_EVENT: Final[dict[type, dict[Status, tuple[Handler, frozenset[Status]]]]] = {}
for (_status, _type), _entry in _TABLE.items():
    _BY_EVENT.setdefault(_type, {})[_status] = _entry
#: Every legal (status, event) pair, its handler and the statuses it may lead to.
TRANSITIONS: Final[Mapping[tuple[Status, type], tuple[Handler, frozenset[Status]]]] = (
    MappingProxyType(_TABLE)
)


def step(state: SchedulerState, event: Event) -> tuple[SchedulerState, tuple[Effect, ...]]:
    """Feed one event to the scheduler: the new state and what the shell must do, in order."""
    try:
        handler, targets = _BY_EVENT[type(event)][state.status]
    except KeyError:
        if type(event) not in EVENT_TYPES:
            raise TypeError(
                f"step needs an event ({', '.join(t.__name__ for t in EVENT_TYPES)}), "
                f"not {type(event).__name__} {event!r}"
            ) from None
        hint = ""
        if type(event) is RunStarted:  # a state saved mid-run, fed back as it was (A33)
            hint = ("; to go on from a saved state, start from restore_state(config, saved), "
                    "which forgets what a restart must rediscover")
        raise SchedulerProtocolError(
            f"{type(event).__name__} makes no sense while the run is {state.status}{hint}"
        ) from None
    now = event.now
    last = state.last_event_at
    if last is not None and now < last:
        raise SchedulerProtocolError(
            f"{type(event).__name__} at {now.isoformat()} is earlier than the last event, at "
            f"{last.isoformat()}: time never goes backwards (A38); feed events in the order "
            "they happened, and a clock behind the state (set back, or a restart from a saved "
            "state) at max(now, state.last_event_at) until it catches up (A20)"
        )
    d = _new(_Draft)  # the new state, filled from the one before
    d.fill(state, now)
    effects = d._effects
    handler(d, event)
    if d.status not in targets:  # pragma: no cover - the table and the handlers disagree
        raise AssertionError(
            f"{type(event).__name__} led {state.status} to {d.status}, not in the table"
        )
    if d.limit_index is None:
        d.limit_index = index_limits(d.config, d.limits)
    d._effects = d._limited = None  # type: ignore[assignment]  # scratch: None once made
    d.__class__ = SchedulerState  # type: ignore[assignment]
    return d, tuple(effects)  # type: ignore[return-value]


def next_deadline(state: SchedulerState) -> datetime | None:
    """aioquic's `get_timer()`: when the shell must wake the core with `Woke`, if ever."""
    return state.wait_until


def next_entries(state: SchedulerState, now: datetime) -> tuple[int | None, ...]:
    """A23/A24: for each participant, in team order, the lane entry a turn of theirs would start
    on at `now` — the first neither limited (A38: a reset at `t` has passed when `now >= t`) nor
    unreachable — or None when every entry is out (the turn then goes to a colleague, A15, or
    waits, A18). The test `step` applies, for a status or a panel to show the next candidate
    without deciding it again (issue 23). The state is not changed."""
    d = _new(_Draft)
    d.config = state.config
    d.limits = state.limits
    d.outages = state.outages
    d.last_event_at = now
    d.limit_index = index_limits(state.config, state.limits)  # its own: `valid` is per instant
    d._limited = None
    return tuple(d.earliest_free(runner) for runner in range(len(state.config.team)))


def start_run(state: SchedulerState, now: datetime) -> tuple[SchedulerState, tuple[Effect, ...]]:
    """Shorthand for `step(state, RunStarted(now))`."""
    return step(state, RunStarted(now=now))


__all__ = [
    "TRANSITIONS",
    "SchedulerProtocolError",
    "next_deadline",
    "next_entries",
    "start_run",
    "step",
]
