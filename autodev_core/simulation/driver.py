"""Virtual-time replay of a scenario through the real scheduler (`autodev simulate`, SPEC C6, D).

The driver holds no policy: it feeds the same `step` the shell drives, carries out the effects on
a virtual clock (a call's outcome comes `duration` after it starts; a sleep jumps to its end; a
user message arrives at its time), and classifies each scripted answer exactly as real output
would be (SPEC D): each distinct answer is read once (`prepare_classification`, what
`classify_output` does up to the instant) and a limit's reset resolved at each call's end. It
reads no clock and touches no file: the CLI reads the scenario and prints the lines.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any, Final

import attrs

from .._twins import twin_of
from ..detection.classification import (
    Classification,
    LimitNotice,
    UsageReading,
    limit_notice_of,
)
from ..detection.reader import PreparedClassification, prepare_classification
from ..engine import Engine
from ..errors import ConfigError
from ..scheduler._build import new_call_ended, new_woke
from ..scheduler.effects import Log, Sleep, StartCall
from ..scheduler.events import (
    CallEnded,
    CallKind,
    Event,
    LimitObserved,
    MessageArrived,
    RunStarted,
    call_ended,
)
from ..scheduler.policy import default_limit_wait
from ..scheduler.state import SchedulerConfig, SchedulerState, initial_state
from ..scheduler.step import step
from .scenario import OK_ANSWER, CallAnswer, Scenario, UsagePeriod

#: Without `until`, a simulation ends after this much virtual time if the run never pauses or
#: stops (the SPEC is silent; a week covers every limit and backoff schedule of SPEC A).
DEFAULT_HORIZON: Final = timedelta(days=7)
#: Events at one virtual instant beyond which a scenario is refused: only calls lasting zero
#: seconds, answered without end, can keep the clock from moving.
MAX_EVENTS_AT_ONE_INSTANT: Final = 10_000
#: Events (calls ending, wakes, messages) beyond which a scenario is refused with one line rather
#: than run for minutes and gigabytes: about 70 days of one-minute calls.
MAX_EVENTS: Final = 100_000
_new: Final = object.__new__


def horizon_line(horizon: timedelta = DEFAULT_HORIZON) -> str:
    """The line `simulate` writes when a scenario without `until` is cut at the horizon."""
    days = horizon / timedelta(days=1)
    return (
        f"simulation horizon reached: {days:g} days after start with no 'until' "
        "(the run goes on; set 'until' to see further)"
    )


@attrs.frozen(weakref_slot=False)  # no weak references: see `_LINE_TWIN`
class SimulatedLine:
    """One log line of the run, at the virtual instant it happened."""

    at: datetime
    message: str


#: SimulatedLine's twin (`_twins.twin_of`): `_Pending.lines` builds each line as the scheduler
#: builds its own effects (scheduler/_build.py), filling a twin by plain assignment and then
#: making it a SimulatedLine by setting its `__class__`. Equal, hashing and repr'ing as the
#: checked value (tests/core/test_simulation_builders.py).
_LINE_TWIN: Final[Any] = twin_of(SimulatedLine)


@attrs.frozen
class SimulationResult:
    """What a scenario did: its log lines, the final state, and how much work it took."""

    lines: tuple[SimulatedLine, ...]
    state: SchedulerState
    events: int
    calls: int
    ended_at: datetime
    #: True when a scenario without `until` was cut at DEFAULT_HORIZON while the run went on.
    horizon_reached: bool = False

    @property
    def status(self) -> str:
        return self.state.status

    def render(self) -> tuple[str, ...]:
        """SPEC D's output: `<YYYY-MM-DDTHH:MM:SS local> <message>` lines, then `status: …`."""
        zone = self.state.config.zone
        out = [f"{_stamp(line.at, zone)} {line.message}" for line in self.lines]
        if self.horizon_reached:
            out.append(f"{_stamp(self.ended_at, zone)} {horizon_line()}")
        out.append(f"status: {self.state.status}")
        return tuple(out)


