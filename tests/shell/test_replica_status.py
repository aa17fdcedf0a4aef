"""What `autodev status` says of the checkpoint (SPEC B14, C6): the same audit as the core's,
read with json alone for the cases a daemon leaves."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.clock import T0 as NOW
from hypothesis import given
from hypothesis import strategies as st

from autodev_core.control.replicas import ReplicaState, audit_replicas
from autodev_core.serialization import to_json
from autodev_shell.cli import main
from autodev_shell.durability import writes as durability
from autodev_shell.durability.checkpoint import CheckpointFile
from autodev_shell.durability.paths import CHECKPOINT_SUFFIX, checkpoint_path
from autodev_shell.status.replica_status import (
    CHECKPOINT_REPLICA,
    audit_status,
    read_checkpoint_head,
    replica_facts,
)
from autodev_shell.store.run_store import RunStore


def test_the_restated_names_are_the_write_paths() -> None:
    assert CHECKPOINT_REPLICA == durability.CHECKPOINT_REPLICA


@given(st.integers(-2, 12), st.none() | st.integers(-2, 12))
def test_B14_status_says_what_the_core_audit_says(primary: int, held: int | None) -> None:
    core = audit_replicas(primary, (ReplicaState("checkpoint", "backup", held),)).status
    assert audit_status(primary, held) == core


def _store_with_checkpoint(tmp_path: Path, revision: int) -> Path:
    """A store at revision 3 and a checkpoint of its snapshot at `revision` (as written)."""
    run = tmp_path / "run"
    run.mkdir()
    store = RunStore.open(run / "run.db", create=True, run_id="r", now=NOW)
    for rev in (1, 2, 3):
        store.commit(rev, (), "{}", persistence_state_json="{}", now=NOW, run_id="r")
        if rev == revision:
            path = checkpoint_path(store.path)
            path.write_text(to_json(CheckpointFile(NOW, store.snapshot())), encoding="utf-8")
    store.close()
    return run


@pytest.mark.parametrize(("revision", "words"), [
    (3, "checkpoint: revision 3, level with the store"),
    (1, "checkpoint: revision 1, 2 revisions behind the store, written "),
    (0, "checkpoint: none yet; replicas pending sync"),
])
def test_B14_status_reports_the_checkpoint_level_or_pending_sync(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], revision: int, words: str,
) -> None:
    run = _store_with_checkpoint(tmp_path, revision)
    assert main(["status", "--run", str(run)]) == 0
    out = capsys.readouterr().out
    assert words in out
    assert ("replicas pending sync" in out) == (revision != 3)
    assert main(["status", "--run", str(run), "--json"]) == 0
    facts = json.loads(capsys.readouterr().out)["replicas"]
    assert facts["status"] == ("in-sync" if revision == 3 else "pending-sync")
    assert facts["checkpoint"]["revision"] == (revision or None)


@pytest.mark.parametrize("damage", ["garbage", '{"format": "other"}', "",
                                    '{"format": "autodev-checkpoint", "snapshot": {"revision": '
                                    '"3"}, "written_at": "2026-12-01T09:00:00+00:00"}',
                                    '{"format": "autodev-checkpoint", "snapshot": {"revision": 3},'
                                    ' "written_at": "yesterday"}'])
def test_B14_an_unreadable_checkpoint_is_pending_sync_and_status_still_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: str,
) -> None:
    run = _store_with_checkpoint(tmp_path, 3)
    (run / ("run.db" + CHECKPOINT_SUFFIX)).write_text(damage, encoding="utf-8")
    assert read_checkpoint_head(run / ("run.db" + CHECKPOINT_SUFFIX))[2] is False
    assert replica_facts(run / "run.db", 3)["status"] == "pending-sync"
    assert main(["status", "--run", str(run)]) == 0
    assert "checkpoint: unreadable" in capsys.readouterr().out


def test_B14_a_checkpoint_ahead_of_the_store_is_drift(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    run = _store_with_checkpoint(tmp_path, 3)
    ahead = run / "ahead"
    ahead.mkdir()
    store = RunStore.open(ahead / "run.db", create=True, run_id="r", now=NOW)
    store.commit(1, (), "{}", persistence_state_json="{}", now=NOW, run_id="r")
    store.close()
    (ahead / ("run.db" + CHECKPOINT_SUFFIX)).write_bytes(
        (run / ("run.db" + CHECKPOINT_SUFFIX)).read_bytes())
    assert main(["status", "--run", str(ahead)]) == 0
    assert "drift" in capsys.readouterr().out
