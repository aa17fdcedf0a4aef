"""Virtual-time replay of a scenario through the real scheduler (`autodev simulate`, SPEC C6, D).

The driver holds no policy: it feeds the same `step` the shell drives, carries out the effects on
a virtual clock (a call's outcome comes `duration` after it starts; a sleep jumps to its end; a
user message arrives at its time), and classifies each scripted answer exactly as real output
would be (SPEC D): each distinct answer is read once (`prepare_classification`, what
`classify_output` does up to the instant) and a limit's reset resolved at each call's end. It
reads no clock and touches no file: the CLI reads the scenario and prints the lines.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, tzinfo
from itertools import islice
from typing import Final

import attrs

from ..detection.classification import Classification, LimitNotice, UsageReading
from ..detection.reader import PreparedClassification, prepare_classification
from ..engine import Engine
from ..errors import ConfigError
from ..scheduler.effects import Log, Sleep, StartCall
from ..scheduler.events import (
    CallEnded,
    Event,
    LimitObserved,
    MessageArrived,
    RunStarted,
    Woke,
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


def horizon_line(horizon: timedelta = DEFAULT_HORIZON) -> str:
    """The line `simulate` writes when a scenario without `until` is cut at the horizon."""
    days = horizon / timedelta(days=1)
    return (
        f"simulation horizon reached: {days:g} days after start with no 'until' "
        "(the run goes on; set 'until' to see further)"
    )


@attrs.frozen
class SimulatedLine:
    """One log line of the run, at the virtual instant it happened."""

    at: datetime
    message: str


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
    """One distinct scripted answer on one engine, read once (SPEC D): what its output means,
    resolved at each call's end when it depends on the instant (a limit's reset)."""

    __slots__ = ("exit_code", "fixed", "posted", "prepared", "timed_out")

    def __init__(
        self, answer: CallAnswer, exit_code: int | None, prepared: PreparedClassification
    ) -> None:
        self.exit_code = exit_code
        self.posted = answer.posted
        self.timed_out = answer.timeout
        self.prepared = prepared
        #: The classification when it is the same at every instant (no limit in the output).
        self.fixed: Classification | None = getattr(prepared, "fixed", None)


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

    __slots__ = ("end", "limit", "reading", "readings", "start")

    def __init__(self, period: UsagePeriod) -> None:
        self.start = period.start.astimezone(UTC)
        self.end = period.end.astimezone(UTC)
        self.reading: UsageReading | None = None
        self.readings: tuple[UsageReading, ...] = ()
        self.limit: LimitNotice | None = None
        if period.warning is None:
            self.limit = LimitNotice(
                provider=period.provider, reset_at=self.end,
                text=f"usage limit (scenario usage period until {self.end.isoformat()})")
        else:
            self.reading = UsageReading(
                provider=period.provider, utilization=period.warning, window=period.window,
                resets_at=period.reset, threshold=period.threshold)
            self.readings = (self.reading,)


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
        # docs/limits.md: each provider's usage periods, in time order (UTC), when the scenario has
        # any; without them `answer` is the scripted answer alone, as it always was.
        self.usage: dict[str, list[_Period]] = {}
        for period in sorted(scenario.usage, key=lambda p: p.start.astimezone(UTC)):
            self.usage.setdefault(period.provider, []).append(_Period(period))
        # A provider's periods never overlap, so their ends are in time order too: a call looks
        # only from the first period not over when it starts (bisect), not from the first.
        self.ends: dict[str, list[datetime]] = {
            provider: [p.end for p in periods] for provider, periods in self.usage.items()}
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
        return call_ended(
            end,
            effect.participant,
            engine,
            reply.fixed or reply.prepared.at(end, self.zone),
            posted=reply.posted,
            exit_code=reply.exit_code,
            timed_out=reply.timed_out,
        )

    def _metered(self, effect: StartCall) -> CallEnded:
        """docs/limits.md: the scripted answer, met by the account's usage periods. A call
        running or starting in a limit period is refused with a limit until the period's end,
        when the period begins (or at once); a call that ends healthy in a warning period
        carries the period's usage reading, as a real call's structured output would (A2: no
        limit)."""
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
        ends = self.ends[engine.provider]
        for period in islice(periods, bisect_right(ends, start), None):
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
        for period in islice(periods, bisect_right(ends, at), None):
            if period.start > at:
                break
            if period.reading is not None and at < period.end:
                return attrs.evolve(event, usage=period.reading, readings=period.readings)
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
    """docs/limits.md: what a run's limits cost, counted as `simulate` goes (`compare_headroom`):
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


