"""autodev's functional core: pure decisions over frozen values (SPEC 0.1).

No I/O, clock, sleep, randomness, subprocess, environment or logging lives in this package;
time is an argument and log lines are effects. `autodev_shell` carries the effects out.

The names of SPEC D are re-exported here and are stable; so are the scheduler's events and
effects, which an orchestrator needs to drive `step` from its own loop.
"""

from __future__ import annotations

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
    Log,
    MessageArrived,
    Outage,
    PauseRequested,
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
    "Log",
    "MessageArrived",
    "Outage",
    "Participant",
    "PauseRequested",
    "PersistenceState",
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
