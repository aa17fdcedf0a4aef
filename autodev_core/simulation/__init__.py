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
from typing import TYPE_CHECKING, Any, Final

from .. import _lazy

#: Every public name of the simulator, by the module it lives in: the one table of them (issue
#: 27); `__all__` and `__getattr__` are read from it.
_EXPORTS: Final[dict[str, tuple[str, ...]]] = {
    "compare": ("HeadroomComparison", "RunCost", "compare_headroom"),
    "driver": (
        "DEFAULT_HORIZON", "MAX_EVENTS", "MAX_EVENTS_AT_ONE_INSTANT", "SimulatedLine",
        "SimulationResult", "horizon_line", "iter_output", "scheduler_config", "simulate",
    ),
    "scenario": (
        "ANSWER_KEYS", "DEFAULT_CALL_DURATION", "DEFAULT_KEY", "DEFAULT_PEER", "MEMBER_KEYS",
        "OK_ANSWER", "PEER_KEYS", "SCENARIO_KEYS", "USAGE_KEYS", "CallAnswer", "CallTable",
        "PeerReport", "Scenario", "UsagePeriod", "parse_scenario", "render_scenario",
    ),
}
_HOMES: Final = _lazy.homes(_EXPORTS)
__all__ = sorted(_HOMES)

if TYPE_CHECKING:
    # The same table as imports, which is all a type checker reads (`X as X`: re-exported);
    # tests/project/test_public_api.py holds the two equal.
    # isort: off
    from .compare import (
        HeadroomComparison as HeadroomComparison, RunCost as RunCost,
        compare_headroom as compare_headroom,
    )
    from .driver import (
        DEFAULT_HORIZON as DEFAULT_HORIZON, MAX_EVENTS as MAX_EVENTS,
        MAX_EVENTS_AT_ONE_INSTANT as MAX_EVENTS_AT_ONE_INSTANT, SimulatedLine as SimulatedLine,
        SimulationResult as SimulationResult, horizon_line as horizon_line,
        iter_output as iter_output, scheduler_config as scheduler_config, simulate as simulate,
    )
    from .scenario import (
        ANSWER_KEYS as ANSWER_KEYS, DEFAULT_CALL_DURATION as DEFAULT_CALL_DURATION,
        DEFAULT_KEY as DEFAULT_KEY, DEFAULT_PEER as DEFAULT_PEER, MEMBER_KEYS as MEMBER_KEYS,
        OK_ANSWER as OK_ANSWER, PEER_KEYS as PEER_KEYS, SCENARIO_KEYS as SCENARIO_KEYS,
        USAGE_KEYS as USAGE_KEYS, CallAnswer as CallAnswer, CallTable as CallTable,
        PeerReport as PeerReport, Scenario as Scenario, UsagePeriod as UsagePeriod,
        parse_scenario as parse_scenario, render_scenario as render_scenario,
    )
    # isort: on


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