class _Pending:
    """The lines of a result not looked at yet: the log effects `step` returned, in order. The
    `SimulatedLine`s are built from them when `SimulationResult.lines` is first read (a caller
    that only counts events, or reads the state, never pays for them)."""

    __slots__ = ("logs",)

    def __init__(self, logs: list[Log]) -> None:
        self.logs = logs

    def lines(self) -> tuple[SimulatedLine, ...]:
        # SimulatedLine(at=log.at, message=log.message), built as `step` builds its values: a
        # twin filled by plain assignment, then made a SimulatedLine (see `_LINE_TWIN`).
        twin = _LINE_TWIN
        lines: list[Any] = []
        add = lines.append
        for log in self.logs:
            line: Any = _new(twin)
            line.at = log.at
            line.message = log.message
            line.__class__ = SimulatedLine
            add(line)
        return tuple(lines)


#: The slot that holds `SimulationResult.lines` (attrs made it).
_LINES_SLOT: Final[Any] = SimulationResult.__dict__["lines"]


class _LinesOnFirstRead:
    """`SimulationResult.lines`: the slot as attrs made it, except that a result `simulate`
    returns holds its lines pending (`_Pending`) until they are first read; they are then built
    and kept in the slot. Every way of reading a result (the attribute, eq, hash, repr, evolve,
    pickle, `attrs.asdict`) reads the attribute, so it sees the tuple of `SimulatedLine`s a
    result built with them would hold (tests/core/test_simulation_reference.py)."""

    def __get__(self, result: object, owner: type | None = None) -> Any:
        if result is None:
            return _LINES_SLOT
        lines = _LINES_SLOT.__get__(result, owner)
        if lines.__class__ is _Pending:
            lines = lines.lines()
            _LINES_SLOT.__set__(result, lines)
        return lines

    def __set__(self, result: object, lines: Any) -> None:
        _LINES_SLOT.__set__(result, lines)  # only attrs' own `__init__` sets it: frozen

    def __delete__(self, result: object) -> None:
        _LINES_SLOT.__delete__(result)


type.__setattr__(SimulationResult, "lines", _LinesOnFirstRead())


def _stamp(at: datetime, zone: tzinfo) -> str:
    local = at.astimezone(zone)
    return (
        f"{local.year:04d}-{local.month:02d}-{local.day:02d}T"
        f"{local.hour:02d}:{local.minute:02d}:{local.second:02d}"
    )


def scheduler_config(scenario: Scenario, *, source: str = "<string>") -> SchedulerConfig:
    """The scheduler's configuration for a scenario; a team that cannot run is a ConfigError."""
    try:
        return SchedulerConfig(
            team=scenario.team,
            installed=scenario.installed,
            timezone=scenario.timezone,
            max_iterations=scenario.max_iterations,
            policy=scenario.policy,
        )
    except ValueError as exc:
        raise ConfigError(f"team: {exc}", source=source) from None


class _Reply:
    """One distinct scripted answer on one engine, read once (SPEC D): what its output means
    (resolved at each call's end when it depends on the instant) and, per participant, how it
    ends that participant's calls."""

    __slots__ = ("ended", "exit_code", "fixed", "limit", "posted", "prepared", "timed_out")

    def __init__(
        self, answer: CallAnswer, exit_code: int | None, prepared: PreparedClassification
    ) -> None:
        self.exit_code = exit_code
        self.posted = answer.posted
        self.timed_out = answer.timeout
        self.prepared = prepared
        #: The classification when it is the same at every instant (no limit in the output).
        self.fixed: Classification | None = getattr(prepared, "fixed", None)
        #: Else a limit is in the output and is read at every instant: its notice and reset,
        #: read as `prepared.at` reads them (None: only `prepared.at` knows how).
        self.limit: Any = getattr(prepared, "limit", None) if self.fixed is None else None
        #: Per participant, the fields of the `CallEnded` this answer ends its calls with,
        #: after `now` and before `limit` (see `_Machine.answer`).
        self.ended: dict[str, tuple[str, Engine, CallKind, bool]] = {}


class _Lane:
    """One engine's scripted answers, how many were used, and what each distinct one means."""

    __slots__ = ("answers", "count", "replies", "used")

    def __init__(self, answers: tuple[CallAnswer, ...]) -> None:
        self.answers = answers
        self.count = len(answers)
        self.used = 0
        # Keyed by the answer's fields as written (its duration aside).
        self.replies: dict[tuple[str, str, int, bool, str | None], _Reply] = {}


