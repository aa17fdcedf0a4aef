"""Decision cost: one scheduler `step`, with its event's construction, on a recorded trace.

A team of 8 participants, each with a 3-entry chain (primary + two failover engines), runs under
mixed limits: about one call in four reports a usage limit (resets 5 min to 5 h away), some hit
network errors or fail, the rest post. The (state, event) pairs of such a run are recorded once,
then replayed through `step` round after round, in CPU time; each step's event is built inside
the timed loop, as the shell builds it, and a single limit `CallEnded` is timed on its own too.

A decision runs once per CLI call, and calls last minutes: this figure is context, not something
a user waits for. Its baseline is LiteLLM's routing decision (`bench_peers.py`, which times both
in the same rounds); the target there is `TARGET_RATIO`. The trace is also the state the other
benches start from (memory, cold start, sharing).

    python bench/bench_decision.py [--rounds N]
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs
from common import rounds_args

from autodev_core.detection.classification import LimitNotice
from autodev_core.engine import Engine
from autodev_core.participant import Participant
from autodev_core.scheduler import (
    CallEnded,
    Event,
    RunStarted,
    SchedulerConfig,
    SchedulerState,
    Woke,
    initial_state,
    step,
)

#: A scheduler decision costs at most this share of LiteLLM's routing decision (bench_peers.py).
TARGET_RATIO = 0.1
START = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)

TEAM = (
    Participant(id="ana", provider="claude", model="opus",
                failover=(Engine("codex"), Engine("claude", "sonnet"))),
    Participant(id="rui", provider="codex", failover=(Engine("agy"), Engine("claude", "haiku"))),
    Participant(id="eva", provider="agy", failover=(Engine("claude", "haiku"), Engine("codex"))),
    Participant(id="leo", provider="claude", failover=(Engine("agy"), Engine("codex", "o3"))),
    Participant(id="mia", provider="codex", model="o3",
                failover=(Engine("claude"), Engine("agy"))),
    Participant(id="noa", provider="claude", model="sonnet",
                failover=(Engine("codex"), Engine("agy"))),
    Participant(id="ivo", provider="agy", failover=(Engine("codex"), Engine("claude", "opus"))),
    Participant(id="zoe", provider="codex", failover=(Engine("claude", "sonnet"), Engine("agy"))),
)


#: CPU-bound subjects are timed in this process's CPU time: on a shared machine the wall clock
#: also counts the time other processes held the CPU, which a short subject (the baselines)
#: dodges more often than a long one.
cpu_time = time.process_time


def timed_rounds(
    subjects: Sequence[Callable[[], float]], rounds: int, warmup: int = 1
) -> list[list[float]]:
    """Run each subject once per round, interleaved, alternating the order; each returns its
    seconds per operation. Returns one list of per-round figures per subject."""
    results: list[list[float]] = [[] for _ in subjects]
    for round_ in range(warmup + rounds):
        order = list(range(len(subjects)))
        if round_ % 2:
            order.reverse()  # neither always runs right after the other
        for index in order:
            figure = subjects[index]()
            if round_ >= warmup:
                results[index].append(figure)
    return results


def median_ratio(numerators: Sequence[float], denominators: Sequence[float]) -> float:
    """The median over rounds of each round's ratio (noise common to a round cancels)."""
    return statistics.median(n / d for n, d in zip(numerators, denominators, strict=True))


def record_trace(events: int, seed: int = 7) -> list[tuple[SchedulerState, Event]]:
    """The (state, event) pairs of a run of TEAM under mixed limits, `events` long."""
    rng = random.Random(seed)
    state = initial_state(SchedulerConfig(team=TEAM, timezone="Europe/Lisbon"))
    now = START
    trace: list[tuple[SchedulerState, Event]] = []
    event: Event = RunStarted(now=now)
    while len(trace) < events:
        trace.append((state, event))
        state, _ = step(state, event)
        if state.call is not None:
            now += timedelta(seconds=rng.randint(30, 900))
            call = state.call
            engine = call.engine
            roll = rng.random()
            if roll < 0.25:
                reset = now + timedelta(minutes=rng.randint(5, 300))
                event = CallEnded(now=now, participant=call.participant, engine=engine,
                                  kind="limit", limit=LimitNotice(engine.provider, reset, "x"))
            elif roll < 0.30:
                event = CallEnded(now=now, participant=call.participant, engine=engine,
                                  kind="network")
            elif roll < 0.35:
                event = CallEnded(now=now, participant=call.participant, engine=engine,
                                  kind="exit", exit_code=1)
            else:
                event = CallEnded(now=now, participant=call.participant, engine=engine,
                                  kind="post", posted=True)
        elif state.wait_until is not None:
            now = max(now, state.wait_until)
            event = Woke(now=now)
        else:  # paused or stopped: start again, as an orchestrator would after a resume
            break
    return trace


def _rebuilt(event: Event) -> tuple[Any, dict[str, Any]]:
    """The event's class and the arguments that build it again."""
    cls = type(event)
    return cls, {f.name: getattr(event, f.name) for f in attrs.fields(cls) if f.init}


def step_cost(trace: Sequence[tuple[SchedulerState, Event]]) -> Callable[[], float]:
    built = [(state, *_rebuilt(event)) for state, event in trace]

    def run() -> float:
        began = cpu_time()
        for state, cls, kwargs in built:
            step(state, cls(**kwargs))
        return (cpu_time() - began) / len(built)

    return run


def limit_step_cost(trace: Sequence[tuple[SchedulerState, Event]],
                    repeat: int = 2_000) -> Callable[[], float]:
    """One limit `CallEnded` (with its construction), `repeat` times from the same state."""
    state, event = next((s, e) for s, e in trace
                        if isinstance(e, CallEnded) and e.kind == "limit")
    cls, kwargs = _rebuilt(event)

    def run() -> float:
        began = cpu_time()
        for _ in range(repeat):
            step(state, cls(**kwargs))
        return (cpu_time() - began) / repeat

    return run


def measure(rounds: int, trace_events: int = 4_000) -> dict[str, Any]:
    trace = record_trace(trace_events)
    step_s, limit_s = timed_rounds([step_cost(trace), limit_step_cost(trace)], rounds)
    kinds: dict[str, int] = {}
    for _, event in trace:
        name = event.kind if isinstance(event, CallEnded) else type(event).__name__
        kinds[name] = kinds.get(name, 0) + 1
    return {
        "step_us": statistics.median(step_s) * 1e6,
        "limit_us": statistics.median(limit_s) * 1e6,
        "rounds": rounds,
        "steps": len(trace),
        "kinds": kinds,
    }


def main(argv: list[str] | None = None) -> int:
    args = rounds_args(argv, __doc__.split("\n\n")[0], 15)
    m = measure(args.rounds)
    print(f"step: {m['step_us']:.2f} us (median of {m['rounds']} rounds of {m['steps']} steps "
          f"{m['kinds']}); one limit CallEnded: {m['limit_us']:.2f} us. Against LiteLLM's "
          "routing decision: python bench/bench_peers.py")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
