"""A reusable Hypothesis harness for the run-state control plane (SPEC B3-B9, 0.4).

Orchestrators that keep their own durable state can check their tier table against the
reducer's rules:

    from autodev_core.control.persistence import TierRoles
    from autodev_core.testing import PersistenceMachine
    class MyTiers(PersistenceMachine):
        tiers = TierRoles(canonical=frozenset({"postgres"}), recovery_only=frozenset({"wal"}),
                          replica_only=frozenset({"search"}))
    TestMyTiers = MyTiers.TestCase

`PersistenceMachine` feeds random `Queued` / `Accepted` events, stored states, commit markers,
recovery copies, stale-pending settlements and turn-gate questions to the reducer, the B8 planner
and the B9 gate, and checks every answer against a small model that states B5-B9 on its own (it
never calls `tier_role`, the planner, the gate or `ids_equivalent`): the state after each step,
the planner's decision and reason, the gate's decision, that `last_accepted_revision` never
decreases, that a write queued for one run never opens another run's gate, that a pending flag
covered by a canonical acceptance of the active run always clears (B8), and that the bound tier
table (B4) reduces like the bare reducer and refuses unknown tier names.
"""

from __future__ import annotations

from typing import ClassVar

import attrs
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from ..control import persistence as _p
from ..control.identity import RunIdentity
from ..control.persistence import (
    DEFAULT_TIERS,
    Accepted,
    CommitMarker,
    PersistenceState,
    Queued,
    RecoveryCopy,
    TierRoles,
    TurnGate,
    UnknownTierError,
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
    clear_queued=st.booleans(), run_id=RUN_IDS,
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
    accepted_run_id=RUN_IDS,
    last_recoverable_tier=TIER_NAMES,
    queued_revision=st.integers(0, 12),
    queued_run_id=RUN_IDS,
    queued_reason=st.text(max_size=5),
    queued_immediate=st.booleans(),
)


@attrs.define
class PersistenceModel:
    """What B6-B9 say, written as plainly as possible, on its own: it never calls the code
    under test (no `tier_role`, no planner, no gate, no `ids_equivalent`)."""

    pending: bool = False
    blocked: bool = False
    accepted: int = 0
    tier: str = "none"
    accepted_run: str = ""
    recoverable: str = "none"
    queued: int = 0
    queued_run: str = ""
    reason: str = ""
    immediate: bool = False


def normalize_tier(tier: str | None) -> str:
    """B5: tier names are trimmed and lower-cased; nothing at all is "none"."""
    return (tier or "").strip().lower() or "none"


#: The run the machine's host says is active, and every id it knows that run by (B1, B3).
ACTIVE_RUN = "run-A"
ACTIVE_IDS = frozenset({"run-A", "a1"})
#: Another run, to ask the gate for while run A's write is queued (B9).
OTHER_RUN = "run-B"


def same_run(a: str, b: str, known: frozenset[str]) -> bool:
    """B3 on its own: equal after trimming, or both among the host's known ids."""
    left, right = a.strip(), b.strip()
    return left == right or (left in known and right in known)


@attrs.frozen
class ExpectedPlan:
    """What B8 says the planner decides (the model's own answer)."""

    reason: str
    target: int
    accepted: int = 0
    tier: str = "none"

    @property
    def clears(self) -> bool:
        return self.reason == "clear-stale-pending"


