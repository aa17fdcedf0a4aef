"""When the replicas follow the primary (SPEC B13-B16): the core's sync cadence.

A backup replica (the checkpoint) holds the whole thread, so rewriting it after every commit
makes a long run quadratic. Between syncs a replica behind the primary is only "pending sync"
(B14), which is normal. The rule, stated here on its own (the tests never read the constants
they check): a replica behind is synced when it was never synced, when it is `revisions` or
more behind, when its last sync is `seconds` or more old (or in the future: the clock went
back), or when a flush is asked for (pause, stop, a clean exit). A replica ahead is rewritten
only on repair, as before; without a cadence every replica behind is synced.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from helpers.clock import T0
from hypothesis import given
from hypothesis import strategies as st

from autodev_core.control.replicas import (
    ReplicaState,
    SyncCadence,
    SyncStep,
    plan_replica_sync,
    replica_sync_due,
)


def model_due(primary: int, replica: int | None, *, every: int, seconds: float, now: datetime,
              synced: datetime | None, flush: bool) -> bool:
    """The cadence, as docs/store.md states it, for a replica behind the primary."""
    if flush or synced is None:
        return True
    behind = primary - (replica if replica is not None and replica > 0 else 0)
    age = (now - synced).total_seconds()
    return behind >= every or age >= seconds or age < 0


def model_plan(primary: int | None, replicas: list[ReplicaState], *, every: int, seconds: float,
               now: datetime, synced: dict[str, datetime], flush: bool,
               repair: bool) -> list[str]:
    """Which replicas get a step, in the order given."""
    if primary is None or primary <= 0:
        return []
    names = []
    for r in replicas:
        held = r.revision if r.revision is not None and r.revision > 0 else None
        if held is not None and held > primary:
            if repair:
                names.append(r.name)
        elif (held is None or held < primary) and model_due(
                primary, held, every=every, seconds=seconds, now=now,
                synced=synced.get(r.name), flush=flush):
            names.append(r.name)
    return names


names = st.sampled_from(["checkpoint", "search", "mirror"])
replica_lists = st.lists(
    st.builds(ReplicaState, names, st.sampled_from(["backup", "search"]),
              st.none() | st.integers(-1, 80)),
    max_size=3, unique_by=lambda r: r.name)
cadences = st.builds(SyncCadence, st.integers(1, 60), st.floats(0, 600, allow_nan=False))
offsets = st.integers(-120, 1200).map(lambda s: T0 + timedelta(seconds=s))


@given(st.none() | st.integers(-1, 80), replica_lists, cadences, offsets,
       st.dictionaries(names, offsets), st.booleans(), st.booleans())
def test_B14_a_replica_behind_is_synced_only_when_the_cadence_says_so(
    primary: int | None, replicas: list[ReplicaState], cadence: SyncCadence, now: datetime,
    synced: dict[str, datetime], flush: bool, repair: bool,
) -> None:
    plan = plan_replica_sync(primary, replicas, cadence=cadence, now=now, synced_at=synced,
                             flush=flush, repair=repair)
    expected = model_plan(primary, replicas, every=cadence.revisions, seconds=cadence.seconds,
                          now=now, synced=synced, flush=flush, repair=repair)
    assert [s.replica for s in plan.steps] == expected
    assert all(s.target_revision == primary for s in plan.steps)


@given(st.integers(1, 80), replica_lists, cadences, offsets, st.dictionaries(names, offsets))
def test_B14_a_flush_brings_every_replica_behind_level(
    primary: int, replicas: list[ReplicaState], cadence: SyncCadence, now: datetime,
    synced: dict[str, datetime],
) -> None:
    plan = plan_replica_sync(primary, replicas, cadence=cadence, now=now, synced_at=synced,
                             flush=True)
    behind = [r.name for r in replicas if r.revision is None or r.revision < primary]
    assert [s.replica for s in plan.steps] == behind
    # ... which is exactly what the plan without a cadence (after every commit) syncs.
    assert plan == plan_replica_sync(primary, replicas)


def test_B14_the_documented_default_is_25_revisions_or_a_minute() -> None:
    assert SyncCadence() == SyncCadence(revisions=25, seconds=60.0)
    last = ReplicaState("checkpoint", "backup", 10)
    due = [replica_sync_due(primary, last, cadence=SyncCadence(), now=T0 + timedelta(seconds=s),
                            synced_at=T0) for primary, s in ((34, 59.9), (35, 0), (11, 60))]
    assert due == [False, True, True]


@pytest.mark.parametrize(("revisions", "seconds"), [(0, 60), (-1, 60), (True, 60), (2.5, 60),
                                                    (25, -1), (25, float("nan")),
                                                    (25, float("inf")), (25, "60")])
def test_B14_a_cadence_that_cannot_be_kept_is_refused(revisions: object, seconds: object) -> None:
    with pytest.raises(ValueError, match="cadence"):
        SyncCadence(revisions, seconds)  # type: ignore[arg-type]


def test_B14_a_cadence_needs_the_time_now() -> None:
    with pytest.raises(ValueError, match="time now"):
        plan_replica_sync(5, [ReplicaState("checkpoint", "backup", 3)], cadence=SyncCadence())


def test_B14_a_clock_set_back_syncs_rather_than_waiting_for_it() -> None:
    replica = ReplicaState("checkpoint", "backup", 4)
    plan = plan_replica_sync(5, [replica], cadence=SyncCadence(), now=T0,
                             synced_at={"checkpoint": T0 + timedelta(hours=3)})
    assert plan.steps == (SyncStep("checkpoint", "write-checkpoint", 5),)


# --- the daemon's side of the rule, over time: a model run ---------------------------------------


@given(cadences, st.lists(st.tuples(st.sampled_from(["commit", "tick", "flush"]),
                                    st.integers(-5, 90), st.booleans(), st.booleans()),
                          max_size=60))
def test_B14_B16_never_further_behind_than_the_cadence_and_failures_are_retried(
    cadence: SyncCadence, moves: list[tuple[str, int, bool, bool]],
) -> None:
    """A shell that follows the plan: commits, heartbeats (ticks) and flushes at times that
    move on (sometimes back), with the checkpoint write or the search rebuild failing at times.
    After every move: a replica whose steps succeeded is within the cadence (fewer than
    `revisions` behind, and synced less than `seconds` ago unless level), a flush leaves it
    level, one replica's failure never keeps the other from its step (B16), and a failed one
    is planned again at the next move the rule says it is due."""
    primary = 0
    held = {"checkpoint": 0, "search": 0}
    synced: dict[str, datetime] = {}
    now = T0
    for move, step_seconds, ckpt_fails, search_fails in moves:
        now += timedelta(seconds=step_seconds)
        if move == "commit":
            primary += 1
        replicas = [ReplicaState("checkpoint", "backup", held["checkpoint"]),
                    ReplicaState("search", "search", held["search"])]
        plan = plan_replica_sync(primary, replicas, cadence=cadence, now=now,
                                 synced_at=synced, flush=move == "flush")
        planned = {s.replica for s in plan.steps}
        for name in ("checkpoint", "search"):
            behind = held[name] < primary
            due = behind and model_due(primary, held[name], every=cadence.revisions,
                                       seconds=cadence.seconds, now=now,
                                       synced=synced.get(name), flush=move == "flush")
            assert (name in planned) == due, (name, move)
        fails = {"checkpoint": ckpt_fails, "search": search_fails}
        for name in planned:  # B16: each step on its own
            if not fails[name]:
                held[name] = primary
                synced[name] = now
        for name in ("checkpoint", "search"):
            if name in planned and fails[name]:
                continue
            lag = primary - held[name]
            assert lag < cadence.revisions or lag == 0
            if lag:
                age = (now - synced[name]).total_seconds()
                assert 0 <= age < cadence.seconds
            if move == "flush":
                assert lag == 0


whole_seconds = st.builds(SyncCadence, st.integers(1, 60), st.integers(0, 600).map(float))


@given(whole_seconds, st.integers(0, 40), st.floats(0, 1, exclude_max=True))
def test_B14_the_boundaries_are_inclusive(cadence: SyncCadence, held: int,
                                          fraction: float) -> None:
    """Exactly `revisions` behind, or a last sync exactly `seconds` old, is due; one revision
    or a moment less is not."""
    replica = ReplicaState("checkpoint", "backup", held)
    recent = T0 + timedelta(seconds=cadence.seconds * fraction)
    if recent - T0 >= timedelta(seconds=cadence.seconds):
        return  # a cadence of 0 seconds: every replica behind is due at once
    at = {"checkpoint": T0}

    def due(primary: int, now: datetime) -> bool:
        return bool(plan_replica_sync(primary, [replica], cadence=cadence, now=now,
                                      synced_at=at).steps)

    assert due(held + cadence.revisions, recent)
    if cadence.revisions > 1:
        assert not due(held + cadence.revisions - 1, recent)
    assert due(held + 1, T0 + timedelta(seconds=cadence.seconds))
