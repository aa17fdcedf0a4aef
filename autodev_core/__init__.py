"""autodev's functional core: pure decisions over frozen values (SPEC 0.1).

No I/O, clock, sleep, randomness, subprocess, environment or logging lives in this package;
time is an argument and log lines are effects. `autodev_shell` carries the effects out.

The names of SPEC D are re-exported here and are stable; so are the scheduler's events and
effects, which an orchestrator needs to drive `step` from its own loop.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .classification import Classification, LimitNotice
    from .detection import classify_output, detect_limit, detect_login_error, detect_network_error
    from .engine import PROVIDERS, Engine
    from .errors import AutodevError, ConfigError
    from .identity import RunIdentity, ids_equivalent, resolve_active_identity
    from .participant import Participant, parse_participant
    from .persistence import (
        DEFAULT_TIERS,
        Accepted,
        BoundTiers,
        CommitMarker,
        PersistenceState,
        Queued,
        RecoveryCopy,
        TierRoles,
        TurnGate,
        UnknownTierError,
        reduce_persistence,
        tier_role,
        turn_gate,
    )
    from .posts import extract_post
    from .scenario import CallAnswer, Scenario, parse_scenario
    from .scheduler import (
        STATUSES,
        TRANSITIONS,
        CallCancelled,
        CallEnded,
        Effect,
        EngineLimit,
        Event,
        GateApproved,
        GateRequested,
        LimitObserved,
        Log,
        MessageArrived,
        Outage,
        PauseRequested,
        Policy,
        ResumeRequested,
        RunStarted,
        SchedulerConfig,
        SchedulerProtocolError,
        SchedulerState,
        Sleep,
        StartCall,
        StatusChanged,
        StopRequested,
        Woke,
        call_ended,
        initial_state,
        next_deadline,
        restore_state,
        start_run,
        step,
    )
    from .simulation import simulate

# The public names are imported on first use (PEP 562): `import autodev_core`, or a command
# that needs only a few of them, does not pay for the rest (issue 13).
_EXPORTS: dict[str, str] = {
    "Accepted": "persistence",
    "AutodevError": "errors",
    "BoundTiers": "persistence",
    "CallAnswer": "scenario",
    "CallCancelled": "scheduler",
    "CallEnded": "scheduler",
    "Policy": "scheduler",
    "Classification": "classification",
    "CommitMarker": "persistence",
    "ConfigError": "errors",
    "DEFAULT_TIERS": "persistence",
    "Effect": "scheduler",
    "Engine": "engine",
    "EngineLimit": "scheduler",
    "Event": "scheduler",
    "GateApproved": "scheduler",
    "GateRequested": "scheduler",
    "LimitNotice": "classification",
    "LimitObserved": "scheduler",
    "Log": "scheduler",
    "MessageArrived": "scheduler",
    "Outage": "scheduler",
    "PROVIDERS": "engine",
    "Participant": "participant",
    "PauseRequested": "scheduler",
    "PersistenceState": "persistence",
    "Queued": "persistence",
    "RecoveryCopy": "persistence",
    "ResumeRequested": "scheduler",
    "RunIdentity": "identity",
    "RunStarted": "scheduler",
    "STATUSES": "scheduler",
    "Scenario": "scenario",
    "SchedulerConfig": "scheduler",
    "SchedulerProtocolError": "scheduler",
    "SchedulerState": "scheduler",
    "Sleep": "scheduler",
    "StartCall": "scheduler",
    "StatusChanged": "scheduler",
    "StopRequested": "scheduler",
    "TRANSITIONS": "scheduler",
    "TierRoles": "persistence",
    "TurnGate": "persistence",
    "UnknownTierError": "persistence",
    "Woke": "scheduler",
    "call_ended": "scheduler",
    "classify_output": "detection",
    "detect_limit": "detection",
    "detect_login_error": "detection",
    "detect_network_error": "detection",
    "extract_post": "posts",
    "ids_equivalent": "identity",
    "initial_state": "scheduler",
    "next_deadline": "scheduler",
    "parse_participant": "participant",
    "parse_scenario": "scenario",
    "reduce_persistence": "persistence",
    "resolve_active_identity": "identity",
    "restore_state": "scheduler",
    "simulate": "simulation",
    "start_run": "scheduler",
    "step": "scheduler",
    "tier_role": "persistence",
    "turn_gate": "persistence",
}

__all__ = [
    "DEFAULT_TIERS",
    "PROVIDERS",
    "STATUSES",
    "TRANSITIONS",
    "Accepted",
    "AutodevError",
    "BoundTiers",
    "CallAnswer",
    "CallCancelled",
    "CallEnded",
    "Classification",
    "CommitMarker",
    "ConfigError",
    "Effect",
    "Engine",
    "EngineLimit",
    "Event",
    "GateApproved",
    "GateRequested",
    "LimitNotice",
    "LimitObserved",
    "Log",
    "MessageArrived",
    "Outage",
    "Participant",
    "PauseRequested",
    "PersistenceState",
    "Policy",
    "Queued",
    "RecoveryCopy",
    "ResumeRequested",
    "RunIdentity",
    "RunStarted",
    "Scenario",
    "SchedulerConfig",
    "SchedulerProtocolError",
    "SchedulerState",
    "Sleep",
    "StartCall",
    "StatusChanged",
    "StopRequested",
    "TierRoles",
    "TurnGate",
    "UnknownTierError",
    "Woke",
    "call_ended",
    "classify_output",
    "detect_limit",
    "detect_login_error",
    "detect_network_error",
    "extract_post",
    "ids_equivalent",
    "initial_state",
    "next_deadline",
    "parse_participant",
    "parse_scenario",
    "reduce_persistence",
    "resolve_active_identity",
    "restore_state",
    "simulate",
    "start_run",
    "step",
    "tier_role",
    "turn_gate",
]


def _module(name: str) -> ModuleType:
    """The submodule `name`, imported now (a relative import: the core imports nothing by
    name at run time)."""
    if name == "classification":
        from . import classification

        return classification
    if name == "detection":
        from . import detection

        return detection
    if name == "engine":
        from . import engine

        return engine
    if name == "errors":
        from . import errors

        return errors
    if name == "identity":
        from . import identity

        return identity
    if name == "participant":
        from . import participant

        return participant
    if name == "persistence":
        from . import persistence

        return persistence
    if name == "posts":
        from . import posts

        return posts
    if name == "scenario":
        from . import scenario

        return scenario
    if name == "scheduler":
        from . import scheduler

        return scheduler
    if name == "simulation":
        from . import simulation

        return simulation
    raise AttributeError(name)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
