"""The turn scheduler: the ONE place where the run's transitions are decided (SPEC A8-A43).

Everything that affects a transition lives in this module, as h11's `_state.py` does for HTTP.
`step(state, event) -> (state, effects)` is a pure reducer: time is the event's `now`, the next
deadline is reported in a `Sleep` effect (and by `next_deadline`), and log lines are `Log`
effects built by `logs`. `TRANSITIONS` is the table of what each event may do in each status
(h2's style); an event outside it is a caller's mistake and raises `SchedulerProtocolError`;
docs/scheduler.md shows the table and a diagram, both generated from it (`diagram.py`).

Inside one step the handlers change a `_Working` copy of the state, openly mutable (as h11's
connection state is), which makes one `SchedulerState` at the step's end.

Each rule is stated once: the registry insert (`_joined`), the A43 budget gate
(`_budget_spent`), the A30 bring-forward (`_brought_forward`) and the A15/A36 handover line
(`_handover_line`) are called from every place that applies them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from types import MappingProxyType
from typing import Any, Final, TypeVar

import attrs

from ..detection.classification import UsageReading
from ..engine import Engine
from ..errors import AutodevError
from ..names import STATUSES, WAIT_STATUSES, PauseReason
from . import logs
from .effects import Effect, Log, LogKind, Sleep, StartCall, Status, StatusChanged, TurnKind
from .events import (
    EVENT_TYPES,
    CallCancelled,
    CallEnded,
    Event,
    GateApproved,
    GateRequested,
    LimitCleared,
    LimitObserved,
    MessageArrived,
    PauseRequested,
    ResumeRequested,
    RunStarted,
    StopRequested,
    UsageObserved,
    Woke,
)
from .forecast import trim_series
from .limited import Limited, comes_back, limited_at
from .registry import merge_limit, merge_usage
from .state import (
    Call,
    EngineLimit,
    EngineUsage,
    Outage,
    SchedulerConfig,
    SchedulerState,
    UsagePoint,
)
from .windows import near_engines, reading_of, window_key


class SchedulerProtocolError(AutodevError):
    """The caller fed `step` an event that makes no sense now (h11's LocalProtocolError):
    a `CallEnded` with no call in flight, for another call, `RunStarted` on a live run, or an
    event whose `now` is earlier than the last event's (time never goes backwards, A38).

    A value that is not an event at all is a `TypeError` instead."""


#: The fields a `_Working` copies from the state before and gives to the state it makes.
_STATE_FIELDS: Final = tuple(field.name for field in attrs.fields(SchedulerState))


@attrs.define
class _Working:
    """The state one step is making, mutable while the step runs: copied from the state before
    (`of`), changed in place by the handlers, made a `SchedulerState` at the end (`made`). Its
    instant is `last_event_at`; `effects` collects what the shell must do, and `_limited` which
    lane entries are limited at the step's instant (None: not worked out since `limits`
    changed)."""

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
    last_event_at: datetime
    readings: tuple[EngineUsage, ...]
    usage_series: tuple[UsagePoint, ...]
    paused_for: PauseReason | None
    effects: list[Effect] = attrs.Factory(list)
    _limited: Limited | None = None

    @classmethod
    def of(cls, state: SchedulerState, now: datetime) -> _Working:
        """`state`, at the instant `now`."""
        fields = {name: getattr(state, name) for name in _STATE_FIELDS}
        fields["last_event_at"] = now
        return cls(**fields)

    def made(self) -> SchedulerState:
        """The new state: one `SchedulerState`, checked as any other."""
        return SchedulerState(**{name: getattr(self, name) for name in _STATE_FIELDS})

    # -- small helpers ----------------------------------------------------------------------

    @property
    def now(self) -> datetime:
        return self.last_event_at

    def clock(self, at: datetime) -> str:
        """`<time>` of `at` in a line written at the step's instant (logs.clock)."""
        zone = self.config.zone
        return logs.local_clock(at.astimezone(zone), self.now.astimezone(zone).date())

    def log(self, message: str, kind: LogKind, **fields: Any) -> None:
        self.effects.append(Log(self.now, message, kind, **fields))

    def set_status(self, status: Status, paused_for: PauseReason | None = None) -> None:
        """`paused_for`: why, when `status` is `paused`; any other status clears it."""
        if status != self.status:
            self.status = status
            self.effects.append(StatusChanged(self.now, status))
        self.paused_for = paused_for if status == "paused" else None

    def set_limits(self, limits: tuple[EngineLimit, ...]) -> None:
        self.limits = limits
        self._limited = None

    def in_force(self) -> Limited:
        """The lane entries limited now: THE statement of the limit test (A8; A38: a reset at
        `t` has passed when `now >= t`), worked out again only when the registry changes."""
        if self._limited is None:
            self._limited = limited_at(self.config, self.limits, self.now)
        return self._limited

    def outage_of(self, provider: str) -> datetime | None:
        """When `provider` is tried again, if it is known down now (A26, A36; A38)."""
        for record in self.outages:
            if record.provider == provider:
                return record.retry_at if record.retry_at > self.now else None
        return None

    def earliest_free(self, runner: int) -> int | None:
        """A23/A24: the first lane entry of `runner` that is neither limited nor unreachable."""
        lane = self.config.lanes[runner]
        for position in self.in_force().free_entries[runner]:
            if self.outage_of(lane[position].provider) is None:
                return position
        return None

    def owner(self) -> int:
        """Whose turn it is: the gate-approved participant's (A22), else the one owed (A33)."""
        return self.due if self.approved is None else self.config.index[self.approved]


