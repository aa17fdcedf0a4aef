"""Driving one run of the scheduler by hand, for the rule tests (SPEC A8-A43): `member(...)` makes
a participant, `Run(...)` starts, ends calls, wakes and feeds events, `at(h, m)` is an instant of
the first test day. T0 (helpers.clock) is that day's 09:00 UTC, the instant every rule test
starts from."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from helpers.clock import T0

from autodev_core.detection.classification import LimitNotice
from autodev_core.engine import Engine
from autodev_core.participant import Participant
from autodev_core.scheduler import (
    CallEnded,
    Effect,
    Event,
    Log,
    RunStarted,
    SchedulerConfig,
    SchedulerState,
    Sleep,
    StartCall,
    Woke,
    initial_state,
    step,
)

MINUTE = timedelta(minutes=1)


def member(
    id: str, provider: str, *chain: str, model: str | None = None, gate: bool = False
) -> Participant:
    return Participant(
        id=id,
        provider=provider,
        model=model,
        failover=tuple(Engine.parse(entry) for entry in chain),
        gate=gate,
    )


class Run:
    """Drive one run: `start()`, then `end(...)` the call in flight, `wake()`, `feed(...)`."""

    def __init__(
        self,
        *team: Participant,
        installed: tuple[str, ...] = ("claude", "codex", "agy"),
        timezone: str = "UTC",
        max_iterations: int | None = None,
        max_runtime: timedelta | None = None,
        start: datetime = T0,
    ) -> None:
        self.config = SchedulerConfig(
            team=team,
            installed=frozenset(installed),
            timezone=timezone,
            max_iterations=max_iterations,
            max_runtime=max_runtime,
        )
        self.state: SchedulerState = initial_state(self.config)
        self.now = start
        self.effects: tuple[Effect, ...] = ()
        self.all_lines: list[str] = []

    def feed(self, event: Event) -> list[str]:
        self.state, self.effects = step(self.state, event)
        lines = [e.message for e in self.effects if isinstance(e, Log)]
        self.all_lines.extend(lines)
        return lines

    def start(self) -> list[str]:
        return self.feed(RunStarted(now=self.now))

    def end(
        self,
        kind: str = "post",
        *,
        after: timedelta = MINUTE,
        reset: datetime | None = None,
        posted: bool | None = None,
        exit_code: int | None = None,
    ) -> list[str]:
        call = self.state.call
        assert call is not None, "no call in flight"
        self.now += after
        limit = None
        if kind == "limit":
            limit = LimitNotice(provider=call.engine.provider, reset_at=reset, text="limit")
        return self.feed(
            CallEnded(
                now=self.now,
                participant=call.participant,
                engine=call.engine,
                kind=kind,  # type: ignore[arg-type]
                posted=(kind == "post") if posted is None else posted,
                limit=limit,
                exit_code=exit_code if exit_code is not None else (1 if kind == "exit" else None),
            )
        )

    def wake(self, at: datetime | None = None) -> list[str]:
        deadline = self.state.wait_until
        assert deadline is not None, "not waiting"
        self.now = at if at is not None else deadline
        return self.feed(Woke(now=self.now))

    @property
    def call(self) -> StartCall:
        starts = [e for e in self.effects if isinstance(e, StartCall)]
        assert len(starts) == 1, self.effects
        return starts[0]

    @property
    def sleep(self) -> Sleep:
        sleeps = [e for e in self.effects if isinstance(e, Sleep)]
        assert len(sleeps) == 1, self.effects
        return sleeps[0]

    @property
    def runner(self) -> tuple[str, str]:
        call = self.state.call
        assert call is not None
        return call.participant, str(call.engine)


def at(hour: int, minute: int = 0, day: int = 1) -> datetime:
    return datetime(2026, 12, day, hour, minute, tzinfo=UTC)
