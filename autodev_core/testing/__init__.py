"""Reusable Hypothesis harnesses (SPEC 0.4), shipped inside the package like `zarr.testing`.

- `autodev_core.testing.scheduler_machine`: `SchedulerMachine`, which drives `step` through
  random interleavings and checks SPEC A's invariants after every step against the model in
  `scheduler_model`, drawing teams, chains and outcomes from `scheduler_strategies`.
- `autodev_core.testing.persistence_machine`: strategies for run ids, tiers and persistence
  events, and
  `PersistenceMachine`, which checks the persistence reducer, the B8 planner and the turn gate
  against a model of B6-B8.

- `autodev_core.testing.orchestrator`: `OrchestratorMachine`, which drives YOUR orchestrator's
  loop (its effect handler and store) through random runs on a `World` of stand-ins, and
  `cli_outputs`, realistic CLI outputs per provider and kind from the project's notice corpus
  (docs/testing-your-orchestrator.md).

All of them import hypothesis (a test dependency); nothing else in `autodev_core` does. Subclass a
machine and set its class attributes to test your own configuration.
"""

from __future__ import annotations

from .orchestrator import (
    OUTPUT_KINDS,
    OVERSLEEPS,
    RESET_FORMS,
    CliOutput,
    HarnessFailure,
    Orchestrator,
    OrchestratorMachine,
    World,
    cli_outputs,
    dst_edges,
    field_diff,
    harness_settings,
    notice_outputs,
    run_starts,
    team_edits,
)
from .persistence_machine import (
    PersistenceMachine,
    PersistenceModel,
    accepted_events,
    identities,
    markers,
    persistence_events,
    persistence_states,
    queued_events,
    recoveries,
)
from .scheduler_machine import SchedulerMachine
from .scheduler_model import back_at, expected_wait, is_learned, near_limit
from .scheduler_strategies import (
    OUTCOME_WEIGHTS,
    UTILIZATIONS,
    WINDOWS,
    ZONES,
    durations,
    engines,
    instants,
    participants,
    reset_offsets,
    scheduler_configs,
    usage_readings,
)

__all__ = [
    "OUTCOME_WEIGHTS",
    "OUTPUT_KINDS",
    "OVERSLEEPS",
    "RESET_FORMS",
    "UTILIZATIONS",
    "WINDOWS",
    "ZONES",
    "CliOutput",
    "HarnessFailure",
    "Orchestrator",
    "OrchestratorMachine",
    "PersistenceMachine",
    "PersistenceModel",
    "SchedulerMachine",
    "World",
    "accepted_events",
    "back_at",
    "cli_outputs",
    "dst_edges",
    "durations",
    "engines",
    "expected_wait",
    "field_diff",
    "harness_settings",
    "identities",
    "instants",
    "is_learned",
    "markers",
    "near_limit",
    "notice_outputs",
    "participants",
    "persistence_events",
    "persistence_states",
    "queued_events",
    "recoveries",
    "reset_offsets",
    "run_starts",
    "scheduler_configs",
    "team_edits",
    "usage_readings",
]