class _Period:
    """One usage period in UTC, with the reading or the limit notice it gives (built once)."""

    __slots__ = ("end", "limit", "reading", "start")

    def __init__(self, period: UsagePeriod) -> None:
        self.start = period.start.astimezone(UTC)
        self.end = period.end.astimezone(UTC)
        self.reading: UsageReading | None = None
        self.limit: LimitNotice | None = None
        if period.warning is None:
            self.limit = LimitNotice(
                provider=period.provider, reset_at=self.end,
                text=f"usage limit (scenario usage period until {self.end.isoformat()})")
        else:
            self.reading = UsageReading(
                provider=period.provider, utilization=period.warning, window=period.window,
                resets_at=period.reset, threshold=period.threshold)


class _Machine:
    """The simulated CLIs: per-engine answer lists consumed in order (SPEC D)."""

    def __init__(self, scenario: Scenario) -> None:
        self.zone = scenario.zone
        # SPEC D: per engine exactly (A9), then `default`, then `{post: ok}` — as
        # `Scenario.answer` says, looked up once here rather than at every call.
        self.lanes: dict[tuple[str, str | None], _Lane] = {}
        for key, answers in scenario.calls:
            engine = Engine.parse(key)
            self.lanes[engine.provider, engine.model] = _Lane(answers)
        self.fallback = scenario.default if scenario.default is not None else OK_ANSWER
        self._read: dict[tuple[str, str, str, int | None], PreparedClassification] = {}
        # Issue 25: each provider's usage periods, in time order (UTC), when the scenario has
        # any; without them `answer` is the scripted answer alone, as it always was.
        self.usage: dict[str, list[_Period]] = {}
        for period in sorted(scenario.usage, key=lambda p: p.start.astimezone(UTC)):
            self.usage.setdefault(period.provider, []).append(_Period(period))
        if self.usage:
            self.answer = self._metered  # type: ignore[method-assign]

    @property
    def calls(self) -> int:
        return sum(lane.used for lane in self.lanes.values())

    def _answer(self, effect: StartCall) -> CallEnded:
        """How the call `effect` starts ends: at its `now`, `duration` after the start (the
        scripted answer, SPEC D; `answer` unless the scenario scripts usage periods)."""
        engine = effect.engine
        lane = self.lanes.get((engine.provider, engine.model))
        if lane is None:
            lane = self.lanes[engine.provider, engine.model] = _Lane(())
        index = lane.used
        lane.used = index + 1
        answer = lane.answers[index] if index < lane.count else self.fallback
        reply = lane.replies.get(
            (answer.stdout, answer.stderr, answer.exit, answer.timeout, answer.post)
        )
        if reply is None:
            reply = self._reply(lane, engine.provider, answer)
        end = effect.at
        if end.tzinfo is not UTC:
            end = end.astimezone(UTC)
        end += answer.duration  # A6: elapsed time
        # The same answer ends the same participant's calls on this engine the same way: the
        # kind follows the classification's kind (the same at every instant: a limit is in the
        # output or it is not), the post and the exit, not the instant. The first such call's
        # event is built and checked by `call_ended`; later ones are built from its fields as
        # `step` builds its own values (scheduler/_build.py), with only the instant and a
        # limit's notice new (tests/core/test_simulation_reads_once.py,
        # test_simulation_reference.py).
        known = reply.ended.get(effect.participant)
        if known is not None:
            participant, engine, kind, posted = known
            limit = reply.limit
            if limit is None:
                fixed = reply.fixed
                if fixed is not None:
                    return new_call_ended(end, participant, engine, kind, posted, None,
                                          reply.exit_code, fixed.usage)
            elif end.__class__ is datetime and end.tzinfo is UTC:  # what `prepared.at` checks
                # Each distinct answer is read once; only what depends on the instant (a
                # limit's reset) is worked out at each call's end, as `classify_output` would.
                read = limit.read(end, self.zone)
                if read is not None:  # always: a limit is in the output
                    # The provider was checked when the answer was read, the reset built by a
                    # reader: `prepared.at`'s notice, not checked again.
                    return new_call_ended(end, participant, engine, kind, posted,
                                          limit_notice_of(limit.provider, read[0], read[1]),
                                          reply.exit_code)
        classification = reply.fixed or reply.prepared.at(end, self.zone)
        event = call_ended(
            end,
            effect.participant,
            engine,
            classification,
            posted=reply.posted,
            exit_code=reply.exit_code,
            timed_out=reply.timed_out,
        )
        if known is None and event.exit_code == reply.exit_code:
            reply.ended[effect.participant] = (
                event.participant, event.engine, event.kind, event.posted
            )
        return event

    def _metered(self, effect: StartCall) -> CallEnded:
        """Issue 25: the scripted answer, met by the account's usage periods. A call running or
        starting in a limit period is refused with a limit until the period's end, when the
        period begins (or at once); a call that ends healthy in a warning period carries the
        period's usage reading, as a real call's structured output would (A2: no limit)."""
        engine = effect.engine
        periods = self.usage.get(engine.provider)
        if periods is None:
            return self._answer(effect)
        start = effect.at.astimezone(UTC)
        lane = self.lanes.get((engine.provider, engine.model))
        index = lane.used if lane is not None else 0
        scripted = (lane.answers[index] if lane is not None and index < lane.count
                    else self.fallback)
        end = start + scripted.duration
        for period in periods:
            if period.start > start and period.start >= end:
                break  # in time order: none later can meet this call
            if period.limit is not None and (period.start <= start < period.end
                                             or start < period.start < end):
                if lane is None:
                    lane = self.lanes[engine.provider, engine.model] = _Lane(())
                lane.used = index + 1  # the scripted answer is spent on the refusal
                return call_ended(
                    max(start, period.start), effect.participant, engine,
                    Classification("limit", period.limit, period.limit.text),
                    posted=False, exit_code=1,
                )
        event = self._answer(effect)
        if event.kind in ("limit", "network", "login"):
            return event  # no healthy call: no reading (A2)
        at = event.now
        for period in periods:
            if period.start > at:
                break
            if period.reading is not None and at < period.end:
                return attrs.evolve(event, usage=period.reading)
        return event

    answer = _answer

    def _reply(self, lane: _Lane, provider: str, answer: CallAnswer) -> _Reply:
        # SPEC D: a call that timed out was killed by the shell and has no exit code, as a real
        # one has none; its output is classified as such (endless reconnects are an outage,
        # A37).
        exit_code = None if answer.timeout else answer.exit
        reply = lane.replies[
            answer.stdout, answer.stderr, answer.exit, answer.timeout, answer.post
        ] = _Reply(answer, exit_code, self._prepared(provider, answer, exit_code))
        return reply

    def _prepared(
        self, provider: str, answer: CallAnswer, exit_code: int | None
    ) -> PreparedClassification:
        key = (provider, answer.stdout, answer.stderr, exit_code)
        prepared = self._read.get(key)
        if prepared is None:
            prepared = self._read[key] = prepare_classification(
                provider, stdout=answer.stdout, stderr=answer.stderr, exit_code=exit_code
            )
        return prepared


