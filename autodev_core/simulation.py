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
from typing import Final

import attrs

from .detection import PreparedClassification, prepare_classification
from .engine import Engine
from .errors import ConfigError
from .scenario import OK_ANSWER, CallAnswer, Scenario
from .scheduler.effects import Effect, Log, Sleep, StartCall
from .scheduler.events import (
    CallEnded,
    Event,
    LimitObserved,
    MessageArrived,
    RunStarted,
    Woke,
    call_ended,
)
from .scheduler.policy import default_limit_wait
from .scheduler.state import SchedulerConfig, SchedulerState, initial_state
from .scheduler.step import step

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


class _Machine:
    """The simulated CLIs: per-engine answer lists consumed in order (SPEC D)."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.zone = scenario.zone
        # SPEC D: per engine exactly (A9), then `default`, then `{post: ok}` — as
        # `Scenario.answer` says, looked up once here rather than at every call.
        self.lists: dict[Engine, tuple[CallAnswer, ...]] = {
            Engine.parse(key): answers for key, answers in scenario.calls
        }
        self.fallback = scenario.default if scenario.default is not None else OK_ANSWER
        self.used: dict[Engine, int] = {}
        self.calls = 0
        self._read: dict[tuple[str, str, str, int | None], PreparedClassification] = {}

    def answer(self, effect: StartCall) -> tuple[datetime, CallEnded]:
        engine = effect.engine
        index = self.used.get(engine, 0)
        self.used[engine] = index + 1
        self.calls += 1
        answers = self.lists.get(engine, ())
        answer = answers[index] if index < len(answers) else self.fallback
        end = effect.at.astimezone(UTC) + answer.duration  # A6: elapsed time
        # SPEC D: a call that timed out was killed by the shell and has no exit code, as a real
        # one has none; its output is classified as such (endless reconnects are an outage, A37).
        exit_code = None if answer.timeout else answer.exit
        # Each distinct answer is read once; only what depends on the instant (a limit's reset)
        # is worked out at each call's end, as `classify_output` would.
        key = (engine.provider, answer.stdout, answer.stderr, exit_code)
        prepared = self._read.get(key)
        if prepared is None:
            prepared = prepare_classification(
                engine.provider, stdout=answer.stdout, stderr=answer.stderr,
                exit_code=exit_code,
            )
            self._read[key] = prepared
        classification = prepared.at(end, self.zone)
        event = call_ended(
            end,
            effect.participant,
            engine,
            classification,
            posted=answer.posted,
            exit_code=exit_code,
            timed_out=answer.timeout,
        )
        return end, event


def simulate(
    scenario: Scenario, *, source: str = "<string>", max_events: int = MAX_EVENTS
) -> SimulationResult:
    """Replay `scenario` in virtual time through `step` until `until`, a pause or a stop.

    Without `until` the run is cut after DEFAULT_HORIZON (`horizon_reached`, and a last line
    says so). A scenario that needs more than `max_events` events, or whose waits would run past
    the end of the calendar, is a ConfigError of one line.
    """
    try:
        return _simulate(scenario, source, max_events)
    except OverflowError:
        raise ConfigError(
            f"start: {scenario.start.isoformat()}: the run's waits would pass the end of the "
            "calendar (year 9999); start earlier",
            source=source,
        ) from None


def _simulate(scenario: Scenario, source: str, max_events: int) -> SimulationResult:
    config = scheduler_config(scenario, source=source)
    state = initial_state(config)
    machine = _Machine(scenario)
    # A6: the virtual clock runs in UTC, so a call's duration and every wait are elapsed time
    # across a clock change; the scenario's zone is used only to read notices and write times.
    start = scenario.start.astimezone(UTC)
    until = (
        scenario.until.astimezone(UTC) if scenario.until is not None else start + DEFAULT_HORIZON
    )
    messages = tuple(m.astimezone(UTC) for m in scenario.messages if m >= start)
    next_message = 0
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
    next_peer = 0
    lines: list[SimulatedLine] = []
    call: tuple[datetime, CallEnded] | None = None
    wake_at: datetime | None = None
    events = 0
    now = start
    same_instant = 0

    def carry_out(effects: tuple[Effect, ...]) -> None:
        nonlocal call, wake_at
        for effect in effects:
            kind = type(effect)
            if kind is Log:
                assert isinstance(effect, Log)
                lines.append(SimulatedLine(at=effect.at, message=effect.message))
            elif kind is StartCall:
                assert isinstance(effect, StartCall)
                call = machine.answer(effect)
            elif kind is Sleep:
                assert isinstance(effect, Sleep)
                wake_at = effect.until

    state, effects = step(state, RunStarted(now=start))
    events += 1
    carry_out(effects)
    while state.status not in ("paused", "stopped"):
        # The next thing to happen: the call's end, the sleep's end, or a user message.
        event: Event
        candidates: list[datetime] = []
        if call is not None:
            candidates.append(call[0])
        if wake_at is not None and state.wait_until is not None:
            candidates.append(wake_at)
        if next_message < len(messages):
            candidates.append(messages[next_message])
        if next_peer < len(peers):
            candidates.append(peers[next_peer][0])
        if not candidates:
            break
        at = min(candidates)
        if at > until:
            break
        if events >= max_events:
            raise ConfigError(
                f"the run needs more than {max_events:,} events (calls, wakes, messages) before "
                f"it ends; it had reached {_stamp(at, config.zone)} — set an earlier 'until' "
                "or give the calls a longer duration",
                source=source,
            )
        if next_peer < len(peers) and peers[next_peer][0] == at:
            report = peers[next_peer][1]
            next_peer += 1
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
        elif call is not None and call[0] == at:
            event = call[1]
            call = None
        elif wake_at is not None and state.wait_until is not None and wake_at == at:
            event = Woke(now=at)
            wake_at = None
        else:
            event = MessageArrived(now=at)
            next_message += 1
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
        state, effects = step(state, event)
        events += 1
        carry_out(effects)
    over = state.status in ("paused", "stopped")
    ended_at = now if over else until
    return SimulationResult(
        lines=tuple(lines), state=state, events=events, calls=machine.calls, ended_at=ended_at,
        horizon_reached=not over and scenario.until is None,
    )


def iter_output(scenario: Scenario, *, source: str = "<string>") -> Iterator[str]:
    """The lines `autodev simulate` prints for `scenario` (SPEC D)."""
    yield from simulate(scenario, source=source).render()
