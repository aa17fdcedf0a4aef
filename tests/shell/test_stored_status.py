"""`autodev status` reads the few fields it shows straight from the stored JSON (C6, cold start):
the scheduler state's status, zone, due participant, wait, limits, outages, failure streak and
calls, and the flat persistence state. These properties hold the fast readers to the full
cattrs restore on every state the scheduler and the serializer produce."""

from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import invariant

from autodev_core.control.persistence import PersistenceState
from autodev_core.engine import PROVIDERS
from autodev_core.names import PAUSE_REASONS
from autodev_core.participant import Participant
from autodev_core.scheduler.effects import STATUSES
from autodev_core.scheduler.state import (
    EngineLimit,
    Outage,
    SchedulerConfig,
    SchedulerState,
    initial_state,
)
from autodev_core.serialization import from_json, json_converter, to_json
from autodev_core.testing import SchedulerMachine, engines, scheduler_configs
from autodev_core.testing.persistence_machine import persistence_states
from autodev_shell.status import stored as stored_status
from autodev_shell.status.stored import read_stored_status, status_of


def _restored(text: str) -> Any:
    """What the full restore makes of `text` (the converter, as the daemon restores it)."""
    return status_of(json_converter.structure(json.loads(text), SchedulerState))


def offsets() -> st.SearchStrategy[timezone]:
    return st.integers(min_value=-12 * 4, max_value=14 * 4).map(
        lambda quarters: timezone(timedelta(minutes=15 * quarters)))


def instants() -> st.SearchStrategy[datetime]:
    """Aware instants, in UTC or another offset (the reader keeps the offset it finds)."""
    return st.builds(
        lambda naive, zone: naive.replace(tzinfo=zone),
        st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1)),
        st.one_of(st.just(UTC), offsets()),
    )


@st.composite
def scheduler_states(draw: st.DrawFn, *, min_limits: int = 0) -> SchedulerState:
    """Any state the scheduler can hold as far as status is concerned: random teams and zones,
    limits (some reported by other runs), outages, waits, streaks and counts."""
    config = draw(scheduler_configs(max_team=4))
    limits = draw(st.lists(st.builds(
        EngineLimit, engine=engines(), until=instants(), read=st.booleans(),
        seen=st.none() | instants(), source=st.sampled_from(("", "", "laptop/run-2", "ci"))),
        min_size=min_limits, max_size=4))
    outages = draw(st.lists(st.builds(
        Outage, provider=st.sampled_from(PROVIDERS), retry_at=instants(),
        attempts=st.integers(min_value=1, max_value=50)), max_size=3))
    status = draw(st.sampled_from(STATUSES))
    return attrs.evolve(
        initial_state(config),
        status=status,
        # Why a paused run paused (None too: a state saved before reasons were kept).
        paused_for=draw(st.none() | st.sampled_from(PAUSE_REASONS)) if status == "paused"
        else None,
        due=draw(st.integers(min_value=0, max_value=len(config.team) - 1)),
        limits=tuple(limits),
        outages=tuple(outages),
        wait_until=draw(st.none() | instants()),
        failures=draw(st.integers(min_value=0, max_value=40)),
        iterations=draw(st.integers(min_value=0, max_value=10**6)),
    )


def test_A42_the_reader_knows_the_statuses_the_scheduler_knows() -> None:
    assert stored_status.STATUSES == STATUSES


@given(scheduler_states())
def test_C6_status_reads_what_the_full_restore_reads(state: SchedulerState) -> None:
    text = to_json(state)
    assert read_stored_status(text) == _restored(text)


@given(scheduler_states(), st.data())
def test_C6_a_state_the_reader_does_not_expect_is_refused_not_misread(
    state: SchedulerState, data: st.DataObject
) -> None:
    """A key missing or a value of another type (an older or damaged state): the reader says
    so (the command then restores the state in full), it never shows a wrong value."""
    raw = json.loads(to_json(state))
    key = data.draw(st.sampled_from(
        ("status", "due", "wait_until", "limits", "outages", "failures", "iterations", "config",
         "paused_for")))
    if data.draw(st.booleans()):
        del raw[key]
    else:
        raw[key] = data.draw(st.sampled_from(("", "12", 1.5, True, {}, [None])))
    text = json.dumps(raw)
    try:
        read = read_stored_status(text)
    except ValueError:
        return
    assert read == _restored(text)  # the replacement happened to be well-formed


