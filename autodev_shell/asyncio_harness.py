"""`OrchestratorMachine` for an asyncio loop, on a virtual clock (SPEC 0.4).

The shipped machine drives a synchronous contract: `handle(event)` returns the events its effects
led to. An orchestrator written with asyncio has a coroutine `handle`, tasks beside it (a
heartbeat, a message listener, a write left to finish) and `await asyncio.sleep` for its waits;
this module runs such a loop under the same machine, with the same checks:

- `VirtualClock` and `virtual_event_loop(clock)`: an asyncio event loop whose time is virtual.
  When no callback is ready it jumps at once to its next timer, so `await asyncio.sleep(3600)`
  takes no real time while tasks still interleave as they would on the wall clock; awaiting
  something nothing will ever finish raises `VirtualTimeDeadlock` instead of hanging.
- `AsyncWorld`: the harness's `World` on that clock, with the same interface, awaited where it
  waits: `await world.call(effect, prompt)` runs the stand-in CLI for the call's duration in
  virtual time (other tasks run meanwhile), `await world.sleep_until(t)` sleeps,
  `world.post(participant, text)` appends a post, `world.log(message)` writes a line,
  `world.now` is the time.
- `AsyncOrchestratorMachine`: set `make_async(config, world)` to build your loop (and
  `restart_async(crashed, config, world)` to crash and restart it); the machine calls your
  coroutine `handle` through the event loop, one event at a time. A crash cancels every task
  your loop left running, as a dying process loses them.

Why here, not in `autodev_core.testing`: the core is pure (SPEC 0.1) and
`tests/project/test_purity.py` forbids `asyncio` anywhere in `autodev_core`, `testing/`
included; an event loop runs things, which is the shell's part. The machine itself, its checks
and the CLI outputs are the core's. This module imports hypothesis (the `test` extra). See
docs/orchestrators.md, "An asyncio loop".
"""

from __future__ import annotations

import asyncio
import inspect
import selectors
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime, timedelta
from typing import Any, ClassVar, Protocol

from hypothesis import strategies as st

from autodev_core.scheduler.effects import StartCall
from autodev_core.scheduler.events import Event
from autodev_core.scheduler.state import SchedulerConfig, SchedulerState
from autodev_core.testing.orchestrator import (
    CliOutput,
    Orchestrator,
    OrchestratorMachine,
    World,
)


class VirtualTimeDeadlock(RuntimeError):
    """The loop waits for something no task and no timer will ever bring."""


class VirtualClock:
    """Virtual time: `start` plus the seconds the event loop has jumped over."""

    def __init__(self, start: datetime) -> None:
        self.start = start
        self.elapsed = 0.0

    @property
    def now(self) -> datetime:
        return self.start + timedelta(seconds=self.elapsed)

    def advance(self, seconds: float) -> None:
        if seconds > 0:
            self.elapsed += seconds


class _VirtualSelector(selectors.DefaultSelector):
    """The loop's selector: it never blocks. Ready file descriptors (the loop's own wake-up
    pipe) are returned at once; otherwise the wait the loop asked for passes in virtual time."""

    def __init__(self, clock: VirtualClock) -> None:
        super().__init__()
        self._clock = clock

    def select(
        self, timeout: float | None = None
    ) -> list[tuple[selectors.SelectorKey, int]]:
        ready = super().select(0)
        if ready or (timeout is not None and timeout <= 0):
            return ready
        if timeout is None:
            raise VirtualTimeDeadlock(
                "the event loop has nothing to run and no timer: your loop awaits something "
                "that never comes (a future nobody sets, a queue nobody fills, real I/O or a "
                "thread — use the world's clock and CLIs only)"
            )
        self._clock.advance(timeout)
        return ready


#: How close to its time a timer is run. asyncio runs a timer once `when < time() + resolution`
#: and takes the monotonic clock's resolution (1 ns): past 2**24 s (194 days) of virtual time a
#: float's step is wider than 2 ns, `time() + 1e-9 == time()`, and a timer due exactly now is
#: never run while the selector, asked to wait 0 s, moves nothing — the loop spins for ever. A
#: millisecond stays wider than a float's step for 30,000 years of virtual time.
VIRTUAL_RESOLUTION = 1e-3


class _VirtualLoop(asyncio.SelectorEventLoop):
    def __init__(self, clock: VirtualClock) -> None:
        self.virtual_clock = clock
        super().__init__(_VirtualSelector(clock))
        self._clock_resolution = VIRTUAL_RESOLUTION

    def time(self) -> float:
        return self.virtual_clock.elapsed


def virtual_event_loop(clock: VirtualClock) -> asyncio.AbstractEventLoop:
    """A new asyncio event loop whose time is `clock`'s: waits pass at once, in order."""
    return _VirtualLoop(clock)


