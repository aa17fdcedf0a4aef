"""`autodev status` reads a run's store with sqlite3 and json alone when the store holds what
a run normally holds (C6, cold start: no attrs, no planner). These properties hold that reading
to the full path (a `RunStore`, the core's restore and its B8 planner) on stores the real code
writes: by the daemon's `Durability`, by direct commits of any persistence state and marker,
and with odd or damaged fields written by hand. Either the fast reader steps aside (the full
path then runs, as before), or both show the same facts, so the same text, JSON and exit code.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from helpers.clock import T0 as NOW
from hypothesis import given
from hypothesis import strategies as st
from test_stored_status import scheduler_states

from autodev_core.control.identity import resolve_active_identity
from autodev_core.control.persistence import DEFAULT_TIERS, PersistenceState, tier_role
from autodev_core.scheduler.state import SchedulerState
from autodev_core.serialization import to_json
from autodev_core.testing.persistence_machine import persistence_states
from autodev_shell.cli import main
from autodev_shell.durability.paths import shadow_path
from autodev_shell.durability.shadow_file import PendingRevision, ShadowCopy, write_shadow
from autodev_shell.durability.writes import Durability
from autodev_shell.status import read as status_read
from autodev_shell.status import report
from autodev_shell.status.read import read_status
from autodev_shell.store import folder
from autodev_shell.store.run_store import CANONICAL_TIER, NewPost, RunStore


def test_B5_the_restated_names_are_the_store_s_own() -> None:
    assert status_read.STORE_TIER == CANONICAL_TIER
    assert tier_role(status_read.STORE_TIER, DEFAULT_TIERS) == "canonical"
    assert set(status_read._PERSISTENCE_FIELDS) == set(json.loads(to_json(PersistenceState())))


def _full(run_dir: Path) -> Any:
    """What the full path makes of the run: its facts and zone, or the exception it raises."""
    try:
        store = folder.open_existing(run_dir)
        try:
            return report._status(store, NOW)
        finally:
            store.close()
    except Exception as exc:
        return type(exc), str(exc)


def _agree(run_dir: Path) -> bool:
    """Both paths agree on the run; True when the fast reader answered."""
    fast = read_status(folder.run_db(run_dir))
    full = _full(run_dir)
    if fast is None:
        return False
    assert report._facts(fast, NOW) == full
    return True


# --- stores as the real code writes them ------------------------------------------------------

RUN_IDS = st.sampled_from(("run-1", "run-2", " run-1 ", ""))


@contextlib.contextmanager
def _run_dir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="status-read-") as directory:
        run = Path(directory) / "run"
        run.mkdir()
        yield run


@st.composite
def openers(draw: st.DrawFn) -> Callable[[Path], RunStore]:
    """A new store of run-1: with an integrity id or not, aliases, the tier it reports."""
    integrity = draw(st.sampled_from(("", "", "int-1")))
    aliases = draw(st.sampled_from(((), (), ("run-2",), ("old-1", "run-2"))))
    tier = draw(st.sampled_from((CANONICAL_TIER, CANONICAL_TIER, " SQLite", "shadow")))
    return lambda run: RunStore.open(run / "run.db", create=True, run_id="run-1", now=NOW,
                                     integrity_id=integrity, aliases=aliases, tier=tier)


def _posts(revision: int, count: int) -> tuple[NewPost, ...]:
    return tuple(NewPost("ana", "claude", f"post {revision}.{i}", NOW, key=f"t{revision}/{i}")
                 for i in range(count))


@st.composite
def daemon_runs(draw: st.DrawFn) -> Callable[[Path], None]:
    """What the daemon leaves: revisions persisted through `Durability` (the state stored
    queued, before its own acceptance, B6, with the marker beside it), a heartbeat."""
    opener = draw(openers())
    states = draw(st.lists(scheduler_states(), min_size=0, max_size=3))
    beat = draw(st.booleans())

    def write(run: Path) -> None:
        store = opener(run)
        try:
            identity = resolve_active_identity(run_id=store.run_id,
                                               integrity_id=store.integrity_id,
                                               aliases=store.aliases())
            durability = Durability.open(store, identity)
            for revision, state in enumerate(states, start=1):
                durability.persist_revision(revision, _posts(revision, 2), to_json(state),
                                            identity=identity, now=NOW)
            if beat:
                store.heartbeat(NOW - timedelta(seconds=30), pid=4242)
        finally:
            store.close()

    return write


#: The ids a store of run-1 (integrity id int-1 or none, aliases old-1 and run-2 or not) may
#: meet in its persistence state and marker, spelled as written or not.
STORE_IDS = st.sampled_from(("run-1", " run-1", "int-1", "run-2", ""))


def near_the_marker(revision: int) -> st.SearchStrategy[PersistenceState]:
    """Persistence states around the marker committed beside them: pending or not, queued and
    accepted revisions just below, at or above it, for this run, an alias, another run."""
    return st.builds(
        PersistenceState,
        pending_persist=st.sampled_from((True, True, False)),
        writes_blocked=st.booleans(),
        last_accepted_revision=st.integers(revision - 2, revision + 1),
        accepted_tier=st.sampled_from(("sqlite", " SQLite", "shadow", "none")),
        accepted_run_id=STORE_IDS,
        last_recoverable_tier=st.sampled_from(("none", "shadow")),
        queued_revision=st.integers(-1, revision + 1),
        queued_run_id=STORE_IDS,
        queued_reason=st.sampled_from(("", "CallCancelled")),
        queued_immediate=st.booleans(),
    )


@st.composite
def committed_runs(draw: st.DrawFn) -> Callable[[Path], None]:
    """Direct commits of any persistence state, with a marker of this run or another."""
    commits = [
        (draw(scheduler_states() | st.just(None)),
         draw(near_the_marker(revision) | persistence_states),
         draw(STORE_IDS | st.none() | RUN_IDS))
        for revision in range(1, draw(st.integers(0, 3)) + 1)
    ]
    opener = draw(openers())

    def write(run: Path) -> None:
        store = opener(run)
        try:
            for revision, (state, persistence, marker_run) in enumerate(commits, start=1):
                store.commit(revision, _posts(revision, 1),
                             "{}" if state is None else to_json(state),
                             persistence_state_json=to_json(persistence), now=NOW,
                             run_id=marker_run)
        finally:
            store.close()

    return write


#: Damage done by hand after the real code wrote the store: SQL on its file, or a file beside.
DAMAGE: dict[str, str | None] = {
    "scheduler: not JSON": "UPDATE run_state SET scheduler_json = 'not json'",
    "scheduler: a key missing": "UPDATE run_state SET scheduler_json = '{\"status\": \"running\"}'",
    "scheduler: older engine": "UPDATE run_state SET scheduler_json = "
                               "replace(scheduler_json, '\"claude', '\" claude')",
    "scheduler: a number": "UPDATE run_state SET scheduler_json = 7",
    "persistence: null": "UPDATE run_state SET persistence_json = 'null'",
    "persistence: an int for a bool": "UPDATE run_state SET persistence_json = "
                                      "'{\"pending_persist\": 1}'",
    "persistence: an unknown key": "UPDATE run_state SET persistence_json = '{\"extra\": true}'",
    "persistence: pending, behind": "UPDATE run_state SET persistence_json = '{\"pending_persist"
                                    "\": true, \"queued_revision\": 99, \"queued_run_id\": "
                                    "\"run-1\"}'",
    "marker: another tier": "UPDATE run_state SET marker_tier = 'shadow'",
    "marker: another run": "UPDATE run_state SET marker_run_id = 'run-2'",
    "marker: revision as text": "UPDATE run_state SET marker_revision = '3'",
    "marker: garbage time": "UPDATE run_state SET marker_at = 'yesterday'",
    "marker: gone": "UPDATE run_state SET marker_run_id = NULL",
    "heartbeat: naive": "INSERT OR REPLACE INTO heartbeat (id, at, pid) VALUES "
                        "(1, '2026-12-01T08:00:00', 5)",
    "heartbeat: pid as text": "INSERT OR REPLACE INTO heartbeat (id, at, pid) VALUES "
                              "(1, '2026-12-01T08:00:00+00:00', 'x')",
    "alias: a number": "INSERT INTO aliases (alias, added_at) VALUES (5, 'now')",
    "run: newer layout": "UPDATE run SET schema_version = 99",
    "run: record gone": "DELETE FROM run",
    "run_state: gone": "DELETE FROM run_state",
    "run_state: revision as text": "UPDATE run_state SET revision = 'two'",
    "table: controls dropped": "DROP TABLE controls",
    "journal: rollback mode": "PRAGMA journal_mode = DELETE",
    "shadow copy": None,
    "shadow copy: garbage": None,
    "file: not SQLite": None,
    "file: empty": None,
    "file: missing": None,
}


def _damage(run: Path, what: str) -> None:
    db = run / "run.db"
    sql = DAMAGE[what]
    if sql is not None:
        conn = sqlite3.connect(db, isolation_level=None)
        try:
            conn.execute(sql)
        finally:
            conn.close()
    elif what == "shadow copy":
        write_shadow(shadow_path(db), ShadowCopy(NOW, (PendingRevision(
            99, "run-1", _posts(99, 1), "", NOW),)))
    elif what == "shadow copy: garbage":
        shadow_path(db).write_text("{", encoding="utf-8")
    elif what == "file: not SQLite":
        db.write_bytes(b"hello, not a database" * 100)
    elif what == "file: empty":
        db.write_bytes(b"")
    else:
        db.unlink()


@given(daemon_runs())
def test_C6_status_reads_the_daemon_s_store_without_the_store_s_classes(
    write: Callable[[Path], None],
) -> None:
    """What the daemon leaves after each commit is read by the fast path, never stepped over:
    the run's own queued write covered by its own marker, or nothing written yet."""
    with _run_dir() as run:
        write(run)
        tiers = sqlite3.connect(run / "run.db").execute(
            "SELECT tier FROM commit_marker").fetchall()
        if all(t == (CANONICAL_TIER,) for t in tiers):  # a marker of another tier: full path
            assert _agree(run)
        else:
            _agree(run)


