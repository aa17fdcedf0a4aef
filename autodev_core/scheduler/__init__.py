"""The turn scheduler (SPEC A8-A43): one pure reducer, `step(state, event) -> (state, effects)`.

`step` owns every transition (see `step.py`); `events` are what the shell reports, `effects`
what it must do, `state` what the run knows, `policy` every number, `logs` every line.
"""

from __future__ import annotations

from .effects import (
    EFFECT_TYPES,
    LOG_FIELDS,
    LOG_KINDS,
    STATUSES,
    Effect,
    Log,
    LogKind,
    Sleep,
    StartCall,
    Status,
    StatusChanged,
    TurnKind,
    log_fields,
)
from .events import (
    CALL_KINDS,
    EVENT_TYPES,
    CallCancelled,
    CallEnded,
    CallKind,
    Event,
    GateApproved,
    GateRequested,
    LimitObserved,
    MessageArrived,
    PauseRequested,
    ResumeRequested,
    RunStarted,
    StopRequested,
    UsageObserved,
    Woke,
    call_ended,
)
from .policy import DEFAULT_POLICY, Headroom, Policy, parse_policy
from .restore import restore_state
from .state import (
    Call,
    EngineLimit,
    EngineUsage,
    Outage,
    SchedulerConfig,
    SchedulerState,
    initial_state,
)
from .step import TRANSITIONS, SchedulerProtocolError, next_deadline, start_run, step

__all__ = [
    "CALL_KINDS",
    "DEFAULT_POLICY",
    "EFFECT_TYPES",
    "EVENT_TYPES",
    "LOG_FIELDS",
    "LOG_KINDS",
    "STATUSES",
    "TRANSITIONS",
    "Call",
    "CallCancelled",
    "CallEnded",
    "CallKind",
    "Effect",
    "EngineLimit",
    "EngineUsage",
    "Event",
    "GateApproved",
    "GateRequested",
    "Headroom",
    "LimitObserved",
    "Log",
    "LogKind",
    "MessageArrived",
    "Outage",
    "PauseRequested",
    "Policy",
    "ResumeRequested",
    "RunStarted",
    "SchedulerConfig",
    "SchedulerProtocolError",
    "SchedulerState",
    "Sleep",
    "StartCall",
    "Status",
    "StatusChanged",
    "StopRequested",
    "TurnKind",
    "UsageObserved",
    "Woke",
    "call_ended",
    "initial_state",
    "log_fields",
    "next_deadline",
    "parse_policy",
    "restore_state",
    "start_run",
    "step",
]