class AsyncWorld(World):
    """The harness's world for an asyncio loop: the stand-in CLIs and the log of `World`, on
    a virtual clock that the event loop `loop` moves."""

    def __init__(
        self, clock: VirtualClock, draw: Callable[[st.SearchStrategy[Any]], Any]
    ) -> None:
        super().__init__(clock.now, draw)
        self.clock = clock
        self.loop = virtual_event_loop(clock)

    @property
    def now(self) -> datetime:
        """The virtual clock's time."""
        return self.clock.now

    def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)

    async def call(  # type: ignore[override]
        self, call: StartCall, prompt: str | None = None
    ) -> CliOutput:
        """Run the CLI `call` asks for, sending `prompt`: a realistic output of its provider,
        returned after the call's duration in virtual time (your other tasks run meanwhile)."""
        output = self._output(call, prompt)
        start = max(0.0, (call.at - self.now).total_seconds())
        await asyncio.sleep(start + output.duration.total_seconds())
        self.returned.append(self.now)
        return output

    async def sleep_until(self, until: datetime) -> datetime:  # type: ignore[override]
        """Sleep until `until` in virtual time; returns the time on waking: the deadline, or
        later when the machine was suspended (A20)."""
        late = self._oversleep()
        await asyncio.sleep(max(0.0, (until - self.now).total_seconds()) + late.total_seconds())
        self.slept.append((until, self.now))
        return self.now

    def run_cli(self, call: StartCall, prompt: str | None = None) -> CliOutput:
        raise TypeError("in an asyncio loop, `await world.call(effect, prompt)` runs the CLI")

    def stop_tasks(self) -> None:
        """Cancel every task still running on the loop and let them end (a process that dies
        loses them)."""
        tasks = asyncio.all_tasks(self.loop)
        for task in tasks:
            task.cancel()
        if tasks:
            self.loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))

    def close(self) -> None:
        if not self.loop.is_closed():
            self.stop_tasks()
            self.loop.close()


class AsyncOrchestrator(Protocol):
    """Your asyncio loop, as the machine drives it."""

    @property
    def state(self) -> SchedulerState:
        """The scheduler state your loop holds now."""

    def handle(self, event: Event) -> Awaitable[Sequence[Event]]:
        """A coroutine: feed `event` to `step` once, carry out its effects through the world,
        save, and return the events the effects led to, not yet fed."""

    def saved(self) -> SchedulerState | Awaitable[SchedulerState | None] | None:
        """What your store holds now (a coroutine is awaited)."""


class AsyncAdapter:
    """Your asyncio loop as the synchronous `Orchestrator` the machine drives: each `handle`
    runs your coroutine on the world's event loop until it returns."""

    def __init__(self, inner: AsyncOrchestrator, world: AsyncWorld) -> None:
        self.inner = inner
        self.world = world

    @property
    def state(self) -> SchedulerState:
        return self.inner.state

    def handle(self, event: Event) -> Sequence[Event]:
        return list(self._run(self.inner.handle(event)))

    def saved(self) -> SchedulerState | None:
        result = self.inner.saved()
        if inspect.isawaitable(result):
            loaded: SchedulerState | None = self._run(result)
            return loaded
        return result

    def _run(self, awaitable: Awaitable[Any]) -> Any:
        return self.world.loop.run_until_complete(_awaited(awaitable))


async def _awaited(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


class AsyncOrchestratorMachine(OrchestratorMachine):
    """`OrchestratorMachine` for an asyncio loop. Subclass, set `make_async`, use `.TestCase`:

        class TestMine(AsyncOrchestratorMachine):
            make_async = MyAsyncLoop                  # MyAsyncLoop(config, world)
            restart_async = MyAsyncLoop.restart       # optional: crash and restart it
        TestMyLoop = TestMine.TestCase
    """

    #: Build your loop for `config` on the machine's `AsyncWorld`.
    make_async: ClassVar[Callable[[SchedulerConfig, AsyncWorld], AsyncOrchestrator]]
    #: Given the crashed loop (its store survives; its tasks are cancelled), the config and
    #: the world, a new loop that loaded its store through `restore_state` (may be a
    #: coroutine). None: no crash rule.
    restart_async: ClassVar[Callable[..., Any] | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)

        def make(config: SchedulerConfig, world: World) -> Orchestrator:
            assert isinstance(world, AsyncWorld)
            return AsyncAdapter(cls.make_async(config, world), world)

        cls.make = staticmethod(make)
        if cls.restart_async is not None:
            restart_async = cls.restart_async

            def restart(crashed: Orchestrator, config: SchedulerConfig,
                        world: World) -> Orchestrator:
                assert isinstance(crashed, AsyncAdapter) and isinstance(world, AsyncWorld)
                world.stop_tasks()  # the process died: what it had running is lost
                inner = restart_async(crashed.inner, config, world)
                if inspect.isawaitable(inner):
                    inner = world.loop.run_until_complete(_awaited(inner))
                return AsyncAdapter(inner, world)

            cls.restart = staticmethod(restart)

    def new_world(
        self, start: datetime, draw: Callable[[st.SearchStrategy[Any]], Any]
    ) -> World:
        return AsyncWorld(VirtualClock(start), draw)

    def teardown(self) -> None:
        if isinstance(self.world, AsyncWorld):
            self.world.close()


__all__ = [
    "AsyncAdapter",
    "AsyncOrchestrator",
    "AsyncOrchestratorMachine",
    "AsyncWorld",
    "VirtualClock",
    "VirtualTimeDeadlock",
    "virtual_event_loop",
]
