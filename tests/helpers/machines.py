"""Running the shipped orchestrator machines against a loop with a bug planted by hand (SPEC
0.4): the sync `OrchestratorMachine` and the asyncio `AsyncOrchestratorMachine` are driven the
same way, under the derandomized draw CI uses or under one random seed."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, Phase, seed, settings
from hypothesis.stateful import RuleBasedStateMachine, run_state_machine_as_test


def planted(base: type[RuleBasedStateMachine], loop: type,
            **hooks: Any) -> type[RuleBasedStateMachine]:
    """`base` with `hooks` (how it makes and restarts the loop) set, named after `loop`."""
    return type(f"{loop.__name__}Machine", (base,), dict(hooks))


def quick(*, derandomize: bool) -> settings:
    return settings(max_examples=60, derandomize=derandomize, database=None, deadline=None,
                    phases=[Phase.generate], suppress_health_check=list(HealthCheck))


def run_machine(machine: type[RuleBasedStateMachine], draw: int | None) -> None:
    """Runs `machine`: the CI draw (derandomized) where `draw` is None, else under seed `draw`."""
    test = machine if draw is None else seed(draw)(machine)
    run_state_machine_as_test(test, settings=quick(derandomize=draw is None))


def assert_caught(machine: type[RuleBasedStateMachine], message: str, draw: int | None) -> None:
    """The machine, run under `draw` (None: the derandomized CI draw), fails with `message`: the
    bug planted in its loop is caught."""
    import pytest

    with pytest.raises(AssertionError, match=message):
        run_machine(machine, draw)