@given(committed_runs())
def test_C6_status_reads_any_committed_persistence_state_as_the_planner_does(
    write: Callable[[Path], None],
) -> None:
    with _run_dir() as run:
        write(run)
        _agree(run)


@pytest.mark.parametrize(("integrity", "aliases"), [("", ()), ("int-1", ()), ("", ("run-2",))],
                         ids=("run-id", "integrity-id", "alias"))
@pytest.mark.parametrize("tier", [CANONICAL_TIER, " SQLite", "shadow"])
def test_B8_a_queued_write_shows_as_confirmed_only_when_the_planner_clears_it(
    tmp_path: Path, integrity: str, aliases: tuple[str, ...], tier: str,
) -> None:
    """B8's own cases, every one: the last commit's state holds a write queued for the run
    its marker names or for another (this run by either id, an alias, another run, none), at,
    above or below the marker, with the accepted revision below, at or above it, of that run or
    another."""
    store = RunStore.open(tmp_path / "run.db", create=True, run_id="run-1", now=NOW,
                          integrity_id=integrity, aliases=aliases, tier=tier)
    try:
        store.commit(1, (), "{}", persistence_state_json="{}", now=NOW)
        store.commit(2, _posts(2, 1), "{}", persistence_state_json="{}", now=NOW)
    finally:
        store.close()
    answered = 0
    conn = sqlite3.connect(tmp_path / "run.db", isolation_level=None)
    try:
        for queued_for in ("run-1", " run-1", "int-1", "run-2", ""):
            for accepted, queued, accepted_tier, accepted_run, marker_run in itertools.product(
                (1, 2, 3), (0, 1, 2, 3), ("sqlite", "shadow"), (queued_for, "run-2"),
                (queued_for, "run-2"),
            ):
                state = PersistenceState(
                    pending_persist=True, writes_blocked=True, last_accepted_revision=accepted,
                    accepted_tier=accepted_tier, accepted_run_id=accepted_run,
                    queued_revision=queued, queued_run_id=queued_for)
                conn.execute("UPDATE run_state SET persistence_json = ?", (to_json(state),))
                conn.execute("UPDATE run_state SET marker_run_id = ?", (marker_run,))
                answered += _agree(tmp_path)
    finally:
        conn.close()
    assert answered or tier == "shadow"  # what the daemon leaves is among them


