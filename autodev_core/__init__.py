"""autodev's functional core: pure decisions over frozen values (SPEC 0.1).

No I/O, clock, sleep, randomness, subprocess, environment or logging lives in this package;
time is an argument and log lines are effects. `autodev_shell` carries the effects out.

The names of SPEC D are re-exported here and are stable; so are the scheduler's events and
effects, which an orchestrator needs to drive `step` from its own loop.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any, Final

from . import _lazy

#: Every public name, by the module it lives in: the one table of them. `__all__`
#: and `__getattr__` are read from it; a name is imported from its module on first use (PEP 562),
#: so `import autodev_core`, or a command that needs only a few names, does not pay for the rest
#: (docs/performance.md, cold start).
_EXPORTS: Final[dict[str, tuple[str, ...]]] = {
    "engine": ("PROVIDERS", "Engine"),
    "errors": ("AutodevError", "ConfigError"),
    "participant": ("ConfigWarning", "Participant", "parse_participant", "read_participant"),
    "control.identity": ("RunIdentity", "ids_equivalent", "resolve_active_identity"),
    "control.persistence": (
        "DEFAULT_TIERS", "Accepted", "BoundTiers", "CommitMarker", "PersistenceState", "Queued",
        "RecoveryCopy", "TierRoles", "TurnGate", "UnknownTierError", "reduce_persistence",
        "tier_role", "turn_gate",
    ),
    "control.turn_input": (
        "InputRecord", "TurnInputPlan", "TurnStart", "bind_input_context", "plan_call_input",
        "plan_turn_input", "turn_type_of",
    ),
    "detection.classification": ("Classification", "LimitNotice", "UsageReading"),
    "detection.posts": ("extract_post",),
    "detection.reader": (
        "classify_output", "detect_limit", "detect_login_error", "detect_network_error",
    ),
    "scheduler": (
        "LOG_FIELDS", "LOG_KINDS", "STATUSES", "TRANSITIONS", "CallCancelled", "CallEnded",
        "Effect", "EngineLimit", "EngineUsage", "Event", "GateApproved", "GateRequested",
        "Headroom", "LimitCleared", "LimitObserved", "Log", "LogKind", "MessageArrived", "Outage",
        "PauseRequested",
        "Policy", "ResumeRequested", "RunStarted", "SchedulerConfig", "SchedulerProtocolError",
        "SchedulerState", "Sleep", "StartCall", "StatusChanged", "StopRequested", "UsageObserved",
        "Woke", "call_ended", "initial_state", "log_fields", "next_deadline", "next_entries",
        "restore_state", "start_run", "step",
    ),
    "simulation.driver": ("simulate",),
    "simulation.scenario": ("CallAnswer", "Scenario", "parse_scenario"),
}
_HOMES: Final = _lazy.homes(_EXPORTS)
__all__ = sorted(_HOMES)

if TYPE_CHECKING:
    # The same table as imports, which is all a type checker reads (`X as X`: re-exported);
    # tests/project/test_public_api.py holds the two equal.
    # isort: off
    from .engine import PROVIDERS as PROVIDERS, Engine as Engine
    from .errors import AutodevError as AutodevError, ConfigError as ConfigError
    from .participant import (
        ConfigWarning as ConfigWarning, Participant as Participant,
        parse_participant as parse_participant, read_participant as read_participant,
    )
    from .control.identity import (
        RunIdentity as RunIdentity, ids_equivalent as ids_equivalent,
        resolve_active_identity as resolve_active_identity,
    )
    from .control.persistence import (
        DEFAULT_TIERS as DEFAULT_TIERS, Accepted as Accepted, BoundTiers as BoundTiers,
        CommitMarker as CommitMarker, PersistenceState as PersistenceState, Queued as Queued,
        RecoveryCopy as RecoveryCopy, TierRoles as TierRoles, TurnGate as TurnGate,
        UnknownTierError as UnknownTierError, reduce_persistence as reduce_persistence,
        tier_role as tier_role, turn_gate as turn_gate,
    )
    from .control.turn_input import (
        InputRecord as InputRecord, TurnInputPlan as TurnInputPlan, TurnStart as TurnStart,
        bind_input_context as bind_input_context, plan_call_input as plan_call_input,
        plan_turn_input as plan_turn_input, turn_type_of as turn_type_of,
    )
    from .detection.classification import (
        Classification as Classification, LimitNotice as LimitNotice, UsageReading as UsageReading,
    )
    from .detection.posts import extract_post as extract_post
    from .detection.reader import (
        classify_output as classify_output, detect_limit as detect_limit,
        detect_login_error as detect_login_error, detect_network_error as detect_network_error,
    )
    from .scheduler import (
        LOG_FIELDS as LOG_FIELDS, LOG_KINDS as LOG_KINDS, STATUSES as STATUSES,
        TRANSITIONS as TRANSITIONS, CallCancelled as CallCancelled, CallEnded as CallEnded,
        Effect as Effect, EngineLimit as EngineLimit, EngineUsage as EngineUsage, Event as Event,
        GateApproved as GateApproved, GateRequested as GateRequested, Headroom as Headroom,
        LimitCleared as LimitCleared, LimitObserved as LimitObserved, Log as Log,
        LogKind as LogKind,
        MessageArrived as MessageArrived, Outage as Outage, PauseRequested as PauseRequested,
        Policy as Policy, ResumeRequested as ResumeRequested, RunStarted as RunStarted,
        SchedulerConfig as SchedulerConfig, SchedulerProtocolError as SchedulerProtocolError,
        SchedulerState as SchedulerState, Sleep as Sleep, StartCall as StartCall,
        StatusChanged as StatusChanged, StopRequested as StopRequested,
        UsageObserved as UsageObserved, Woke as Woke, call_ended as call_ended,
        initial_state as initial_state, log_fields as log_fields, next_deadline as next_deadline,
        next_entries as next_entries, restore_state as restore_state, start_run as start_run,
        step as step,
    )
    from .simulation.driver import simulate as simulate
    from .simulation.scenario import (
        CallAnswer as CallAnswer, Scenario as Scenario, parse_scenario as parse_scenario,
    )
    # isort: on


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
    if name == "control.turn_input":
        from .control import turn_input

        return turn_input
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
    return _lazy.attribute(__name__, globals(), _HOMES, _module, name)


def __dir__() -> list[str]:
    return _lazy.names(globals(), _HOMES)
