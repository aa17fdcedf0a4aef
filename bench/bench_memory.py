"""Memory: the scheduler's state after 100,000 simulated turns is no larger than after 100.

The thread lives in the store, never in `SchedulerState` (SPEC 0.1, docs/scheduler.md): the state
holds counters, the limit registry (one record per engine at most, A8, A25), outages (one per
provider, A26) and where each participant sits. The bench drives `step` through the mixed-limits
run of `bench_decision` (8 participants, 3-entry chains) and measures the state after 100 and
after 100,000 calls two ways: `len(to_json(state))` and a deep `sys.getsizeof` walk (every object
reachable from the state counted once; time zones, shared with the whole process, left out).

Counters (`iterations`, `runtime`) take a few more digits as they grow; the verdict compares the
states after 100 and after 100,000 turns with those counters set to the 100-turn values, and the
raw sizes are reported too. As the registry's size varies from moment to moment (which engines
are out, how long their names are), the largest state over a window of 100 turns — the first 100,
the last 100 — is reported beside them: bounded means those stay close, not that they grow.

    python bench/bench_memory.py [--turns N]
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Iterator
from datetime import timedelta, tzinfo
from types import MappingProxyType
from typing import Any

import attrs
from bench_decision import START, TEAM

from autodev_core.detection.classification import LimitNotice
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
from autodev_core.serialization import to_json

TURNS = 100_000
FEW = 100


def deep_size(root: object) -> int:
    """Bytes of every object reachable from `root`, each counted once (tzinfo excluded)."""
    seen: set[int] = set()
    stack: list[object] = [root]
    total = 0
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, tzinfo):
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        stack.extend(_children(obj))
    return total


def _children(obj: object) -> Iterator[object]:
    kind: Any = type(obj)
    if attrs.has(kind):
        for field in attrs.fields(kind):
            yield getattr(obj, field.name)
    elif isinstance(obj, (tuple, list, set, frozenset)):
        yield from obj
    elif isinstance(obj, (dict, MappingProxyType)):
        for key, value in obj.items():
            yield key
            yield value


def _normalised(state: SchedulerState, reference: SchedulerState) -> SchedulerState:
    """`state` with the growing counters set to `reference`'s (their digits are not the thread)."""
    return attrs.evolve(state, iterations=reference.iterations, runtime=reference.runtime)


def _turns(count: int, seed: int = 7) -> Iterator[tuple[int, SchedulerState]]:
    """Drive `step` until `count` calls have ended; yield (calls ended, state) after each."""
    rng = random.Random(seed)
    state = initial_state(SchedulerConfig(team=TEAM, timezone="Europe/Lisbon"))
    now = START
    event: Event = RunStarted(now=now)
    ended = 0
    while ended < count:
        state, _ = step(state, event)
        if isinstance(event, CallEnded):
            ended += 1
            yield ended, state
        if state.call is not None:
            now += timedelta(seconds=rng.randint(30, 900))
            call = state.call
            roll = rng.random()
            if roll < 0.25:
                reset = now + timedelta(minutes=rng.randint(5, 300))
                event = CallEnded(now=now, participant=call.participant, engine=call.engine,
                                  kind="limit",
                                  limit=LimitNotice(call.engine.provider, reset, "x"))
            elif roll < 0.30:
                event = CallEnded(now=now, participant=call.participant, engine=call.engine,
                                  kind="network")
            elif roll < 0.35:
                event = CallEnded(now=now, participant=call.participant, engine=call.engine,
                                  kind="exit", exit_code=1)
            else:
                event = CallEnded(now=now, participant=call.participant, engine=call.engine,
                                  kind="post", posted=True)
        elif state.wait_until is not None:
            now = max(now, state.wait_until)
            event = Woke(now=now)
        else:  # paused (failure streak, A29): resume as the orchestrator would
            event = RunStarted(now=now) if state.status == "stopped" else _resume(now)


def _resume(now: Any) -> Event:
    from autodev_core.scheduler import ResumeRequested

    return ResumeRequested(now=now)


def measure(turns: int = TURNS, few: int = FEW) -> dict[str, Any]:
    early: list[SchedulerState] = []
    late: list[SchedulerState] = []
    final_few: SchedulerState | None = None
    final_many: SchedulerState | None = None
    for ended, state in _turns(turns):
        if ended <= few:
            early.append(state)
            if ended == few:
                final_few = state
        elif ended > turns - few:
            late.append(state)
            if ended == turns:
                final_many = state
    assert final_few is not None and final_many is not None
    ref = final_few
    return {
        "turns": turns,
        "few": few,
        "json_few": len(to_json(final_few)),
        "json_many": len(to_json(final_many)),
        "deep_few": deep_size(final_few),
        "deep_many": deep_size(final_many),
        "json_norm_many": len(to_json(_normalised(final_many, ref))),
        "deep_norm_many": deep_size(_normalised(final_many, ref)),
        "json_max_few": max(len(to_json(_normalised(s, ref))) for s in early),
        "json_max_many": max(len(to_json(_normalised(s, ref))) for s in late),
        "deep_max_few": max(deep_size(_normalised(s, ref)) for s in early),
        "deep_max_many": max(deep_size(_normalised(s, ref)) for s in late),
    }


def met(m: dict[str, Any]) -> bool:
    return bool(m["json_norm_many"] <= m["json_few"] and m["deep_norm_many"] <= m["deep_few"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=TURNS)
    args = parser.parse_args(argv)
    m = measure(args.turns)
    print(f"after {m['few']} turns: to_json {m['json_few']} chars, deep {m['deep_few']} bytes; "
          f"after {m['turns']}: to_json {m['json_many']} chars ({m['json_norm_many']} counters "
          f"aside), deep {m['deep_many']} bytes ({m['deep_norm_many']}); "
          f"largest over the first/last 100 turns: json {m['json_max_few']} -> "
          f"{m['json_max_many']}, deep {m['deep_max_few']} -> {m['deep_max_many']}; "
          f"{'met' if met(m) else 'MISSED'}")
    return 0 if met(m) else 1


if __name__ == "__main__":
    raise SystemExit(main())
