"""autodev's functional core: pure decisions over frozen values (SPEC 0.1).

No I/O, clock, sleep, randomness, subprocess, environment or logging lives in this package;
time is an argument and log lines are effects. `autodev_shell` carries the effects out.

The names of SPEC D are re-exported here and are stable; so are the scheduler's events and
effects, which an orchestrator needs to drive `step` from its own loop.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

from . import _lazy

if TYPE_CHECKING:
    from .control.identity import RunIdentity, ids_equivalent, resolve_active_identity
    from .control.persistence import (
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
    from .detection.classification import Classification, LimitNotice, UsageReading
    from .detection.posts import extract_post
    from .detection.reader import (
        classify_output,
        detect_limit,
        detect_login_error,
        detect_network_error,
    )
    from .engine import PROVIDERS, Engine
    from .errors import AutodevError, ConfigError
    from .participant import ConfigWarning, Participant, parse_participant, read_participant
    from .scheduler import (
        LOG_FIELDS,
        LOG_KINDS,
        STATUSES,
        TRANSITIONS,
        CallCancelled,
        CallEnded,
        Effect,
        EngineLimit,
        EngineUsage,
        Event,
        GateApproved,
        GateRequested,
        Headroom,
        LimitObserved,
        Log,
        LogKind,
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
        UsageObserved,
        Woke,
        call_ended,
        initial_state,
        log_fields,
        next_deadline,
        next_entries,
        restore_state,
        start_run,
        step,
    )
    from .simulation.driver import simulate
    from .simulation.scenario import CallAnswer, Scenario, parse_scenario

# The public names are imported on first use (PEP 562): `import autodev_core`, or a command
# that needs only a few of them, does not pay for the rest (issue 13).
_EXPORTS: dict[str, str] = {
    "Accepted": "control.persistence",
    "AutodevError": "errors",
    "BoundTiers": "control.persistence",
    "CallAnswer": "simulation.scenario",
    "CallCancelled": "scheduler",
    "CallEnded": "scheduler",
    "Policy": "scheduler",
    "Classification": "detection.classification",
    "CommitMarker": "control.persistence",
    "ConfigError": "errors",
    "ConfigWarning": "participant",
    "DEFAULT_TIERS": "control.persistence",
    "Effect": "scheduler",
    "Engine": "engine",
    "EngineLimit": "scheduler",
    "EngineUsage": "scheduler",
    "Event": "scheduler",
    "GateApproved": "scheduler",
    "GateRequested": "scheduler",
    "Headroom": "scheduler",
    "LimitNotice": "detection.classification",
    "LimitObserved": "scheduler",
    "LOG_FIELDS": "scheduler",
    "LOG_KINDS": "scheduler",
    "Log": "scheduler",
    "LogKind": "scheduler",
    "log_fields": "scheduler",
    "MessageArrived": "scheduler",
    "Outage": "scheduler",
    "PROVIDERS": "engine",
    "Participant": "participant",
    "PauseRequested": "scheduler",
    "PersistenceState": "control.persistence",
    "Queued": "control.persistence",
    "RecoveryCopy": "control.persistence",
    "ResumeRequested": "scheduler",
    "RunIdentity": "control.identity",
    "RunStarted": "scheduler",
    "STATUSES": "scheduler",
    "Scenario": "simulation.scenario",
    "SchedulerConfig": "scheduler",
    "SchedulerProtocolError": "scheduler",
    "SchedulerState": "scheduler",
    "Sleep": "scheduler",
    "StartCall": "scheduler",
    "StatusChanged": "scheduler",
    "StopRequested": "scheduler",
    "TRANSITIONS": "scheduler",
    "TierRoles": "control.persistence",
    "TurnGate": "control.persistence",
    "UnknownTierError": "control.persistence",
    "UsageObserved": "scheduler",
    "UsageReading": "detection.classification",
    "Woke": "scheduler",
    "call_ended": "scheduler",
    "classify_output": "detection.reader",
    "detect_limit": "detection.reader",
    "detect_login_error": "detection.reader",
    "detect_network_error": "detection.reader",
    "extract_post": "detection.posts",
    "ids_equivalent": "control.identity",
    "initial_state": "scheduler",
    "next_deadline": "scheduler",
    "next_entries": "scheduler",
    "parse_participant": "participant",
    "parse_scenario": "simulation.scenario",
    "read_participant": "participant",
    "reduce_persistence": "control.persistence",
    "resolve_active_identity": "control.identity",
    "restore_state": "scheduler",
    "simulate": "simulation.driver",
    "start_run": "scheduler",
    "step": "scheduler",
    "tier_role": "control.persistence",
    "turn_gate": "control.persistence",
}

__all__ = [
    "DEFAULT_TIERS",
    "LOG_FIELDS",
    "LOG_KINDS",
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
    "ConfigWarning",
    "Effect",
    "Engine",
    "EngineLimit",
    "EngineUsage",
    "Event",
    "GateApproved",
    "GateRequested",
    "Headroom",
    "LimitNotice",
    "LimitObserved",
    "Log",
    "LogKind",
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
    "UsageObserved",
    "UsageReading",
    "Woke",
    "call_ended",
    "classify_output",
    "detect_limit",
    "detect_login_error",
    "detect_network_error",
    "extract_post",
    "ids_equivalent",
    "initial_state",
    "log_fields",
    "next_deadline",
    "next_entries",
    "parse_participant",
    "parse_scenario",
    "read_participant",
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
    if name == "detection.classification":
        from .detection import classification

        return classification
    if name == "detection.reader":
        from .detection import reader as detection

        return detection
    if name == "engine":
        from . import engine

        return engine
    if name == "errors":
        from . import errors

        return errors
    if name == "control.identity":
        from .control import identity

        return identity
    if name == "participant":
        from . import participant

        return participant
    if name == "control.persistence":
        from .control import persistence

        return persistence
    if name == "detection.posts":
        from .detection import posts

        return posts
    if name == "simulation.scenario":
        from .simulation import scenario

        return scenario
    if name == "scheduler":
        from . import scheduler

        return scheduler
    if name == "simulation.driver":
        from .simulation import driver as simulation

        return simulation
    raise AttributeError(name)


def __getattr__(name: str) -> Any:
    return _lazy.attribute(__name__, globals(), _EXPORTS, _module, name)


def __dir__() -> list[str]:
    return _lazy.names(globals(), _EXPORTS)
