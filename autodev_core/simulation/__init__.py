"""The simulator (SPEC C6, D): a scenario replayed through the real scheduler in virtual
time, each scripted answer classified by the notice reader as real output would be.

`scenario` reads and renders scenario files; `driver` runs them (`simulate`). It sits
beside the scheduler and the reader, not inside either: it is their one user that needs
both, and the scheduler never reads raw output (A1).

The public names of these modules are offered here, imported on first use (PEP 562): `from
autodev_core.simulation import simulate` works as it did when `autodev_core.simulation` was a
module (now `autodev_core.simulation.driver`), and importing one of this package's modules alone
does not load the others.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

from .. import _lazy

if TYPE_CHECKING:
    from .compare import HeadroomComparison, RunCost, compare_headroom
    from .driver import (
        DEFAULT_HORIZON,
        MAX_EVENTS,
        MAX_EVENTS_AT_ONE_INSTANT,
        SimulatedLine,
        SimulationResult,
        horizon_line,
        iter_output,
        scheduler_config,
        simulate,
    )
    from .scenario import (
        ANSWER_KEYS,
        DEFAULT_CALL_DURATION,
        DEFAULT_KEY,
        DEFAULT_PEER,
        MEMBER_KEYS,
        OK_ANSWER,
        PEER_KEYS,
        SCENARIO_KEYS,
        USAGE_KEYS,
        CallAnswer,
        CallTable,
        PeerReport,
        Scenario,
        UsagePeriod,
        parse_scenario,
        render_scenario,
    )

# Each public name and the module it lives in, imported on first use (PEP 562).
_HOMES: dict[str, str] = {
    "ANSWER_KEYS": "scenario",
    "DEFAULT_CALL_DURATION": "scenario",
    "DEFAULT_HORIZON": "driver",
    "DEFAULT_KEY": "scenario",
    "DEFAULT_PEER": "scenario",
    "MAX_EVENTS": "driver",
    "MAX_EVENTS_AT_ONE_INSTANT": "driver",
    "MEMBER_KEYS": "scenario",
    "OK_ANSWER": "scenario",
    "PEER_KEYS": "scenario",
    "SCENARIO_KEYS": "scenario",
    "USAGE_KEYS": "scenario",
    "UsagePeriod": "scenario",
    "HeadroomComparison": "compare",
    "RunCost": "compare",
    "compare_headroom": "compare",
    "CallAnswer": "scenario",
    "CallTable": "scenario",
    "PeerReport": "scenario",
    "Scenario": "scenario",
    "SimulatedLine": "driver",
    "SimulationResult": "driver",
    "horizon_line": "driver",
    "iter_output": "driver",
    "parse_scenario": "scenario",
    "render_scenario": "scenario",
    "scheduler_config": "driver",
    "simulate": "driver",
}

__all__ = [
    "ANSWER_KEYS",
    "DEFAULT_CALL_DURATION",
    "DEFAULT_HORIZON",
    "DEFAULT_KEY",
    "DEFAULT_PEER",
    "MAX_EVENTS",
    "MAX_EVENTS_AT_ONE_INSTANT",
    "MEMBER_KEYS",
    "OK_ANSWER",
    "PEER_KEYS",
    "SCENARIO_KEYS",
    "USAGE_KEYS",
    "CallAnswer",
    "CallTable",
    "HeadroomComparison",
    "PeerReport",
    "RunCost",
    "Scenario",
    "SimulatedLine",
    "SimulationResult",
    "UsagePeriod",
    "compare_headroom",
    "horizon_line",
    "iter_output",
    "parse_scenario",
    "render_scenario",
    "scheduler_config",
    "simulate",
]


def _module(name: str) -> ModuleType:
    if name == "driver":
        from . import driver

        return driver
    if name == "scenario":
        from . import scenario

        return scenario
    if name == "compare":
        from . import compare

        return compare
    raise AttributeError(name)


def __getattr__(name: str) -> Any:
    return _lazy.attribute(__name__, globals(), _HOMES, _module, name)


def __dir__() -> list[str]:
    return _lazy.names(globals(), _HOMES)
