"""A reusable Hypothesis harness for the run-state control plane (SPEC B3-B9, 0.4).

Orchestrators that keep their own durable state can check their tier table against the
reducer's rules:

    from autodev_core.persistence import TierRoles
    from autodev_core.testing import PersistenceMachine
    class MyTiers(PersistenceMachine):
        tiers = TierRoles(canonical=frozenset({"postgres"}), recovery_only=frozenset({"wal"}),
                          replica_only=frozenset({"search"}))
    TestMyTiers = MyTiers.TestCase

`PersistenceMachine` feeds random `Queued` / `Accepted` events, stale-pending settlements and
turn-gate questions to the reducer and, after every step, compares the state with a tiny model
written straight from B6-B8, checks that `last_accepted_revision` never decreases, that a write
queued for one run never opens another run's gate, and that a pending flag covered by a canonical
acceptance for the active run always clears (B8).
"""

from __future__ import annotations

from typing import ClassVar

import attrs
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, invariant, rule

from ..identity import RunIdentity
from ..persistence import (
    DEFAULT_TIERS,
    Accepted,
    CommitMarker,
    PersistenceState,
    Queued,
    RecoveryCopy,
    TierRoles,
    reduce_persistence,
    settle_stale_pending,
    tier_role,
    turn_gate,
)

#: Run ids as hosts write them: with stray spaces, empty, an alias ("a1") of "run-A".
RUN_IDS = st.sampled_from(["run-A", "run-B", " run-A ", "a1", "", "run-C"])
#: Tier names of every role of `DEFAULT_TIERS`, in odd cases, plus unknown ones.
TIER_NAMES = st.sampled_from(
    ["sqlite", " SQLite ", "shadow", "checkpoint", "search", "none", "", "postgres", "CHECKPOINT"]
)
#: Revisions, including the non-positive ones B8 calls missing.
REVISIONS = st.integers(min_value=-2, max_value=12)

identities = st.builds(
    RunIdentity,
    run_id=RUN_IDS,
    host_id=RUN_IDS,
    integrity_id=RUN_IDS,
    aliases=st.frozensets(RUN_IDS, max_size=3),
)
queued_events = st.builds(
    Queued, revision=REVISIONS, run_id=RUN_IDS, reason=st.sampled_from(["", "turn-end"]),
    immediate=st.booleans(), recoverable_tier=st.none() | TIER_NAMES,
)
accepted_events = st.builds(
    Accepted, tier=TIER_NAMES, revision=REVISIONS, accepted=st.booleans(),
    clear_queued=st.booleans(),
)
persistence_events = st.one_of(queued_events, accepted_events)
markers = st.none() | st.builds(
    CommitMarker, run_id=RUN_IDS, revision=REVISIONS, tier=TIER_NAMES, accepted=st.booleans()
)
recoveries = st.none() | st.builds(
    RecoveryCopy, run_id=RUN_IDS, revision=REVISIONS, tier=TIER_NAMES
)
persistence_states = st.builds(
    PersistenceState,
    pending_persist=st.booleans(),
    writes_blocked=st.booleans(),
    last_accepted_revision=st.integers(0, 12),
    accepted_tier=TIER_NAMES,
    last_recoverable_tier=TIER_NAMES,
    queued_revision=st.integers(0, 12),
    queued_run_id=RUN_IDS,
    queued_reason=st.text(max_size=5),
    queued_immediate=st.booleans(),
)


@attrs.define
class PersistenceModel:
    """What B6-B8 say, written as plainly as possible."""

    pending: bool = False
    blocked: bool = False
    accepted: int = 0
    tier: str = "none"
    recoverable: str = "none"
    queued: int = 0
    queued_run: str = ""


def normalize_tier(tier: str | None) -> str:
    """B5: tier names are trimmed and lower-cased; nothing at all is "none"."""
    return (tier or "").strip().lower() or "none"


