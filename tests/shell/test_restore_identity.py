"""`autodev restore` checks identity (SPEC B1, B3, B14)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from helpers.clock import T0 as NOW

from autodev_core.control.identity import resolve_active_identity
from autodev_core.control.replicas import plan_checkpoint_restore
from autodev_shell.cli import main
from autodev_shell.durability import paths
from autodev_shell.durability.checkpoint import write_checkpoint
from autodev_shell.durability.paths import checkpoint_path
from autodev_shell.store.run_store import NewPost, RunStore


def make_run(directory: Path, run_id: str, revisions: int, *, checkpoint: bool = True) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    db = directory / "run.db"
    with RunStore.open(db, create=True, run_id=run_id, aliases=[f"{run_id}-alias"],
                       now=NOW) as store:
        for revision in range(1, revisions + 1):
            store.commit(revision, (NewPost("ana", "claude", f"{run_id} {revision}", NOW),),
                         "{}", persistence_state_json="{}", now=NOW)
        if checkpoint:
            assert write_checkpoint(store, checkpoint_path(db), now=NOW).ok
    return db


def test_B14_B3_the_plan_refuses_a_checkpoint_of_another_run() -> None:
    a = resolve_active_identity(run_id="run-A", aliases=["old-A"])
    assert plan_checkpoint_restore(4, 7, store_identity=a, checkpoint_run_id="run-B").reason == (
        "other-run")
    assert plan_checkpoint_restore(4, 7, store_identity=a, checkpoint_run_id=" old-A ").allowed
    assert plan_checkpoint_restore(4, 7).allowed  # without identities: revisions only, as before
    assert plan_checkpoint_restore(None, 7, store_identity=None,
                                   checkpoint_run_id="run-B").allowed


def test_B14_B1_restore_refuses_another_runs_checkpoint_and_keeps_the_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db_a = make_run(tmp_path / "a", "run-A", 4, checkpoint=False)
    db_b = make_run(tmp_path / "b", "run-B", 7)
    shutil.copy(checkpoint_path(db_b), checkpoint_path(db_a))
    code = main(["restore", "--run", str(tmp_path / "a")])
    out = capsys.readouterr().out.strip().splitlines()
    assert code == 1
    assert len(out) == 1, out
    assert "refused: the checkpoint belongs to run 'run-B', the store to run 'run-A'" in out[0]
    with RunStore.open(db_a) as store:
        assert (store.run_id, store.revision) == ("run-A", 4)
    assert not list((tmp_path / "a").glob("run.db.replaced-*")), "the old database stays put"


def test_B14_B3_restore_takes_a_checkpoint_of_the_same_run_under_an_alias(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = make_run(tmp_path / "a", "run-A", 6)
    with RunStore.open(tmp_path / "elsewhere.db", create=True, run_id="run-A-alias",
                       now=NOW) as other:
        for revision in range(1, 9):
            other.commit(revision, (), "{}", persistence_state_json="{}", now=NOW)
        assert write_checkpoint(other, checkpoint_path(db), now=NOW).ok
    assert main(["restore", "--run", str(tmp_path / "a")]) == 0
    assert "restored revision 8" in capsys.readouterr().out


# --- the mutation gate in the shell (B10-B12) ---------------------------------------------------


def test_B10_B11_a_restore_that_died_half_way_keeps_every_writer_off_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    from autodev_shell.durability import checkpoint

    run_dir = tmp_path / "a"
    db = make_run(run_dir, "run-A", 3)
    # A newer checkpoint; the restore dies after moving the old store aside.
    with RunStore.open(tmp_path / "newer.db", create=True, run_id="run-A", now=NOW) as newer:
        for revision in range(1, 6):
            newer.commit(revision, (), "{}", persistence_state_json="{}", now=NOW)
        assert write_checkpoint(newer, checkpoint_path(db), now=NOW).ok

    def dies(*_args: object, **_kwargs: object) -> None:
        raise KeyboardInterrupt  # stands for a kill in the middle of the restore

    monkeypatch.setattr(RunStore, "import_snapshot", dies)
    with pytest.raises(KeyboardInterrupt):
        checkpoint.restore_from_checkpoint(db, now=NOW)
    monkeypatch.undo()
    assert paths.restore_in_progress(db)
    team = tmp_path / "team"
    team.mkdir()
    (team / "ana.md").write_text("---\nprovider: claude\n---\nWork.\n", encoding="utf-8")
    from autodev_shell.standins import install_standins

    bin_dir = install_standins(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ.get('PATH', '')}")
    code = main(["run", str(team), "--run", str(run_dir), "--thread", "run-A"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert "Cannot start the run: a restore of the run state holds the lock." in err[0]
    assert "autodev restore --run" in err[0]
    # The daemon's own writes check the gate too (B11, before every write).
    from autodev_shell.durability.writes import Durability

    with RunStore.open(db) as store:
        durability = Durability.open(store, resolve_active_identity(run_id="run-A"))
        result = durability.persist_revision(9, (), "{}", identity=resolve_active_identity(
            run_id="run-A"), now=NOW)
        assert result.outcome == "blocked" and result.pending == (9,)
        assert "a restore of the run state holds the lock" in result.error
        assert store.revision == 0
    # Running the restore again finishes it and lifts the lock.
    assert main(["restore", "--run", str(run_dir)]) == 0
    assert not paths.restore_in_progress(db)
    with RunStore.open(db) as store:
        assert (store.run_id, store.revision) == ("run-A", 5)


def test_B10_the_daemon_tracks_its_load_state(tmp_path: Path) -> None:
    from autodev_shell.durability.writes import Durability

    identity = resolve_active_identity(run_id="run-A")
    with RunStore.open(tmp_path / "fresh.db", create=True, run_id="run-A", now=NOW) as store:
        durability = Durability.open(store, identity)
        assert durability.load_state == "empty-confirmed"
        assert durability.persist_revision(1, (), "{}", identity=identity,
                                           now=NOW).outcome == "committed"
        assert durability.load_state == "loaded"
        assert durability.block_reason("commit", identity) is None
        assert durability.block_reason("commit", resolve_active_identity()) == (
            "Cannot commit: there is no active run.")