def _replace(values: tuple[Any, ...], index: int, value: Any) -> tuple[Any, ...]:
    return (*values[:index], value, *values[index + 1 :])


_R = TypeVar("_R")


def _joined(
    records: tuple[_R, ...], observed: _R, key: Callable[[_R], Any],
    merge: Callable[[_R | None, _R], _R],
) -> tuple[tuple[_R, ...], _R | None, _R]:
    """THE registry insert: `observed` joined by `merge` to the record of its `key` in
    `records`, which stay sorted by `key` (limits by engine name, readings by engine name then
    window, outages by provider). The records after, the record before (None: none), after."""
    wanted = key(observed)
    record: _R | None = None
    at = 0  # where the record is, or goes
    for existing in records:
        other = key(existing)
        if other >= wanted:
            if other == wanted:
                record = existing
            break
        at += 1
    merged = merge(record, observed)
    if merged is record:
        return records, record, merged
    return (*records[:at], merged, *records[at + (record is not None):]), record, merged


# ------------------------------------------------------------------------------------------------
# What was learned (A39: written before what is decided)


def _merge_limit(w: _Working, observed: EngineLimit) -> tuple[EngineLimit | None, EngineLimit]:
    """Join `observed` to the registry (registry.py's rule): the engine's record before, after."""
    limits, record, merged = _joined(
        w.limits, observed, lambda r: str(r.engine), lambda r, o: merge_limit(r, o, w.now))
    if merged is not record:
        w.set_limits(limits)
    return record, merged


def _record_limit(w: _Working, engine: Engine, reset_at: datetime | None) -> None:
    """A6/A8: take `engine` out until its reset (or the default wait). A read reset replaces a
    defaulted one even when earlier; otherwise a recorded reset never moves earlier."""
    now = w.now
    if reset_at is not None and reset_at > now:
        observed = EngineLimit(engine, reset_at, True, now, "")
    else:
        observed = EngineLimit(engine, now + w.config.policy.default_limit_wait(engine.provider),
                               False, now, "")
    _before, merged = _merge_limit(w, observed)
    w.log(logs.limited_until(engine, w.clock(merged.until)), "limit", engine=engine,
          until=merged.until)


def _observe_limit(w: _Working, event: LimitObserved) -> bool:
    """docs/sharing.md: join a limit another run saw; written only when it changes the
    registry."""
    now = w.now
    observed = EngineLimit(event.engine, event.until, event.read,
                           event.seen if event.seen is not None else now, event.source)
    record, merged = _merge_limit(w, observed)
    if merged == record:
        return False
    if merged.until <= now:
        # An ended limit (A38), kept until the next turn start: nothing to say, also when it
        # ends a defaulted one still in force (a read reset replaces a default, even earlier).
        return True
    w.log(logs.limited_elsewhere(event.engine, w.clock(merged.until), merged.source), "limit",
          engine=event.engine, until=merged.until)
    return True


def _record_usage(
    w: _Working, engine: Engine, reading: UsageReading, seen: datetime, source: str
) -> None:
    """docs/limits.md, Usage readings: join a usage reading to the engine's record of the same
    window (claude's five-hour and seven-day windows are separate: one at 97 % is not undone by
    the other at 40 %), by `registry.merge_usage`: a live reading over one whose window has
    reset, then the newest. With `Policy.headroom` set, a reading that puts the engine at or
    above the threshold when no window of it was is written (what was learned, A39). A reading
    is never a limit: no wait, no lift, no call touched."""
    now = w.now
    resets_at = reading.resets_at
    until = resets_at if resets_at is not None else (
        seen + w.config.policy.default_limit_wait(engine.provider))  # A6's wait, as for a limit
    observed = EngineUsage(engine, reading.utilization, reading.window, until,
                           resets_at is not None, seen, source, reading.threshold)
    headroom = w.config.policy.headroom
    was_near = headroom is not None and _is_near(w, engine, headroom.hand_over_at)
    w.readings, record, merged = _joined(
        w.readings, observed, lambda r: (str(r.engine), r.window),
        lambda r, o: merge_usage(r, o, now))
    if merged is record:
        return
    # docs/limits.md "Forecast": the account window's series, a display only (A1).
    account, window = window_key(observed)
    w.usage_series = trim_series(w.usage_series, UsagePoint(
        account, window, seen, reading.utilization, resets_at))
    if headroom is None:
        return
    if (merged.utilization >= headroom.hand_over_at and now < merged.until and not was_near
            and _is_near(w, engine, headroom.hand_over_at)):
        w.log(logs.near_limit(engine, merged.utilization, merged.window, w.clock(merged.until),
                              merged.source),
              "near-limit", engine=engine, until=merged.until,
              count=logs.percent(merged.utilization))


def _is_near(w: _Working, engine: Engine, threshold: float) -> bool:
    """Whether a window holding for `engine` is at or above `threshold` (see `_near_limit`)."""
    return bool(near_engines(w.readings, (engine,), w.now, threshold))