def simulate(
    scenario: Scenario, *, source: str = "<string>", max_events: int = MAX_EVENTS
) -> SimulationResult:
    """Replay `scenario` in virtual time through `step` until `until`, a pause or a stop.

    Without `until` the run is cut after DEFAULT_HORIZON (`horizon_reached`, and a last line
    says so). A scenario that needs more than `max_events` events, or whose waits would run past
    the end of the calendar, is a ConfigError of one line.
    """
    return _guarded(scenario, source, max_events, None)


def _guarded(
    scenario: Scenario, source: str, max_events: int, tally: Tally | None
) -> SimulationResult:
    try:
        return _simulate(scenario, source, max_events, tally)
    except OverflowError:
        raise ConfigError(
            f"start: {scenario.start.isoformat()}: the run's waits would pass the end of the "
            "calendar (year 9999); start earlier",
            source=source,
        ) from None


class Tally:
    """Issue 25: what a run's limits cost, counted as `simulate` goes (`compare_headroom`):
    posts, calls, calls refused by a limit, of those the ones a limit cut short after they had
    run a while (a wasted turn), the call time they lost, and the time the run spent waiting for
    a limit (`rate_limited`: every participant limited)."""

    __slots__ = ("calls", "cut_short", "lost", "posts", "refused", "started", "waiting")

    def __init__(self) -> None:
        self.posts = 0
        self.calls = 0
        self.refused = 0
        self.cut_short = 0
        self.lost = timedelta(0)
        self.waiting = timedelta(0)
        self.started: datetime | None = None

    def ended(self, call: CallEnded) -> None:
        self.posts += call.posted
        if call.kind == "limit" and self.started is not None:
            self.refused += 1
            ran = call.now - self.started
            if ran > timedelta(0):
                self.cut_short += 1
                self.lost += ran