class _Run:
    """One simulation in progress: the scheduler's state, the simulated CLIs, and what is still
    to come on the virtual clock — the call in flight, the end of a sleep, user messages and
    other runs' reports."""

    def __init__(self, scenario: Scenario, source: str, max_events: int,
                 tally: Tally | None) -> None:
        self.scenario, self.source, self.max_events, self.tally = (
            scenario, source, max_events, tally)
        self.config = scheduler_config(scenario, source=source)
        self.state = initial_state(self.config)
        self.machine = _Machine(scenario)
        # A6: the virtual clock runs in UTC, so a call's duration and every wait are elapsed
        # time across a clock change; the scenario's zone only reads notices and writes times.
        self.start = self.now = scenario.start.astimezone(UTC)
        self.until = (scenario.until.astimezone(UTC) if scenario.until is not None
                      else self.start + DEFAULT_HORIZON)
        # The next one last, popped when it arrives.
        self.messages = [m.astimezone(UTC) for m in scenario.messages if m >= self.start][::-1]
        # docs/sharing.md: another run's reports, in time order; one at t is learned before
        # anything else that happens at t (A39: what was learned comes first).
        self.peers = sorted(
            ((r.at.astimezone(UTC), r) for r in scenario.peers
             if r.at.astimezone(UTC) >= self.start),
            key=lambda pair: pair[0],
        )[::-1]
        self.logs: list[Log] = []
        self.call: CallEnded | None = None
        self.wake_at: datetime | None = None
        self.events = 0
        self.same_instant = 0

    def feed(self, event: Event) -> None:
        """Step the scheduler with `event` and carry out what it asks for."""
        self.state, effects = step(self.state, event)
        self.events += 1
        for effect in effects:
            if isinstance(effect, Log):
                self.logs.append(effect)
            elif isinstance(effect, StartCall):
                self.call = self.machine.answer(effect)
                if self.tally is not None:
                    self.tally.started = effect.at
            elif isinstance(effect, Sleep):
                self.wake_at = effect.until

    def next_instant(self) -> datetime | None:
        """When the next thing happens: the call's end, the sleep's end, a user message or
        another run's report (None: nothing will)."""
        at = self.call.now if self.call is not None else None
        wake_at = self.waking()
        if wake_at is not None and (at is None or wake_at < at):
            at = wake_at
        if self.messages and (at is None or self.messages[-1] < at):
            at = self.messages[-1]
        if self.peers and (at is None or self.peers[-1][0] <= at):
            at = self.peers[-1][0]
        return at

    def waking(self) -> datetime | None:
        return self.wake_at if self.state.wait_until is not None else None

    def event_at(self, at: datetime) -> Event:
        """What happens at `at`: at one instant a report first, then the call's end, the wake,
        a message."""
        if self.peers and self.peers[-1][0] == at:
            report = self.peers.pop()[1]
            reset = report.reset
            return LimitObserved(
                now=at, engine=report.engine,
                until=reset if reset is not None else at + default_limit_wait(
                    report.engine.provider),
                read=reset is not None, seen=at, source=report.source,
            )
        if self.call is not None and self.call.now == at:
            event, self.call = self.call, None
            if self.tally is not None:
                self.tally.ended(event)
            return event
        if self.waking() == at:
            self.wake_at = None
            return Woke(now=at)
        self.messages.pop()
        return MessageArrived(now=at)

    def check_progress(self, at: datetime) -> None:
        """Refuse a scenario that needs too many events, or whose clock never moves on."""
        if self.events >= self.max_events:
            raise ConfigError(
                f"the run needs more than {self.max_events:,} events (calls, wakes, messages) "
                f"before it ends; it had reached {_stamp(at, self.config.zone)} — set an "
                "earlier 'until' or give the calls a longer duration",
                source=self.source,
            )

    def move_to(self, at: datetime) -> None:
        if at != self.now:
            self.now = at
            self.same_instant = 0
            return
        self.same_instant += 1
        if self.same_instant > MAX_EVENTS_AT_ONE_INSTANT:
            raise ConfigError(
                f"calls: time never moves past {at.isoformat()} "
                "(calls lasting 0 seconds answer without end); give them a duration",
                source=self.source,
            )

    def result(self) -> SimulationResult:
        over = self.state.status in ("paused", "stopped")
        if self.tally is not None:
            self.tally.calls = self.machine.calls
        return SimulationResult(
            lines=tuple(SimulatedLine(at=log.at, message=log.message) for log in self.logs),
            state=self.state, events=self.events, calls=self.machine.calls,
            ended_at=self.now if over else self.until,
            horizon_reached=not over and self.scenario.until is None,
        )


def _simulate(
    scenario: Scenario, source: str, max_events: int, tally: Tally | None = None
) -> SimulationResult:
    run = _Run(scenario, source, max_events, tally)
    event: Event = RunStarted(now=run.start)
    while True:
        run.feed(event)
        if run.state.status in ("paused", "stopped"):
            break
        at = run.next_instant()
        if tally is not None and run.state.status == "rate_limited":
            tally.waiting += (run.until if at is None or at > run.until else at) - run.now
        if at is None or at > run.until:
            break
        run.check_progress(at)
        event = run.event_at(at)
        run.move_to(at)
    return run.result()


def iter_output(scenario: Scenario, *, source: str = "<string>") -> Iterator[str]:
    """The lines `autodev simulate` prints for `scenario` (SPEC D)."""
    yield from simulate(scenario, source=source).render()