def _near_limit(w: _Working, threshold: float) -> frozenset[str]:
    """docs/limits.md, Readings per account window: the engines of the team's lanes (by name)
    that a window applying to them (their account's, their model's, their own) holds at or above
    `threshold` and has not reset yet (A38: a window ending at `t` has reset when `now >= t`)."""
    return near_engines(w.readings, (e for lane in w.config.lanes for e in lane), w.now,
                        threshold)


def _record_outage(w: _Working, provider: str) -> None:
    """A26/A27: the provider is out for everyone; retried after 1, 2, 4, 8, then every 15 min."""
    def again(record: Outage | None, _observed: Outage) -> Outage:
        attempts = 1 if record is None else record.attempts + 1
        return Outage(provider, w.now + w.config.policy.outage_retry_after(attempts), attempts)

    w.outages, _before, outage = _joined(
        w.outages, Outage(provider, w.now), lambda r: r.provider, again)
    w.log(logs.could_not_reach(provider, w.clock(outage.retry_at)), "outage", provider=provider,
          until=outage.retry_at, count=outage.attempts)


def _record_reachable(w: _Working, provider: str) -> None:
    """A27/A40: any answer proves a provider reachable; its outage ends."""
    if any(record.provider == provider for record in w.outages):
        w.outages = tuple(r for r in w.outages if r.provider != provider)
        w.log(logs.reachable_again(provider), "reachable", provider=provider)


def _lift_passed_limits(w: _Working) -> None:
    """A23: at the start of every turn, limits whose reset has passed are lifted."""
    if any(record.until <= w.now for record in w.limits):
        w.set_limits(tuple(record for record in w.limits if record.until > w.now))


# ------------------------------------------------------------------------------------------------
# Deciding


def _budget_spent(w: _Working) -> bool:
    """THE A43 budget gate (A21, A30): stop when the calls or the call time allowed are used
    up; unlimited when unset."""
    config = w.config
    if config.max_iterations is not None and w.iterations >= config.max_iterations:
        w.log(logs.max_iterations_reached(w.iterations), "max-iterations", count=w.iterations)
    elif config.max_runtime is not None and w.runtime >= config.max_runtime:
        w.log(logs.max_runtime_reached(config.max_runtime.total_seconds() / 60), "max-runtime",
              count=w.iterations)
    else:
        return False
    w.wait_until = None
    w.set_status("stopped")
    return True


def _brought_forward(w: _Working, until: datetime) -> datetime:
    """THE A30 bring-forward: a limited engine back before a failure wait ends brings the next
    attempt forward to its return."""
    for record in w.limits:
        if w.now < record.until < until:
            until = record.until
    return until


def _handover_line(
    w: _Working, member: str, colleague: str, provider: str | None,
    engine: Engine | None = None,
) -> None:
    """THE A15/A36 line of a turn handed to `colleague`: `provider` names the provider that
    cannot be reached (A36), None for a limit (A15); `engine`, the engine that reported it,
    when a call did."""
    if provider is not None:
        w.log(logs.handover_unreachable(member, provider, colleague), "handover-unreachable",
              participant=member, engine=engine, provider=provider, colleague=colleague)
    else:
        w.log(logs.handover_limited(member, colleague), "handover-limited",
              participant=member, engine=engine, colleague=colleague)


def _start(w: _Working, runner: int, position: int, owner: int, turn: bool = True) -> None:
    """Start a call of `runner` on lane entry `position` for `owner`'s turn, and remember where
    `runner` sits and which earlier entries it passed because of a limit. A23/A24/A36: at a
    turn's start (`turn`) a participant silently takes its earliest free entry; coming back to
    an entry it had passed because of a limit is announced (an outage's end is not); a hop
    (A11, A26) has said where it goes already."""
    config = w.config
    if turn and position < w.seats[runner] and comes_back(w.passed[runner], position):
        member = config.team[runner]
        back = config.lanes[runner][position]
        w.log(logs.lifted(member.id, back, back == member.primary), "lifted",
              participant=member.id, engine=back)
    if _budget_spent(w):
        return
    w.seats = _replace(w.seats, runner, position)
    w.passed = _replace(w.passed, runner, w.in_force().limited_before(runner, position))
    runner_id = config.team[runner].id
    engine = config.lanes[runner][position]
    kind: TurnKind = "fresh" if w.fresh or w.last_runner != runner_id else "no-new-input"
    w.fresh = False
    w.last_runner = runner_id
    w.iterations += 1
    w.wait_until = None
    w.call = Call(runner_id, engine, w.now, config.team[owner].id, w.approved is not None)
    w.set_status("running")
    w.effects.append(StartCall(
        w.now, runner_id, engine,
        config.models[runner][position],  # A13: the pin only on the primary
        kind, config.team[owner].id,
    ))


def _keeps_turn(w: _Working, owner: int) -> bool:
    """A16/A22/A35: a pending gate or a gate-approved turn never hands over; nor does a team of
    one (it has no one to hand to)."""
    return (
        len(w.config.team) == 1
        or w.approved is not None
        or w.config.team[owner].id in w.gates
    )


