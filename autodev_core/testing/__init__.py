"""Reusable Hypothesis harnesses (SPEC 0.4), shipped inside the package like `zarr.testing`.

- `autodev_core.testing.scheduler`: strategies for teams, chains and outcomes, and
  `SchedulerMachine`, which drives `step` through random interleavings and checks SPEC A's
  invariants after every step.
- `autodev_core.testing.persistence`: strategies for run ids, tiers and persistence events, and
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
    RESET_FORMS,
    CliOutput,
    Orchestrator,
    OrchestratorMachine,
    World,
    cli_outputs,
    notice_outputs,
)
from .persistence import (
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
from .scheduler import (
    OUTCOME_WEIGHTS,
    ZONES,
    SchedulerMachine,
    back_at,
    durations,
    engines,
    expected_wait,
    instants,
    is_learned,
    participants,
    reset_offsets,
    scheduler_configs,
)

__all__ = [
    "OUTCOME_WEIGHTS",
    "OUTPUT_KINDS",
    "RESET_FORMS",
    "ZONES",
    "CliOutput",
    "Orchestrator",
    "OrchestratorMachine",
    "PersistenceMachine",
    "PersistenceModel",
    "SchedulerMachine",
    "World",
    "accepted_events",
    "back_at",
    "cli_outputs",
    "durations",
    "engines",
    "expected_wait",
    "identities",
    "instants",
    "is_learned",
    "markers",
    "notice_outputs",
    "participants",
    "persistence_events",
    "persistence_states",
    "queued_events",
    "recoveries",
    "reset_offsets",
    "scheduler_configs",
]