def _simulate(
    scenario: Scenario, source: str, max_events: int, tally: Tally | None = None
) -> SimulationResult:
    config = scheduler_config(scenario, source=source)
    state = initial_state(config)
    machine = _Machine(scenario)
    # A6: the virtual clock runs in UTC, so a call's duration and every wait are elapsed time
    # across a clock change; the scenario's zone is used only to read notices and write times.
    start = scenario.start.astimezone(UTC)
    until = (
        scenario.until.astimezone(UTC) if scenario.until is not None else start + DEFAULT_HORIZON
    )
    messages = [m.astimezone(UTC) for m in scenario.messages if m >= start]
    messages.reverse()  # the next one last, popped when it arrives
    # Issue 14: another run's reports, in time order; one at t is learned before anything else
    # that happens at t (A39: what was learned comes first).
    peers = sorted(
        (
            (r.at.astimezone(UTC), r)
            for r in scenario.peers
            if r.at.astimezone(UTC) >= start
        ),
        key=lambda pair: pair[0],
    )
    peers.reverse()  # the next one last, popped when it is learned
    logs: list[Log] = []  # the result's lines, built when first read (`_Pending`)
    add_log = logs.append
    answer = machine.answer
    call_at: datetime | None = None
    call: CallEnded | None = None
    wake_at: datetime | None = None
    events = 0
    now = start
    same_instant = 0
    event: Event = RunStarted(now=start)
    while True:
        state, effects = step(state, event)
        events += 1
        for effect in effects:
            kind = type(effect)  # the classes step builds, never subclassed
            if kind is Log:
                add_log(effect)  # type: ignore[arg-type]
            elif kind is StartCall:
                call = answer(effect)  # type: ignore[arg-type]
                call_at = call.now
                if tally is not None:
                    tally.started = effect.at  # type: ignore[union-attr]
            elif kind is Sleep:
                wake_at = effect.until  # type: ignore[union-attr]
        if state.status in ("paused", "stopped"):
            break
        # The next thing to happen: the call's end, the sleep's end, a user message or another
        # run's report; at one instant a report first, then the call, the wake, a message.
        at = call_at
        if wake_at is not None and state.wait_until is not None and (at is None or wake_at < at):
            at = wake_at
        if messages and (at is None or messages[-1] < at):
            at = messages[-1]
        if peers and (at is None or peers[-1][0] <= at):
            at = peers[-1][0]
        if tally is not None and state.status == "rate_limited":
            tally.waiting += (until if at is None or at > until else at) - now
        if at is None or at > until:
            break
        if events >= max_events:
            raise ConfigError(
                f"the run needs more than {max_events:,} events (calls, wakes, messages) before "
                f"it ends; it had reached {_stamp(at, config.zone)} — set an earlier 'until' "
                "or give the calls a longer duration",
                source=source,
            )
        if peers and peers[-1][0] == at:
            report = peers.pop()[1]
            reset = report.reset
            event = LimitObserved(
                now=at,
                engine=report.engine,
                until=reset if reset is not None else at + default_limit_wait(
                    report.engine.provider
                ),
                read=reset is not None,
                seen=at,
                source=report.source,
            )
        elif call is not None and call_at == at:
            event = call
            call_at = call = None
            if tally is not None:
                tally.ended(event)
        elif wake_at is not None and state.wait_until is not None and wake_at == at:
            event = new_woke(at)  # `at` is a Sleep's `until`: an aware UTC instant
            wake_at = None
        else:
            event = MessageArrived(now=at)
            messages.pop()
        if at == now:
            same_instant += 1
            if same_instant > MAX_EVENTS_AT_ONE_INSTANT:
                raise ConfigError(
                    f"calls: time never moves past {at.isoformat()} "
                    "(calls lasting 0 seconds answer without end); give them a duration",
                    source=source,
                )
        else:
            now = at
            same_instant = 0
    over = state.status in ("paused", "stopped")
    ended_at = now if over else until
    if tally is not None:
        tally.calls = machine.calls
    return SimulationResult(
        lines=_Pending(logs),  # type: ignore[arg-type]  # SimulationResult.lines builds them
        state=state, events=events, calls=machine.calls, ended_at=ended_at,
        horizon_reached=not over and scenario.until is None,
    )


def iter_output(scenario: Scenario, *, source: str = "<string>") -> Iterator[str]:
    """The lines `autodev simulate` prints for `scenario` (SPEC D)."""
    yield from simulate(scenario, source=source).render()