def _back_at(w: _Working, engine: Engine) -> tuple[datetime, str, bool] | None:
    """When a lane entry is free again, what it waits for (engine or provider), and whether a
    limit (rather than only an outage) is involved. None when it is free now."""
    limit = w.in_force().back_at(engine)
    outage = w.outage_of(engine.provider)
    if limit is None and outage is None:
        return None
    if outage is None or (limit is not None and limit >= outage):
        assert limit is not None
        return limit, str(engine), True
    return outage, engine.provider, limit is not None


def _soonest(w: _Working, owner: int | None) -> tuple[datetime, str, bool, dict[str, Any]]:
    """The first instant any entry of `owner` (None: of anyone) is free again (A18: the nearest
    reset among all of them, not the last failure's); what it waits for, written (the engine,
    or the provider when an outage ends first; a tie goes to the smaller name) and as the wait
    line's structured side (`{"engine": ...}` or `{"provider": ...}`); and whether any entry is
    limited. Callers ask only when no entry of theirs is free."""
    config = w.config
    best: tuple[datetime, str] | None = None
    limited = False
    for runner in range(len(config.team)) if owner is None else (owner,):
        for engine in config.lanes[runner]:
            found = _back_at(w, engine)
            if found is None:  # pragma: no cover - callers only ask when nothing is free
                raise AssertionError(f"{engine} is free: nothing to wait for")
            limited = limited or found[2]
            if best is None or (found[0], found[1]) < best:
                best = (found[0], found[1])
    assert best is not None
    until, what = best
    for record in w.limits:  # an engine limited until then, else the provider retried then
        if record.until == until and str(record.engine) == what:
            return until, what, limited, {"engine": record.engine}
    return until, what, limited, {"provider": what}


def _sleep(w: _Working, until: datetime, status: Status, on_message: bool) -> None:
    w.wait_until = until
    w.set_status(status)
    w.effects.append(Sleep(until, status, on_message))


def _wait_for_own(w: _Working, owner: int) -> None:
    """A35 (or A18 for a team of one): nothing of the owner's own is free; wait for it."""
    if len(w.config.team) == 1:
        _wait_for_anyone(w)
        return
    until, what, limited, waited = _soonest(w, owner)
    member = w.config.team[owner].id
    w.log(logs.cannot_hand_over(member, what, w.clock(until)), "wait-own", participant=member,
          until=until, **waited)
    _sleep(w, until, "rate_limited" if limited else "unreachable", False)


def _wait_for_anyone(w: _Working) -> None:
    """A18/A27/A40: nobody can take the turn; sleep until the first entry comes back."""
    until, what, limited, waited = _soonest(w, None)
    if limited:
        w.log(logs.every_participant_limited(what, w.clock(until)), "wait-limited", until=until,
              **waited)
        _sleep(w, until, "rate_limited", False)
    else:
        w.log(logs.no_provider_reachable(w.clock(until)), "wait-unreachable", until=until,
              **waited)
        _sleep(w, until, "unreachable", False)


def _colleague(w: _Working, owner: int) -> tuple[int, int] | None:
    """A15/A33: the first participant after the owner, in team order, with a free entry, on the
    entry `_entry` gives it."""
    found: tuple[int, int] | None = None
    if not w.outages:
        found = w.in_force().colleague(owner)
    else:
        n = len(w.config.team)
        for offset in range(1, n + 1):
            runner = (owner + offset) % n
            free = w.earliest_free(runner)
            if free is not None:
                found = runner, free
                break
    if found is None:
        return None
    return found[0], _entry(w, found[0])


def _entry(w: _Working, runner: int) -> int:
    """THE hop rule (docs/scheduler.md, "Which entry a turn runs on"): the entry `runner` runs a
    turn on after a refused call (A11), an outage (A26) or on a handed-over turn (A15, A36): its
    earliest free entry — with `Policy.headroom` on, the earliest free one that is not near its
    limit while one remains (a turn start applies the same order, `_hand_over_early`). The
    runner has a free entry."""
    position = w.earliest_free(runner)
    assert position is not None
    headroom = w.config.policy.headroom
    if headroom is None:
        return position
    near = _near_limit(w, headroom.hand_over_at)
    if str(w.config.lanes[runner][position]) not in near:
        return position
    cool = _cool_entry(w, runner, near)
    return _least_near(w, runner) if cool is None else cool


def _least_near(w: _Working, runner: int) -> int:
    """`runner`'s free entries are all near their limit: the one read lowest (the highest live
    reading of the windows that hold for it, `windows.reading_of`), the earliest in its chain
    on a tie. The runner has a free entry."""
    lane = w.config.lanes[runner]
    best: tuple[float, int] | None = None
    for at in w.in_force().free_entries[runner]:
        if w.outage_of(lane[at].provider) is not None:
            continue
        level = reading_of(w.readings, lane[at], w.now)
        if best is None or level < best[0]:
            best = (level, at)
    assert best is not None
    return best[1]


def _cool_entry(w: _Working, runner: int, near: frozenset[str]) -> int | None:
    """`runner`'s earliest entry free of limits (A8) and outages (A26) and not near its limit."""
    lane = w.config.lanes[runner]
    for at in w.in_force().free_entries[runner]:
        engine = lane[at]
        if str(engine) not in near and w.outage_of(engine.provider) is None:
            return at
    return None