class PersistenceMachine(RuleBasedStateMachine):
    """Random Queued/Accepted/settle/gate sequences; the reducer must agree with the model.

    Set `tiers` in a subclass to check another tier table (the tier names drawn are
    `tier_names`; override it to draw your own).
    """

    tiers: ClassVar[TierRoles] = DEFAULT_TIERS
    tier_names: ClassVar[st.SearchStrategy[str]] = TIER_NAMES
    runs = Bundle("runs")

    def __init__(self) -> None:
        super().__init__()
        self.state = PersistenceState()
        self.model = PersistenceModel()
        self.identity = RunIdentity(run_id="run-A", aliases=frozenset({"a1"}))
        self.high_water = 0

    def _role(self, tier: str | None) -> str:
        return tier_role(tier or "", self.tiers)

    @initialize(target=runs)
    def seed_runs(self) -> str:
        return "run-A"

    @rule(target=runs, run_id=st.sampled_from(["a1", " run-A", "run-B", ""]))
    def add_run(self, run_id: str) -> str:
        return run_id

    @rule(revision=REVISIONS, run_id=runs, data=st.data(), immediate=st.booleans())
    def queue(self, revision: int, run_id: str, data: st.DataObject, immediate: bool) -> None:
        tier = data.draw(st.none() | self.tier_names, label="recoverable_tier")
        self.state = reduce_persistence(
            self.state, Queued(revision, run_id, "r", immediate, tier), tiers=self.tiers
        )
        m = self.model
        m.pending = True
        m.queued = max(m.queued, revision, 0)
        m.queued_run = run_id.strip()
        recovery_only = self._role(tier) == "recovery-only"
        m.blocked = not recovery_only
        if recovery_only:
            m.recoverable = normalize_tier(tier)

    @rule(data=st.data(), revision=REVISIONS, accepted=st.booleans(), clear=st.booleans())
    def accept(self, data: st.DataObject, revision: int, accepted: bool, clear: bool) -> None:
        tier = data.draw(self.tier_names, label="tier")
        self.state = reduce_persistence(
            self.state, Accepted(tier, revision, accepted, clear), tiers=self.tiers
        )
        m = self.model
        if accepted and self._role(tier) == "canonical":
            m.pending = m.blocked = False
            m.accepted = max(m.accepted, revision)
            m.tier = normalize_tier(tier)
            m.recoverable = "none"
            if clear:
                m.queued, m.queued_run = 0, ""

    @rule(marker=markers, batch=st.integers(-1, 12))
    def settle(self, marker: CommitMarker | None, batch: int) -> None:
        outcome = settle_stale_pending(self.state, self.identity, marker=marker,
                                       batch_revision=batch, tiers=self.tiers)
        self.state = outcome.state
        if outcome.plan.clears:
            m = self.model
            assert m.pending and m.queued_run in ("run-A", "a1")
            m.pending = m.blocked = False
            m.accepted = max(m.accepted, outcome.plan.accepted_revision)
            m.tier = outcome.plan.tier
            m.recoverable = "none"
            m.queued, m.queued_run = 0, ""

    @rule()
    def gate_for_another_run(self) -> None:
        if not self.model.pending or self.model.queued_run not in ("run-A", "a1"):
            return
        gate = turn_gate(self.state, RunIdentity(run_id="run-B"), tiers=self.tiers)
        assert not gate.may_start and gate.reason == "queued-run-mismatch"

    @invariant()
    def agrees_with_the_model(self) -> None:
        s, m = self.state, self.model
        assert (s.pending_persist, s.writes_blocked) == (m.pending, m.blocked)
        assert (s.last_accepted_revision, s.accepted_tier) == (m.accepted, m.tier)
        assert s.last_recoverable_tier == m.recoverable
        assert (s.queued_revision, s.queued_run_id) == (m.queued, m.queued_run)

    @invariant()
    def last_accepted_never_decreases(self) -> None:
        assert self.state.last_accepted_revision >= self.high_water
        self.high_water = self.state.last_accepted_revision

    @invariant()
    def covered_canonical_pending_always_clears(self) -> None:
        """B8: confirmed ≥ queued, same run, canonical tier ⟹ the pending flag goes."""
        s = self.state
        if (
            s.pending_persist and s.queued_revision > 0
            and s.last_accepted_revision >= s.queued_revision
            and self._role(s.accepted_tier) == "canonical"
            and s.queued_run_id in ("run-A", "a1")
        ):
            gate = turn_gate(s, self.identity, tiers=self.tiers)
            assert gate.may_start and not gate.state.pending_persist


__all__ = [
    "REVISIONS",
    "RUN_IDS",
    "TIER_NAMES",
    "PersistenceMachine",
    "PersistenceModel",
    "accepted_events",
    "identities",
    "markers",
    "normalize_tier",
    "persistence_events",
    "persistence_states",
    "queued_events",
    "recoveries",
]