@given(daemon_runs() | committed_runs(), st.sampled_from(sorted(DAMAGE)))
def test_C6_a_damaged_or_odd_store_shows_what_the_full_path_shows(
    write: Callable[[Path], None], damage: str,
) -> None:
    with _run_dir() as run:
        write(run)
        _damage(run, damage)
        _agree(run)


#: A store written by the layout-1 code (before layout 2, kept as written).
LAYOUT_1 = Path(__file__).resolve().parents[1] / "fixtures" / "store_v1" / "run.db"


@pytest.mark.parametrize("as_written", (True, False), ids=("as-written", "daemon-state"))
def test_C6_status_of_a_layout_1_store_shows_what_the_full_path_shows(
    tmp_path: Path, as_written: bool,
) -> None:
    """Its marker is a table of its own there: read the same, never migrated by status."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.db").write_bytes(LAYOUT_1.read_bytes())
    if not as_written:  # the state a daemon of that layout left, with a real scheduler state
        state = PersistenceState(pending_persist=True, queued_revision=3,
                                 queued_run_id="integrity-v1", accepted_run_id="integrity-v1",
                                 last_accepted_revision=2, accepted_tier="sqlite")
        conn = sqlite3.connect(run / "run.db", isolation_level=None)
        try:
            conn.execute("UPDATE run_state SET scheduler_json = '{}', persistence_json = ?",
                         (to_json(state),))
            conn.execute("UPDATE commit_marker SET run_id = 'integrity-v1'")
        finally:
            conn.close()
    assert _agree(run) is not as_written  # its scheduler state is a stand-in: the full path
    layout = sqlite3.connect(run / "run.db").execute("SELECT schema_version FROM run")
    assert layout.fetchone() == (1,)


# --- the command itself: the same text, JSON and exit code as the full path -------------------


class _Now(datetime):
    @classmethod
    def now(cls, tz: Any = None) -> Any:
        return NOW if tz is None else NOW.astimezone(tz)


def _cli(args: list[str]) -> tuple[int | str, str, str]:
    """Exit code (or the exception that escaped, as a traceback would name it), out, err."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code: int | str = main(args)
        except Exception as exc:
            code = f"{type(exc).__name__}: {exc}"
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("damage", ["", *sorted(DAMAGE)])
@pytest.mark.parametrize("json_flag", ([], ["--json"]), ids=("text", "json"))
def test_C6_status_prints_what_the_full_path_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str, json_flag: list[str],
) -> None:
    run = _daemon_run(tmp_path, damage)
    answered = read_status(run / "run.db") is not None
    assert answered or damage  # the store as the daemon left it is read by the fast path
    monkeypatch.setattr(report, "datetime", _Now)
    args = ["status", "--run", str(run), *json_flag]
    fast = _cli(args)
    monkeypatch.setattr(status_read, "read_status", lambda _db: None)
    assert fast == _cli(args)
    if not damage:
        assert fast[0] == 0 and "revision 3 confirmed by sqlite" in fast[1]


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_C6_status_of_a_store_damaged_by_hand_ends_in_a_line_not_a_traceback(
    tmp_path: Path, damage: str,
) -> None:
    """A value edited by hand: status shows what it can or says in one line which file holds
    what it cannot read (exit 2); it never lets an exception escape."""
    run = _daemon_run(tmp_path, damage)
    code, _out, err = _cli(["status", "--run", str(run)])
    assert isinstance(code, int), code
    if code != 0:
        assert code == 2 and err.count("\n") <= 2 and "run.db" in err, (code, err)


def _daemon_run(tmp_path: Path, damage: str) -> Path:
    """A run folder as the daemon leaves it after three revisions, then `damage` done to it."""
    run = tmp_path / "run"
    run.mkdir()
    from autodev_core.participant import Participant
    from autodev_core.scheduler import SchedulerConfig, initial_state

    state: SchedulerState = initial_state(SchedulerConfig(
        team=(Participant(id="ana", provider="claude"), Participant(id="rui", provider="codex")),
        timezone="Europe/Lisbon"))
    store = RunStore.open(run / "run.db", create=True, run_id="run-1", now=NOW)
    try:
        identity = resolve_active_identity(run_id=store.run_id)
        durability = Durability.open(store, identity)
        for revision in (1, 2, 3):
            durability.persist_revision(revision, _posts(revision, 2), to_json(state),
                                        identity=identity, now=NOW)
        store.heartbeat(NOW - timedelta(minutes=3), pid=4242)
    finally:
        store.close()
    if damage:
        _damage(run, damage)
    return run