def _begin_turn(w: _Working) -> None:
    """A23/A24/A33/A34: start (or attempt again) the owed turn, choosing the engine afresh."""
    if w.call is not None:  # resumed or restarted while a call ran: its end decides
        w.set_status("running")
        return
    _lift_passed_limits(w)
    owner = w.owner()
    position = w.earliest_free(owner)
    headroom = w.config.policy.headroom
    if headroom is not None and _hand_over_early(w, owner, position, headroom.hand_over_at):
        return
    if position is not None:
        if headroom is not None:  # every free entry is near, or the earliest is not (`_entry`)
            entry = _entry(w, owner)
            if entry != position and w.seats[owner] != entry:
                member = w.config.team[owner]
                source, target = w.config.lanes[owner][position], w.config.lanes[owner][entry]
                w.log(logs.hop_near_limit(member.id, source, target), "hop-near-limit",
                      participant=member.id, engine=source, target=target)
            position = entry
        _start(w, owner, position, owner)
        return
    if _keeps_turn(w, owner):
        _wait_for_own(w, owner)
        return
    found = _colleague(w, owner)
    if found is None:
        _wait_for_anyone(w)
        return
    runner, runner_position = found
    # A36: no entry of the owner's is limited: it is out only because its providers cannot be
    # reached; else A15, A24.
    unreachable = not w.in_force().has_limited(owner)
    _handover_line(w, w.config.team[owner].id, w.config.team[runner].id,
                   w.config.lanes[owner][0].provider if unreachable else None)
    _start(w, runner, runner_position, owner)


def _hand_over_early(w: _Working, owner: int, position: int | None, threshold: float) -> bool:
    """docs/limits.md, Usage readings (`Policy.headroom`): a turn start prefers an engine that
    is free and not near its limit, by THE order of `_cool_turn`. Whether it started the call;
    False leaves the turn to the rules of A23-A24 and A15-A18 as they are: a warning never makes
    the run wait (with nothing else free, the warned engine runs)."""
    near = _near_limit(w, threshold)
    if not near:
        return False
    config = w.config
    if position is not None and str(config.lanes[owner][position]) not in near:
        return False  # the earliest free entry is not near its limit: as without the knob
    found = _cool_turn(w, owner, owner, near)
    if found is None:
        return False
    runner, entry = found
    member = config.team[owner]
    if runner == owner:
        assert position is not None  # a free entry exists, so the earliest free one does
        if w.seats[owner] != entry:  # written when it moves there, not at every turn (A24)
            source = config.lanes[owner][position]
            target = config.lanes[owner][entry]
            w.log(logs.hop_near_limit(member.id, source, target), "hop-near-limit",
                  participant=member.id, engine=source, target=target)
        _start(w, owner, entry, owner)
        return True
    other = config.team[runner].id
    if position is not None:
        source = config.lanes[owner][position]
        w.log(logs.handover_near_limit(member.id, source, other), "handover-near-limit",
              participant=member.id, engine=source, colleague=other)
    else:  # the owner cannot run at all: the A15/A36 line, as without the knob
        unreachable = not w.in_force().has_limited(owner)
        _handover_line(w, member.id, other,
                       config.lanes[owner][0].provider if unreachable else None)
    _start(w, runner, entry, owner)
    return True


def _cool_turn(w: _Working, owner: int, runner: int, near: frozenset[str]
               ) -> tuple[int, int] | None:
    """THE order of docs/scheduler.md "Which entry a turn runs on" with `Policy.headroom` on,
    for `owner`'s turn that `runner` was to run (the owner itself at a turn start; whoever ran
    the refused call after a limit or an outage): an entry free (A8, A26) and not near its
    limit — `runner`'s earliest such entry (its chain, A10-A13, A11), else the owner's (A33:
    a colleague's chain exhausted gives the turn back to its owner first), else, when the owner
    may hand over (A16, A22: not with a gate, an approved turn or a team of one), the first
    colleague after the owner in team order with one (A15, A33), on its earliest. None: no such
    entry; the turn goes on by the rules without the knob (a warning never makes it wait)."""
    own = _cool_entry(w, runner, near)
    if own is not None:
        return runner, own
    if runner != owner:
        back = _cool_entry(w, owner, near)
        if back is not None:
            return owner, back
    if _keeps_turn(w, owner):
        return None
    n = len(w.config.team)
    for offset in range(1, n):
        other = (owner + offset) % n
        if other == runner:
            continue
        entry = _cool_entry(w, other, near)
        if entry is not None:
            return other, entry
    return None


def _reroute(w: _Working, runner: int, source: Engine, unreachable: bool) -> None:
    """A11-A16, A26, A35, A36: a call reported a limit or an outage and posted nothing; in the
    same step walk the runner's chain, else hand the turn to a colleague, else wait."""
    owner = w.owner()
    member = w.config.team[runner]
    headroom = w.config.policy.headroom
    if headroom is not None and _reroute_cool(w, runner, owner, source, unreachable,
                                              headroom.hand_over_at):
        return
    position = None if w.earliest_free(runner) is None else _entry(w, runner)
    if position is not None:
        target = w.config.lanes[runner][position]
        _hop_line(w, member.id, source, target, unreachable)
        _start(w, runner, position, owner, False)
        return
    found: tuple[int, int] | None = None
    if runner != owner and w.earliest_free(owner) is not None:
        # A colleague's chain is exhausted: the owner itself comes first if it can run now.
        found = (owner, _entry(w, owner))
    if found is None and _keeps_turn(w, owner):
        _wait_for_own(w, owner)
        return
    if found is None:
        found = _colleague(w, owner)
    if found is None:
        _wait_for_anyone(w)
        return
    other, other_position = found
    _handover_line(w, member.id, w.config.team[other].id,
                   source.provider if unreachable else None, source)
    _start(w, other, other_position, owner)


