"""Decision cost: one scheduler `step` against one tenacity retry attempt, in the same run.

A team of 8 participants, each with a 3-entry chain (primary + two failover engines), runs under
mixed limits: about one call in four reports a usage limit (resets 5 min to 5 h away), some hit
network errors or fail, the rest post. The (state, event) pairs of such a run are recorded once,
then replayed through `step` round after round; each round also times tenacity's `Retrying`
(`wait_exponential`, `stop_after_attempt(5)`, sleep disabled) on a call that fails four times and
then succeeds, so its cost per attempt is known on the same machine at the same moment. The
figure is the median over rounds of (seconds per step) / (seconds per tenacity attempt), in CPU
time. Each step's event is built inside the timed loop, as the shell builds it (issue 13), and a
single limit `CallEnded` is timed on its own too. Target: <= 0.8 (issue 13; issue 6 set 1.0).

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

#: Issue 13's target: a scheduler decision costs at most 0.8 of one tenacity attempt.
TARGET_RATIO = 0.8
#: Attempts per tenacity call: four failures, then a success.
TENACITY_ATTEMPTS = 5
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


def tenacity_cost(calls: int) -> Callable[[], float]:
    from tenacity import Retrying, stop_after_attempt, wait_exponential

    retrying = Retrying(
        wait=wait_exponential(multiplier=1, max=60),
        stop=stop_after_attempt(TENACITY_ATTEMPTS),
        sleep=lambda _seconds: None,  # sleep disabled: only the decision is measured
        reraise=True,
    )

    def flaky(counter: list[int]) -> str:
        counter[0] += 1
        if counter[0] < TENACITY_ATTEMPTS:
            raise ConnectionError("limited")
        return "ok"

    def run() -> float:
        began = cpu_time()
        for _ in range(calls):
            retrying(flaky, [0])
        return (cpu_time() - began) / (calls * TENACITY_ATTEMPTS)

    return run


def measure(rounds: int, trace_events: int = 4_000) -> dict[str, Any]:
    trace = record_trace(trace_events)
    calls = trace_events // TENACITY_ATTEMPTS
    step_s, tenacity_s, limit_s = timed_rounds(
        [step_cost(trace), tenacity_cost(calls), limit_step_cost(trace)], rounds)
    kinds: dict[str, int] = {}
    for _, event in trace:
        name = event.kind if isinstance(event, CallEnded) else type(event).__name__
        kinds[name] = kinds.get(name, 0) + 1
    return {
        "ratio": median_ratio(step_s, tenacity_s),
        "step_us": statistics.median(step_s) * 1e6,
        "tenacity_us": statistics.median(tenacity_s) * 1e6,
        "limit_ratio": median_ratio(limit_s, tenacity_s),
        "limit_us": statistics.median(limit_s) * 1e6,
        "rounds": rounds,
        "steps": len(trace),
        "kinds": kinds,
    }


def main(argv: list[str] | None = None) -> int:
    args = rounds_args(argv, __doc__.split("\n\n")[0], 15)
    m = measure(args.rounds)
    print(f"step: {m['step_us']:.2f} us, tenacity attempt: {m['tenacity_us']:.2f} us, "
          f"median ratio {m['ratio']:.2f} (target <= {TARGET_RATIO}) over {m['rounds']} rounds "
          f"of {m['steps']} steps {m['kinds']}; one limit CallEnded: {m['limit_us']:.2f} us, "
          f"ratio {m['limit_ratio']:.2f}")
    return 0 if max(m["ratio"], m["limit_ratio"]) <= TARGET_RATIO else 1


if __name__ == "__main__":
    raise SystemExit(main())