@given(scheduler_states(min_limits=1))
def test_C6_a_state_stored_before_shared_limits_is_restored_in_full(
    state: SchedulerState,
) -> None:
    """Limits stored before sharing (docs/sharing.md) have no `source`: the reader refuses
    them, and status falls back to the full restore, which fills in the default (this run's own
    limit)."""
    from autodev_shell.status.report import _stored_status

    raw = json.loads(to_json(state))
    for limit in raw["limits"]:
        del limit["source"]
    old = json.dumps(raw)
    with pytest.raises(ValueError):
        read_stored_status(old)
    own = attrs.evolve(state, limits=tuple(attrs.evolve(r, source="") for r in state.limits))
    assert _stored_status(old) == status_of(own)


class StatusAgreesOnEveryStateAStepMakes(SchedulerMachine):
    """After every step of a random run (limits, outages, shared limits, waits, pauses): what
    status reads of the stored state is what the restore reads."""

    @invariant()
    def status_reads_what_the_restore_reads(self) -> None:
        if self.state is not None:
            text = to_json(self.state)
            assert read_stored_status(text) == _restored(text)


TestStatusAgreesOnEveryStateAStepMakes = StatusAgreesOnEveryStateAStepMakes.TestCase
if os.environ.get("HYPOTHESIS_PROFILE") != "thorough":  # CI: a few runs, well under a minute
    TestStatusAgreesOnEveryStateAStepMakes.settings = settings(
        TestStatusAgreesOnEveryStateAStepMakes.settings, max_examples=15, stateful_step_count=30
    )


# --- the persistence state: a flat record, read without cattrs -------------------------------


@given(persistence_states)
def test_B4_a_flat_record_reads_as_the_converter_reads_it(state: PersistenceState) -> None:
    text = to_json(state)
    assert from_json(text, PersistenceState) == json_converter.structure(
        json.loads(text), PersistenceState) == state


_FIELDS = [f.name for f in attrs.fields(PersistenceState)]
_VALUES = st.one_of(st.booleans(), st.integers(-3, 3), st.text(max_size=4), st.none(),
                    st.floats(allow_nan=False, max_value=3, min_value=-3), st.just([]))


@given(st.dictionaries(st.sampled_from([*_FIELDS, "extra"]), _VALUES))
def test_B4_any_record_reads_as_the_converter_reads_it_or_fails_as_it_fails(
    raw: dict[str, Any]
) -> None:
    """Wrong types, unknown keys, missing keys: the fast path leaves them to the converter, so
    the result (or the refusal) is the converter's own."""
    text = json.dumps(raw)
    try:
        expected: Any = json_converter.structure(json.loads(text), PersistenceState)
    except Exception as exc:  # whatever the converter raises, from_json raises
        expected = type(exc)
    try:
        got: Any = from_json(text, PersistenceState)
    except Exception as exc:
        got = type(exc)
    assert got == expected


def test_C6_status_counts_the_posts_without_reading_them(tmp_path: Path) -> None:
    """A long run's thread is most of its store: status and the persistence line it shares
    with the daemon's start (`read_on_disk`) read the run state, never a post's text."""
    from helpers.faults import DiskSwitch, faulty_connection

    from autodev_shell.status.report import status_facts, status_lines
    from autodev_shell.store.run_store import NewPost, RunStore

    at = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
    state = initial_state(SchedulerConfig(team=(Participant(id="ana", provider="claude"),)))
    switch = DiskSwitch()  # the store's statements, through the `helpers.faults` seam
    store = RunStore.open(tmp_path / "run.db", create=True, run_id="long", now=at,
                          factory=faulty_connection(switch))
    try:
        for revision in (1, 2):
            posts = tuple(NewPost("ana", "claude", f"post {revision}.{i}", at,
                                  key=f"t{revision}/{i}") for i in range(3))
            store.commit(revision, posts, to_json(state),
                         persistence_state_json=to_json(PersistenceState()), now=at)
        read: list[str] = []
        switch.listeners.append(lambda _database, sql: read.append(" ".join(sql.split())))
        facts = status_facts(store, at)
        assert facts["posts"] == 6 and facts["persistence"]["revision"] == 2
        assert "posts: 6" in status_lines(store, at)
        assert any("FROM posts" in sql for sql in read), read  # it did count them
        assert [sql for sql in read if re.search(r"\btext\b[^()]* FROM posts", sql)] == []
    finally:
        store.close()