def _hop_line(w: _Working, member_id: str, source: Engine, target: Engine,
              unreachable: bool) -> None:
    """The hop's line: A26's after an outage, A11's after a refused call."""
    if unreachable:
        w.log(logs.hop_unreachable(member_id, source, target), "hop-unreachable",
              participant=member_id, engine=source, target=target)
    else:
        w.log(logs.hop_limited(member_id, source, target), "hop-limited",
              participant=member_id, engine=source, target=target)


def _reroute_cool(w: _Working, runner: int, owner: int, source: Engine, unreachable: bool,
                  threshold: float) -> bool:
    """`Policy.headroom` on: the turn of a refused call goes where `_cool_turn` says, when
    somewhere is free and not near its limit — a hop along the runner's chain (the A11/A26
    line), the owner's own entry or a colleague's: the A15/A36 line when the runner has no free
    entry left, else `<id>: <entry> near its limit — @<other> takes the turn`, naming the
    runner's next free entry, which is near. Whether it started the call."""
    near = _near_limit(w, threshold)
    if not near:
        return False
    found = _cool_turn(w, owner, runner, near)
    if found is None:
        return False
    config = w.config
    member = config.team[runner]
    other, position = found
    target = config.lanes[other][position]
    if other == runner:
        _hop_line(w, member.id, source, target, unreachable)
        _start(w, runner, position, owner, False)
        return True
    colleague = config.team[other].id
    skipped = w.earliest_free(runner)
    if skipped is None:
        _handover_line(w, member.id, colleague, source.provider if unreachable else None,
                       source)
    else:
        near_entry = config.lanes[runner][skipped]
        w.log(logs.handover_near_limit(member.id, near_entry, colleague),
              "handover-near-limit", participant=member.id, engine=near_entry,
              colleague=colleague)
    _start(w, other, position, owner)
    return True


def _what_failed(event: CallEnded) -> str:
    if event.kind == "timeout":
        return logs.timed_out(event.engine.provider)
    if event.kind == "empty":
        return logs.ended_without_post(event.participant)
    return logs.exited(event.engine.provider, event.exit_code if event.exit_code else 1)


def _fail(w: _Working, runner: int, event: CallEnded) -> None:
    """A28-A31/A41: count the failure; pause at the 3rd empty turn or the 12th failure in a row,
    else wait the backoff — cut short by an engine coming back first (A30)."""
    what = _what_failed(event)
    member = w.config.team[runner]
    policy = w.config.policy
    if event.kind == "empty" and w.empties[runner] >= policy.empty_turns:
        w.log(logs.empty_turns(member.id, policy.empty_turns), "empty-turns",
              participant=member.id, count=w.empties[runner])
        w.set_status("paused", "empty")
        return
    if w.failures >= policy.attempts:
        waited = logs.span(policy.give_up_span())
        w.log(logs.gave_up(what, policy.attempts, waited), "gave-up", count=w.failures,
              failure=what)
        w.set_status("paused", "failures")
        return
    if _budget_spent(w):
        return
    # A38: measured from the end of the failed call
    until = _brought_forward(w, w.now + policy.backoff_after(w.failures))
    w.log(logs.failed(member.id, event.engine, what, w.clock(until)), "failed",
          participant=member.id, engine=event.engine, until=until, count=w.failures,
          failure=what)
    _sleep(w, until, "backing_off", True)


# ------------------------------------------------------------------------------------------------
# Handlers, one per (status, event) pair of the table


def _on_run_started(w: _Working, _event: RunStarted) -> None:
    w.failures = 0
    w.empties = (0,) * len(w.empties)
    w.fresh = True
    _begin_turn(w)


def _ended_call(w: _Working, event: CallEnded) -> Call:
    """The call in flight that `event` ends, taken out of the state; its time is call time
    (A21)."""
    call = w.call
    if call is None:
        raise SchedulerProtocolError("CallEnded with no call in flight")
    if call.participant != event.participant or call.engine != event.engine:
        raise SchedulerProtocolError(
            f"CallEnded for {event.participant} on {event.engine}, but the call in flight is "
            f"{call.participant} on {call.engine}"
        )
    w.call = None
    if w.now > call.started_at:
        w.runtime += w.now - call.started_at  # A21: only call time is charged
    return call


def _took_turn(w: _Working, call: Call, runner: int) -> None:
    """A call posted: the counts start again and the turn it ran is taken (A30, A31, A22,
    A33)."""
    team = len(w.config.team)
    w.failures = 0  # A30: a call that works resets the count
    w.empties = _replace(w.empties, runner, 0)  # A31: a post resets the count
    if not call.approved:
        w.due = (w.due + 1) % team  # A33: the owed turn is taken
    else:
        if w.approved == call.turn_owner:
            w.approved = None  # A22: the inserted turn is taken; the owed one still is owed
        if w.config.index[call.turn_owner] == w.due:
            w.due = (w.due + 1) % team  # (... unless it was the owed one)
    w.fresh = True


