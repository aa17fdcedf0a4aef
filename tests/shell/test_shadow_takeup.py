"""The shadow copy across restarts (SPEC B9, C3).

A daemon that died while the store failed leaves `run.db.shadow.json`; the next daemon takes
its revisions up, goes on counting above them, and commits them to SQLite once it works.
Revisions of other runs stay in the file; the file stays bounded and says what it dropped.
"""

from __future__ import annotations

import io
from datetime import timedelta
from pathlib import Path

from helpers.clock import T0 as NOW
from helpers.faults import DiskSwitch, faulty_connection
from helpers.scripted import EXAMPLES, scripted_runner

from autodev_core.control.identity import resolve_active_identity
from autodev_core.simulation.scenario import parse_scenario
from autodev_shell.clock import FakeClock
from autodev_shell.durability.paths import shadow_path
from autodev_shell.durability.shadow_file import read_shadow
from autodev_shell.durability.writes import Durability
from autodev_shell.runner import StreamLog
from autodev_shell.store.run_store import NewPost, RunStore

RUN = resolve_active_identity(run_id="test-run")


def post(revision: int, size: int = 10) -> tuple[NewPost, ...]:
    return (NewPost("ana", "claude", f"rev {revision} " + "x" * size, NOW, key=f"k{revision}"),)


def shadowed_store(db: Path, *, good: int, shadowed: int, identity: object = RUN,
                   size: int = 10) -> None:
    """Commit revisions 1..good, then fail the disk for `shadowed` more: a daemon that died
    with those only in the shadow copy."""
    switch = DiskSwitch()
    store = RunStore.open(db, create=True, run_id="test-run", now=NOW,
                          factory=faulty_connection(switch))
    durability = Durability.open(store, identity)  # type: ignore[arg-type]
    for revision in range(1, good + shadowed + 1):
        if revision == good + 1:
            switch.fail()
        result = durability.persist_revision(revision, post(revision, size), "{}",
                                             identity=identity, now=NOW)  # type: ignore[arg-type]
        assert result.outcome == ("committed" if revision <= good else "shadowed")
    store.close()


def test_C3_a_restart_after_a_shadowed_write_goes_on_and_commits_the_shadow(
    tmp_path: Path,
) -> None:
    db = tmp_path / "run.db"
    shadowed_store(db, good=2, shadowed=2)
    scenario = parse_scenario((EXAMPLES / "02-colleague-round-robin.yaml").read_text())
    clock = FakeClock(scenario.start)
    store = RunStore.open(db)
    durability = Durability.open(store, RUN)
    assert durability.pending == (3, 4) and durability.highest_revision == 4
    log = StreamLog(scenario.zone, stream=io.StringIO())
    runner = scripted_runner(scenario, store, clock, durability=durability, log=log,
                             slice_seconds=3600)
    assert runner.revision == 4
    summary = runner.run(stop_at=scenario.until)  # before: ValueError, on every restart
    assert summary.status == "stopped"
    keys = [p.key for p in store.thread()]
    assert keys[:4] == ["k1", "k2", "k3", "k4"], "the shadowed posts are in the thread, once"
    assert len(set(keys)) == len(keys)
    assert store.revision == summary.revisions > 4
    assert not shadow_path(db).exists()
    assert not runner.durability.state.pending_persist


def test_C3_the_counter_goes_on_above_a_marker_or_another_runs_shadow(tmp_path: Path) -> None:
    db = tmp_path / "run.db"
    aliased = resolve_active_identity(run_id="test-run", integrity_id="int-9")
    shadowed_store(db, good=1, shadowed=3, identity=aliased)
    store = RunStore.open(db)
    durability = Durability.open(store, RUN)  # int-9 is not known to this daemon: another run
    assert durability.pending == () and durability.kept_for_other_runs == (2, 3, 4)
    assert durability.highest_revision == 4


