"""Scenario files for `autodev simulate` (SPEC C6, D "Scenario files"): where their names are
imported from.

Two modules hold them, each with one job: `scenario_values.py`, the frozen values a scenario is
(`Scenario`, `CallAnswer`, `PeerReport`, `UsagePeriod`), and `scenario_yaml.py`, the strict
reader of a scenario file (`parse_scenario`) and its writer (`render_scenario`). This module
offers both modules' public names, so `from autodev_core.simulation.scenario import
parse_scenario, Scenario` works whichever holds them.
"""

from __future__ import annotations

from .scenario_values import (
    ANSWER_KEYS,
    DEFAULT_CALL_DURATION,
    DEFAULT_KEY,
    DEFAULT_PEER,
    FIRST_YEAR,
    LAST_YEAR,
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
)
from .scenario_yaml import parse_scenario, render_scenario

__all__ = [
    "ANSWER_KEYS",
    "DEFAULT_CALL_DURATION",
    "DEFAULT_KEY",
    "DEFAULT_PEER",
    "FIRST_YEAR",
    "LAST_YEAR",
    "MEMBER_KEYS",
    "OK_ANSWER",
    "PEER_KEYS",
    "SCENARIO_KEYS",
    "USAGE_KEYS",
    "CallAnswer",
    "CallTable",
    "PeerReport",
    "Scenario",
    "UsagePeriod",
    "parse_scenario",
    "render_scenario",
]