def _learn_from_call(w: _Working, event: CallEnded, call: Call, runner: int) -> None:
    """What a call's end teaches, in the order A39 writes it: the provider's reachability
    (A26, A40), the post (and its usage reading), a limit (A17: after the post), a failure
    counted (A28, A31)."""
    engine, kind = event.engine, event.kind
    if kind == "network":
        _record_outage(w, engine.provider)
    else:
        _record_reachable(w, engine.provider)  # A40
    if event.posted:
        w.log(logs.posted_via(event.participant, engine), "posted",
              participant=event.participant, engine=engine)
    if event.readings:  # docs/limits.md: learned after the post, each window's (issue 37)
        for reading in event.readings:
            _record_usage(w, engine, reading, w.now, "")
    elif event.usage is not None:
        _record_usage(w, engine, event.usage, w.now, "")
    if event.posted:
        _took_turn(w, call, runner)
    if event.limit is not None:
        _record_limit(w, engine, event.limit.reset_at)  # A17: after the post, if any
    if kind in ("exit", "timeout", "empty"):
        w.failures += 1
        if kind == "empty":
            w.empties = _replace(w.empties, runner, w.empties[runner] + 1)


def _on_call_ended(w: _Working, event: CallEnded) -> None:
    call = _ended_call(w, event)
    runner = w.config.index[event.participant]
    live = w.status == "running"  # paused or stopped: learn, count, decide nothing
    _learn_from_call(w, event, call, runner)
    if not live:
        return
    kind = event.kind
    if kind == "login":
        w.log(logs.not_logged_in(event.engine.provider, event.participant),  # A32
              "not-logged-in", participant=event.participant, engine=event.engine,
              provider=event.engine.provider)
        w.set_status("paused", "login")
        return
    if kind in ("exit", "timeout", "empty"):
        _fail(w, runner, event)
        return
    if _budget_spent(w):
        return
    if event.posted:
        _begin_turn(w)
    else:
        _reroute(w, runner, event.engine, unreachable=kind == "network")


def _on_call_cancelled(w: _Working, _event: CallCancelled) -> None:
    """The call in flight was cut short (a pause or a stop): it has no outcome, so nothing is
    learned and nothing counted; the turn it ran stays owed (A33) and the next resume or start
    begins it again. Its time so far was call time (A21)."""
    call = w.call
    if call is None:
        raise SchedulerProtocolError("CallCancelled with no call in flight")
    w.call = None
    if w.now > call.started_at:
        w.runtime += w.now - call.started_at


def _on_woke(w: _Working, _event: Woke) -> None:
    until = w.wait_until
    if until is not None and w.now < until:  # woke early: keep sleeping (A38: `now >= t`)
        w.effects.append(Sleep(until, w.status, w.status == "backing_off"))
        return
    w.wait_until = None
    _begin_turn(w)


def _on_message_in_backoff(w: _Working, _event: MessageArrived) -> None:
    """A30: a user message ends a failure wait; the next attempt is made at once."""
    w.fresh = True
    w.wait_until = None
    _begin_turn(w)


def _on_message(w: _Working, _event: MessageArrived) -> None:
    """A19: a message does not shorten a limit or outage wait; it is new input (B18)."""
    w.fresh = True


def _on_stop(w: _Working, _event: StopRequested) -> None:
    w.wait_until = None
    w.set_status("stopped")


def _on_pause(w: _Working, _event: PauseRequested) -> None:
    w.wait_until = None
    w.set_status("paused", "operator")


def _on_resume(w: _Working, _event: ResumeRequested) -> None:
    """Resume: 'resume to try again' (A29, A31) starts the counts afresh."""
    w.failures = 0
    w.empties = (0,) * len(w.empties)
    _begin_turn(w)


def _check_member(w: _Working, participant: str) -> None:
    if participant not in w.config.index:
        raise SchedulerProtocolError(f"no participant {participant!r} in the team")


def _on_gate_requested(w: _Working, event: GateRequested) -> None:
    _check_member(w, event.participant)
    w.gates = w.gates | {event.participant}


def _on_gate_approved(w: _Working, event: GateApproved) -> None:
    """A22: the approved participant gets a turn of its own, inserted before the owed one."""
    _check_member(w, event.participant)
    w.gates = w.gates - {event.participant}
    w.approved = event.participant
    if w.status in _WAITS:
        w.wait_until = None
        w.fresh = True
        _begin_turn(w)


def _on_limit_observed(w: _Working, event: LimitObserved) -> None:
    """docs/sharing.md: a limit another run saw joins the registry. A call in flight is not
    touched (A24); a limit or outage wait is decided afresh when the registry changed — a read
    reset that replaced a defaulted one may end it now or earlier (A18, A23) — else slept on; a
    failure wait is brought forward to a limited engine's return (A30); a wait whose deadline
    has come is decided as its wake would (A38); paused or stopped: learn, decide nothing."""
    changed = _observe_limit(w, event)
    status = w.status
    until = w.wait_until
    if until is None:
        return
    if w.now >= until:  # the wait is over (A38): decide as its wake would
        w.wait_until = None
        _begin_turn(w)
        return
    if status == "backing_off":
        _sleep(w, _brought_forward(w, until), status, True)
        return
    if changed:
        mark = len(w.effects)
        w.wait_until = None
        _begin_turn(w)
        if w.call is not None or w.wait_until != until or w.status != status:
            return
        del w.effects[mark:]  # the same wait as before: nothing new to say
    _sleep(w, until, status, False)