def test_B9_shadow_revisions_of_another_run_survive_the_next_commit(tmp_path: Path) -> None:
    db = tmp_path / "run.db"
    aliased = resolve_active_identity(run_id="test-run", integrity_id="int-9")
    shadowed_store(db, good=1, shadowed=2, identity=aliased)
    store = RunStore.open(db)
    durability = Durability.open(store, RUN)
    result = durability.persist_revision(5, post(5), "{}", identity=RUN, now=NOW)
    assert result.outcome == "committed"
    shadow = read_shadow(shadow_path(db))
    assert shadow is not None, "docs/store.md: they stay in the file"
    assert [(p.run_id, p.revision) for p in shadow.pending] == [("int-9", 2), ("int-9", 3)]
    assert [p.key for p in store.thread()] == ["k1", "k5"], "never applied to this run"
    # and a later failure writes this run's pending revisions beside them
    switch = DiskSwitch()
    store.close()
    store = RunStore.open(db, factory=faulty_connection(switch))
    durability = Durability.open(store, RUN)
    switch.fail()
    durability.persist_revision(6, post(6), "{}", identity=RUN, now=NOW)
    shadow = read_shadow(shadow_path(db))
    assert shadow is not None
    assert [(p.run_id, p.revision) for p in shadow.pending] == [
        ("int-9", 2), ("int-9", 3), ("test-run", 6)]


def test_C3_the_shadow_file_stays_bounded_and_says_what_it_dropped(tmp_path: Path) -> None:
    db = tmp_path / "run.db"
    switch = DiskSwitch()
    store = RunStore.open(db, create=True, run_id="test-run", now=NOW,
                          factory=faulty_connection(switch))
    durability = Durability.open(store, RUN, shadow_max_bytes=60_000)
    switch.fail()
    big_state = '{"state": "' + "s" * 5_000 + '"}'
    sizes = []
    for revision in range(1, 41):
        result = durability.persist_revision(revision, post(revision, 3_000), big_state,
                                             identity=RUN, now=NOW + timedelta(seconds=revision))
        sizes.append(shadow_path(db).stat().st_size)
    assert max(sizes) <= 60_000
    shadow = read_shadow(shadow_path(db))
    assert shadow is not None
    kept = [p.revision for p in shadow.pending]
    assert kept[-1] == 40 and kept == sorted(kept), "the newest revisions are kept"
    assert [p.scheduler_state_json for p in shadow.pending][:-1] == [""] * (len(kept) - 1), (
        "only the newest scheduler state is kept")
    assert shadow.dropped and shadow.dropped[0] == "run 'test-run' revision 1 (1 posts)"
    assert result.shadow_dropped  # the loop logs what was left out
    # A copy that no longer holds every pending revision lets no turn start (B9) ...
    assert result.gate.reason == "pending-persist" and result.state.writes_blocked
    # ... but nothing is lost while the daemon lives: the store takes everything once it works.
    switch.heal()
    done = durability.retry(identity=RUN, now=NOW + timedelta(minutes=5))
    assert done.outcome == "committed" and done.committed == tuple(range(1, 41))
    assert [p.key for p in store.thread()] == [f"k{r}" for r in range(1, 41)]
    assert store.snapshot().scheduler_state_json == big_state


def persistence_line(db: Path) -> str:
    from autodev_shell.status.report import status_lines

    store = RunStore.open(db)
    try:
        return next(x for x in status_lines(store, NOW) if x.startswith("persistence: "))
    finally:
        store.close()


def test_C6_status_shows_revisions_held_only_by_the_shadow_copy(tmp_path: Path) -> None:
    db = tmp_path / "run.db"
    shadowed_store(db, good=2, shadowed=2)
    line = persistence_line(db)
    assert not line.startswith("persistence: revision 2 confirmed by sqlite"), line
    assert "revision 4 for run 'test-run'" in line and "waiting for confirmation" in line
    assert "recovery copy in shadow" in line
    assert "revisions 3-4 only in the shadow copy, not yet in the store" in line
    assert line.endswith("store at revision 2")


def test_C6_status_settles_with_the_daemons_planner_under_B3(tmp_path: Path) -> None:
    # The daemon persisted under the store's integrity id; its marker names that id, not the
    # store's run id. Equivalent runs (B3): the marker confirms the committed revision (B8).
    db = tmp_path / "run.db"
    store = RunStore.open(db, create=True, run_id="test-run", integrity_id="int-9", now=NOW)
    identity = resolve_active_identity(run_id="test-run", integrity_id="int-9")
    durability = Durability.open(store, identity)
    for revision in (1, 2):
        durability.persist_revision(revision, post(revision), "{}", identity=identity, now=NOW)
    store.close()
    assert persistence_line(db) == (
        "persistence: revision 2 confirmed by sqlite; store at revision 2")