class PersistenceMachine(RuleBasedStateMachine):
    """Random Queued/Accepted events, stored states, commit markers, recovery copies, stale
    pending settlements and turn-gate questions; after every step the reducer, the B8 planner
    and the B9 gate must agree with `PersistenceModel`, which states B5-B9 independently.

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
        self.identity = RunIdentity(run_id=ACTIVE_RUN, aliases=ACTIVE_IDS - {ACTIVE_RUN})
        self.marker: CommitMarker | None = None
        self.recovery: RecoveryCopy | None = None
        self.high_water = 0
        self.acks: list[Accepted] = []  # every Accepted fed so far, for the replay rule

    # --- the model's own statement of B5 and B8-B9 ------------------------------------------

    def role(self, tier: str | None) -> str:
        """B5 from the table's sets alone ("none" and "" are unknown whatever they say)."""
        name = normalize_tier(tier)
        roles = (("canonical", self.tiers.canonical),
                 ("recovery-only", self.tiers.recovery_only),
                 ("replica-only", self.tiers.replica_only))
        for role, names in roles:
            if name != "none" and name in {normalize_tier(n) for n in names}:
                return role
        return "unknown"

    def expected_plan(self, active: str, known: frozenset[str], batch: int) -> ExpectedPlan:
        """B8: keep with the first failing reason, in order, else clear."""
        m = self.model
        target = max(batch, m.queued, 0)
        if not m.pending:
            return ExpectedPlan("not-pending", target)
        if target <= 0:
            return ExpectedPlan("missing-target-revision", target)
        if not active.strip() or not m.queued_run:
            return ExpectedPlan("missing-run-id", target)
        if not same_run(active, m.queued_run, known):
            return ExpectedPlan("queued-run-mismatch", target)
        records: list[tuple[int, str]] = []
        if same_run(m.accepted_run, m.queued_run, known):
            records.append((max(m.accepted, 0), m.tier))
        marker = self.marker
        if (marker is not None and marker.accepted
                and same_run(marker.run_id, m.queued_run, known)
                and self.role(marker.tier) == "canonical"):
            records.append((max(marker.revision, 0), normalize_tier(marker.tier)))
        covering = max((revision for revision, _tier in records), default=0)
        tier = ([t for r, t in records if r == covering] or ["none"])[-1]
        if covering < target:
            return ExpectedPlan("accepted-revision-behind", target, covering, tier)
        if self.role(tier) != "canonical":
            return ExpectedPlan("accepted-tier-not-canonical", target, covering, tier)
        return ExpectedPlan("clear-stale-pending", target, covering, tier)

    def model_clear(self, plan: ExpectedPlan) -> None:
        m = self.model
        m.pending = m.blocked = False
        m.accepted = max(m.accepted, plan.accepted)
        m.tier = plan.tier
        m.accepted_run = m.queued_run
        m.recoverable = "none"
        m.queued, m.queued_run, m.reason, m.immediate = 0, "", "", False

    def recovery_counts(self, active: str, known: frozenset[str], target: int) -> bool:
        """B9: a recovery copy in a recovery-only tier, of the active and the queued run, at
        least as new as the target revision."""
        copy = self.recovery
        return (
            copy is not None and target > 0 and copy.revision >= target
            and self.role(copy.tier) == "recovery-only"
            and same_run(copy.run_id, active, known)
            and same_run(copy.run_id, self.model.queued_run, known)
        )

    # --- rules ----------------------------------------------------------------------------

    @initialize(target=runs)
    def seed_runs(self) -> str:
        return ACTIVE_RUN

    @rule(target=runs, run_id=st.sampled_from(["a1", " run-A", "run-B", "", "run-C"]))
    def add_run(self, run_id: str) -> str:
        return run_id

    @rule(revision=REVISIONS, run_id=runs, data=st.data(), immediate=st.booleans())
    def queue(self, revision: int, run_id: str, data: st.DataObject, immediate: bool) -> None:
        tier = data.draw(st.none() | self.tier_names, label="recoverable_tier")
        self.state = _p.reduce_persistence(
            self.state, Queued(revision, run_id, "r", immediate, tier), tiers=self.tiers
        )
        m = self.model
        m.pending = True
        m.queued = max(m.queued, revision, 0)
        m.queued_run = run_id.strip()
        m.reason, m.immediate = "r", immediate
        recovery_only = self.role(tier) == "recovery-only"
        m.blocked = not recovery_only
        if recovery_only:
            m.recoverable = normalize_tier(tier)

    @rule(data=st.data(), accepted=st.booleans(), clear=st.booleans(), run_id=runs)
    def accept(self, data: st.DataObject, accepted: bool, clear: bool, run_id: str) -> None:
        tier = data.draw(self.tier_names, label="tier")
        revision = self.near_the_queue(data, "accepted revision")
        self.state = _p.reduce_persistence(
            self.state, Accepted(tier, revision, accepted, clear, run_id), tiers=self.tiers
        )
        self.acks.append(Accepted(tier, revision, accepted, clear, run_id))
        self.model_accept(tier, revision, accepted, clear, run_id)

    def model_accept(self, tier: str, revision: int, accepted: bool, clear: bool,
                     run_id: str) -> None:
        """B7 on its own."""
        m = self.model
        if not accepted or self.role(tier) != "canonical":
            return  # B7: nothing but a canonical acceptance changes anything.
        named = run_id.strip()
        foreign = bool(named and m.queued_run and named != m.queued_run)  # another run's write
        if revision > m.accepted:  # only the ack that raises the revision says whose it is
            m.accepted = revision
            m.tier = normalize_tier(tier)
            m.accepted_run = (named if foreign else m.queued_run or named) or m.accepted_run
        if foreign:
            return  # B8: an acceptance of another run never clears a pending write.
        if max(revision, 0) < m.queued:
            return  # B7: an older write's acknowledgement leaves the newer one pending.
        m.pending = m.blocked = False
        m.recoverable = "none"
        if clear:
            m.queued, m.queued_run, m.reason, m.immediate = 0, "", "", False

    @rule(stored=persistence_states)
    def restart_from_a_stored_state(self, stored: PersistenceState) -> None:
        """A state stored earlier (perhaps under another tier table) is loaded again."""
        self.state = stored
        self.model = PersistenceModel(
            stored.pending_persist, stored.writes_blocked, stored.last_accepted_revision,
            normalize_tier(stored.accepted_tier), stored.accepted_run_id.strip(),
            normalize_tier(stored.last_recoverable_tier), stored.queued_revision,
            stored.queued_run_id.strip(), stored.queued_reason, stored.queued_immediate,
        )
        self.high_water = stored.last_accepted_revision
        self.acks.clear()  # the acks that led here were of another history

    @precondition(lambda self: bool(self.acks))
    @rule(data=st.data())
    def an_earlier_ack_comes_again(self, data: st.DataObject) -> None:
        """B7: a duplicate or late acknowledgement, replayed at any moment, never changes whose
        revision was accepted, so it never turns a turn the gate lets start into a deferred one
        (once, a replayed ack left `accepted_run_id` empty)."""
        ack = data.draw(st.sampled_from(self.acks), label="replayed ack")
        before = [self.ask_gate(other, 0)[0].may_start for other in (False, True)]
        accepted = (self.state.last_accepted_revision, self.state.accepted_tier,
                    self.state.accepted_run_id)
        self.state = _p.reduce_persistence(self.state, ack, tiers=self.tiers)
        self.model_accept(ack.tier, ack.revision, ack.accepted, ack.clear_queued, ack.run_id)
        assert (self.state.last_accepted_revision, self.state.accepted_tier,
                self.state.accepted_run_id) == accepted, (ack, self.state)
        after = [self.ask_gate(other, 0)[0].may_start for other in (False, True)]
        assert all(a or not b for a, b in zip(after, before, strict=True)), (ack, before, after)

    def near_the_queue(self, data: st.DataObject, label: str) -> int:
        """A revision drawn anywhere, or just around the queued one (where B8/B9 decide)."""
        queued = self.model.queued
        return data.draw(REVISIONS | st.integers(-1, 1).map(lambda d: queued + d), label=label)

    @rule(data=st.data(), run_id=RUN_IDS, accepted=st.booleans())
    def store_writes_a_marker(self, data: st.DataObject, run_id: str, accepted: bool) -> None:
        # A store writes its own (canonical) tier mostly; other names test B8's tier check.
        canonical = st.sampled_from(sorted(self.tiers.canonical)) if self.tiers.canonical else (
            self.tier_names)
        tier = data.draw(canonical | self.tier_names, label="marker tier")
        revision = self.near_the_queue(data, "marker revision")
        self.marker = CommitMarker(run_id, revision, tier, accepted)

    @rule()
    def marker_lost(self) -> None:
        self.marker = None

    @rule(data=st.data(), run_id=RUN_IDS)
    def shell_writes_a_recovery_copy(self, data: st.DataObject, run_id: str) -> None:
        tier = data.draw(self.tier_names, label="recovery tier")
        revision = self.near_the_queue(data, "recovery revision")
        self.recovery = RecoveryCopy(run_id, revision, tier)

    @rule()
    def recovery_copy_removed(self) -> None:
        self.recovery = None

    @rule(batch=st.integers(-1, 12))
    def settle(self, batch: int) -> None:
        expected = self.expected_plan(ACTIVE_RUN, ACTIVE_IDS, batch)
        outcome = _p.settle_stale_pending(self.state, self.identity, marker=self.marker,
                                          batch_revision=batch, tiers=self.tiers)
        plan = outcome.plan
        assert (plan.clears, plan.reason) == (expected.clears, expected.reason), (plan, expected)
        assert plan.target_revision == expected.target, (plan, expected)
        if expected.clears:
            assert (plan.accepted_revision, normalize_tier(plan.tier)) == (
                expected.accepted, expected.tier), (plan, expected)
            self.model_clear(expected)
        self.state = outcome.state

    def expected_gate(self, other: bool, batch: int) -> tuple[bool, str, ExpectedPlan | None]:
        """B9 on its own: (may start, reason, the B8 plan when it clears)."""
        active, known = (OTHER_RUN, frozenset({OTHER_RUN})) if other else (ACTIVE_RUN, ACTIVE_IDS)
        m = self.model
        if not m.pending:
            return True, "confirmed", None
        if m.queued_run and not same_run(active, m.queued_run, known):
            return False, "queued-run-mismatch", None
        plan = self.expected_plan(active, known, batch)
        if plan.clears:
            return True, "stale-pending-cleared", plan
        if self.recovery_counts(active, known, plan.target):
            return True, "recovery-copy", None
        return False, "pending-persist", None

    def ask_gate(self, other: bool, batch: int) -> tuple[TurnGate, ExpectedPlan | None]:
        identity = RunIdentity(run_id=OTHER_RUN) if other else self.identity
        gate = _p.turn_gate(self.state, identity, recovery=self.recovery, marker=self.marker,
                            batch_revision=batch, tiers=self.tiers)
        may_start, reason, plan = self.expected_gate(other, batch)
        assert (gate.may_start, gate.reason) == (may_start, reason), (
            gate, reason, self.marker, self.recovery)
        assert gate.may_start or gate.detail, "a deferred turn says why (B4)"
        if plan is None:
            assert gate.state == self.state, "only a cleared stale flag changes the state (B9)"
        return gate, plan

    @rule(batch=st.integers(-1, 12), other=st.booleans())
    def gate(self, batch: int, other: bool) -> None:
        gate, plan = self.ask_gate(other, batch)
        if plan is not None:
            self.model_clear(plan)
        self.state = gate.state

    @rule(data=st.data(), revision=REVISIONS)
    def bound_table_agrees_or_refuses(self, data: st.DataObject, revision: int) -> None:
        """B4: the bound table reduces exactly like the bare reducer on a known tier and
        refuses an unknown one, naming the known tiers; the state is left as it was."""
        tier = data.draw(self.tier_names, label="tier")
        event = Accepted(tier, revision)
        known = {normalize_tier(t) for t in
                 self.tiers.canonical | self.tiers.recovery_only | self.tiers.replica_only}
        bound = self.tiers.bind()
        if normalize_tier(tier) in known:
            assert bound.reduce(self.state, event) == _p.reduce_persistence(
                self.state, event, tiers=self.tiers)
        else:
            try:
                bound.reduce(self.state, event)
            except UnknownTierError as error:
                assert all(name in str(error) for name in known), error
            else:
                raise AssertionError(f"the bound table took the unknown tier {tier!r}")

    # --- invariants ------------------------------------------------------------------------

    @invariant()
    def agrees_with_the_model(self) -> None:
        s, m = self.state, self.model
        assert (s.pending_persist, s.writes_blocked) == (m.pending, m.blocked), (s, m)
        assert (s.last_accepted_revision, s.accepted_tier) == (m.accepted, m.tier), (s, m)
        assert s.accepted_run_id == m.accepted_run, (s, m)
        assert s.last_recoverable_tier == m.recoverable, (s, m)
        assert (s.queued_revision, s.queued_run_id) == (m.queued, m.queued_run), (s, m)
        assert (s.queued_reason, s.queued_immediate) == (m.reason, m.immediate), (s, m)

    @invariant()
    def planner_and_gate_agree_with_the_model(self) -> None:
        """After every step, not only when a rule asks: the B8 plan for the active run, and
        the B9 gate for the active run and for another run, with the marker and recovery copy
        in hand (the state is not carried on with here)."""
        expected = self.expected_plan(ACTIVE_RUN, ACTIVE_IDS, 0)
        plan = _p.plan_stale_pending_clear(self.state, self.identity, marker=self.marker,
                                           tiers=self.tiers)
        assert (plan.clears, plan.reason) == (expected.clears, expected.reason), (
            plan, expected, self.marker)
        for other in (False, True):
            self.ask_gate(other, 0)

    @invariant()
    def last_accepted_never_decreases(self) -> None:
        assert self.state.last_accepted_revision >= self.high_water
        self.high_water = self.state.last_accepted_revision

    @invariant()
    def covered_canonical_pending_always_clears(self) -> None:
        """B8: confirmed ≥ queued, same run, canonical tier ⟹ the pending flag goes."""
        m = self.model
        if (
            m.pending and m.queued > 0 and m.accepted >= m.queued
            and self.role(m.tier) == "canonical"
            and same_run(m.accepted_run, m.queued_run, ACTIVE_IDS)
            and m.queued_run in ACTIVE_IDS
        ):
            gate = _p.turn_gate(self.state, self.identity, tiers=self.tiers)
            assert gate.may_start and not gate.state.pending_persist, gate


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
    "same_run",
]