def _on_usage_observed(w: _Working, event: UsageObserved) -> None:
    """docs/sharing.md, docs/limits.md: a reading another run saw joins the readings; nothing
    is decided (a reading never starts, moves or ends a wait, and a call in flight is not
    touched, A24)."""
    _record_usage(w, event.engine, event.reading,
                  event.seen if event.seen is not None else w.now, event.source)


def _on_limit_cleared(w: _Working, event: LimitCleared) -> None:
    """docs/cli.md (See and undo a limit): the operator lifted `event.engine`'s limit by
    hand (and, for a provider alone, its outage). A call in flight is not touched (A24); a
    limit or outage wait is decided afresh when the registry changed (the turn may start on
    the engine now, A23), and when that is the same wait nothing new is said; any other wait
    sleeps on, as a message leaves a limit wait (A19), and paused or stopped nothing is
    decided."""
    engine = event.engine
    limits = tuple(r for r in w.limits if r.engine != engine)
    outages = tuple(o for o in w.outages
                    if engine.model is not None or o.provider != engine.provider)
    changed = limits != w.limits or outages != w.outages
    if changed:
        w.set_limits(limits)
        w.outages = outages
    w.log(logs.limit_cleared(engine, changed), "cleared", engine=engine)
    status, until = w.status, w.wait_until
    if not changed or until is None or status not in ("rate_limited", "unreachable"):
        return
    mark = len(w.effects)
    w.wait_until = None
    _begin_turn(w)
    if w.call is None and w.wait_until == until and w.status == status:
        del w.effects[mark:]  # the same wait as before: it goes on, nothing new to say


def _ignore(_w: _Working, _event: Any) -> None:
    """Nothing to do in this status (the table says so explicitly)."""


# ------------------------------------------------------------------------------------------------
# The table (h2): (status, event type) -> (handler, the statuses it may lead to)

Handler = Callable[[_Working, Any], None]
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
        t[(status, LimitCleared)] = (
            _on_limit_cleared,
            _AFTER_DECIDING | {status} if status in ("rate_limited", "unreachable")
            else frozenset((status,)),
        )
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


#: Every legal (status, event) pair, its handler and the statuses it may lead to.
TRANSITIONS: Final[Mapping[tuple[Status, type], tuple[Handler, frozenset[Status]]]] = (
    MappingProxyType(_table())
)


def _refused(state: SchedulerState, event: Event) -> Exception:
    """Why `event` cannot be fed to `state`: not an event at all, or not one for its status."""
    if type(event) not in EVENT_TYPES:
        return TypeError(
            f"step needs an event ({', '.join(t.__name__ for t in EVENT_TYPES)}), "
            f"not {type(event).__name__} {event!r}"
        )
    hint = ""
    if type(event) is RunStarted:  # a state saved mid-run, fed back as it was (A33)
        hint = ("; to go on from a saved state, start from restore_state(config, saved), "
                "which forgets what a restart must rediscover")
    return SchedulerProtocolError(
        f"{type(event).__name__} makes no sense while the run is {state.status}{hint}"
    )


def step(state: SchedulerState, event: Event) -> tuple[SchedulerState, tuple[Effect, ...]]:
    """Feed one event to the scheduler: the new state and what the shell must do, in order."""
    entry = TRANSITIONS.get((state.status, type(event)))
    if entry is None:
        raise _refused(state, event)
    handler, targets = entry
    now = event.now
    last = state.last_event_at
    if last is not None and now < last:
        raise SchedulerProtocolError(
            f"{type(event).__name__} at {now.isoformat()} is earlier than the last event, at "
            f"{last.isoformat()}: time never goes backwards (A38); feed events in the order "
            "they happened, and a clock behind the state (set back, or a restart from a saved "
            "state) at max(now, state.last_event_at) until it catches up (A20)"
        )
    working = _Working.of(state, now)
    handler(working, event)
    if working.status not in targets:  # pragma: no cover - the table and the handlers disagree
        raise AssertionError(
            f"{type(event).__name__} led {state.status} to {working.status}, not in the table"
        )
    return working.made(), tuple(working.effects)


def next_deadline(state: SchedulerState) -> datetime | None:
    """aioquic's `get_timer()`: when the shell must wake the core with `Woke`, if ever."""
    return state.wait_until


def next_entries(state: SchedulerState, now: datetime) -> tuple[int | None, ...]:
    """A23/A24: for each participant, in team order, the lane entry a turn of theirs would start
    on at `now` — the first neither limited (A38: a reset at `t` has passed when `now >= t`) nor
    unreachable — or None when every entry is out (the turn then goes to a colleague, A15, or
    waits, A18). The test `step` applies, for a status or a panel to show the next candidate
    without deciding it again. The state is not changed."""
    working = _Working.of(state, now)
    return tuple(working.earliest_free(runner) for runner in range(len(state.config.team)))


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
