"""Reliability of the durable store on real processes and real SQLite (SPEC C3, C4, B6, B9, B14).

1. kill -9 of a writer at random instants: every acknowledged post survives exactly once, the
   database passes `PRAGMA integrity_check`, and a restarted writer continues from the last
   committed revision. 20 trials under HYPOTHESIS_PROFILE=thorough, 5 otherwise.
2. a canonical write that really fails (a lowered RLIMIT_FSIZE makes the kernel refuse SQLite's
   WAL growth; root ignores read-only files, so permissions cannot do it) leaves a shadow copy,
   confirms nothing, and recovers when the limit is lifted, nothing lost.
3. a corrupt or truncated database is detected with a clear message and restored from the
   checkpoint only when the core's audit allows it.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest
from helpers.store_writer import posts_for, state_for

from autodev_shell.durability.checkpoint import (
    offer_restore,
    read_checkpoint,
    restore_from_checkpoint,
)
from autodev_shell.durability.files import sweep_temp_files
from autodev_shell.durability.paths import checkpoint_path, shadow_path
from autodev_shell.durability.shadow_file import read_shadow
from autodev_shell.store.run_store import RunStore, StoreError

HELPERS = Path(__file__).parents[1] / "helpers"
WRITER = HELPERS / "store_writer.py"
FSIZE_WRITER = HELPERS / "fsize_writer.py"
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
#: Kill trials: the thorough profile asks for at least 20, CI runs 5.
TRIALS = 20 if os.environ.get("HYPOTHESIS_PROFILE") == "thorough" else 5
#: Upper bound of the random delay before the kill, after the writer opened the store.
MAX_KILL_DELAY = 0.3
PROCESS_TIMEOUT = 60


class Writer:
    """A writer process whose stdout is collected line by line on a thread."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen([sys.executable, str(WRITER), *args],
                                     stdout=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self.started = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.strip())
            if line.startswith("start"):
                self.started.set()
        self.started.set()

    def kill(self) -> list[str]:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=PROCESS_TIMEOUT)
        self._reader.join(timeout=PROCESS_TIMEOUT)
        return list(self.lines)


def _expected_keys(revision: int) -> list[str]:
    return [p.key for r in range(1, revision + 1) for p in posts_for(r)]


@pytest.mark.slow
def test_C3_kill_9_at_random_instants_loses_no_acknowledged_post(tmp_path: Path) -> None:
    db = tmp_path / "run.db"
    rng = random.Random(20261201)  # Fixed seed: the same instants on every run of CI.
    total_acks = 0
    committed = 0
    for trial in range(TRIALS):
        args = [str(db), "run-1", "--replay-last"]
        if trial % 2:
            args.append("--checkpoint")
        writer = Writer(*args)
        if trial % 4 != 3:
            # Most kills land while revisions are being committed...
            assert writer.started.wait(PROCESS_TIMEOUT)
            time.sleep(rng.uniform(0, MAX_KILL_DELAY))
        else:
            # ...some while the interpreter starts or the store is being opened or created.
            time.sleep(rng.uniform(0.1, 0.6))
        lines = writer.kill()
        acks = [int(line.split()[1]) for line in lines if line.startswith("ack ")]
        starts = [int(line.split()[1]) for line in lines if line.startswith("start ")]
        total_acks += len(acks)
        if starts:
            # A restarted writer continues from the last committed revision.
            assert starts[0] == committed, f"trial {trial}: started at {starts[0]}"
            assert acks == list(range(committed + 1, committed + 1 + len(acks)))
        if not db.exists():
            assert not acks
            continue
        with RunStore.open(db) as store:  # Refuses a corrupt file (integrity check).
            assert store.integrity_check() == ("ok",)
            snapshot = store.snapshot()
        revision = snapshot.revision
        assert revision >= max(acks, default=committed), f"trial {trial}: lost an ack"
        keys = [p.key for p in snapshot.posts]
        duplicated = [k for k, n in Counter(keys).items() if n > 1]
        assert not duplicated, f"trial {trial}: duplicated posts {duplicated}"
        # Every committed revision is whole (atomic), acknowledged or not, and in order.
        assert keys == _expected_keys(revision)
        assert [p.text for p in snapshot.posts] == [
            p.text for r in range(1, revision + 1) for p in posts_for(r)]
        if revision:
            assert snapshot.scheduler_state_json == state_for(revision)
            assert snapshot.marker is not None and snapshot.marker.revision == revision
        ckpt_file = checkpoint_path(db)
        ckpt = read_checkpoint(ckpt_file)  # Whole or absent, never half-written.
        if ckpt is not None:
            assert ckpt.revision <= revision
            assert [p.key for p in ckpt.snapshot.posts] == _expected_keys(ckpt.revision)
        sweep_temp_files(ckpt_file)
        assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
        committed = revision
    assert total_acks > 0, "no trial let the writer commit anything: the test saw nothing"
    # The store is still writable by a fresh writer after all the kills.
    final = Writer(str(db), "run-1", "--max", str(committed + 3))
    final.proc.wait(timeout=PROCESS_TIMEOUT)
    lines = final.kill()
    assert lines[-1] == f"ack {committed + 3}"
    with RunStore.open(db) as store:
        assert [p.key for p in store.thread()] == _expected_keys(committed + 3)


@pytest.mark.slow
def test_B6_a_real_disk_failure_is_shadowed_then_recovered(tmp_path: Path) -> None:
    db = tmp_path / "run.db"
    RunStore.open(db, create=True, run_id="run-1", now=NOW).close()
    done = subprocess.run([sys.executable, str(FSIZE_WRITER), str(db), str(96 * 1024)],
                          capture_output=True, text=True, timeout=PROCESS_TIMEOUT)
    assert done.returncode == 0, done.stderr
    results = [json.loads(line) for line in done.stdout.splitlines()]
    failed = [r for r in results if r["outcome"] != "committed"]
    assert failed, "the file-size limit never made a write fail"
    first_failure = failed[0]["revision"]
    for r in failed:
        assert r["outcome"] == "shadowed"  # The shadow file is small enough to be written.
        assert r["pending_persist"] and not r["writes_blocked"]
        assert r["last_accepted"] == first_failure - 1  # Nothing confirmed meanwhile (B7).
        assert r["gate"] == "recovery-copy"  # B9: the copy lets turns go on, unconfirmed.
    assert failed[-1]["pending"] == [r["revision"] for r in failed]
    last = results[-1]
    assert last["outcome"] == "committed" and last["gate"] == "confirmed"
    assert last["last_accepted"] == last["revision"] and last["pending"] == []
    assert read_shadow(shadow_path(db)) is None  # Removed once the store holds it all.
    with RunStore.open(db) as store:
        assert store.integrity_check() == ("ok",)
        keys = [p.key for p in store.thread()]
    assert keys == [f"turn-{r}/0" for r in range(1, last["revision"] + 1)]


@pytest.mark.slow
def test_B14_corrupt_database_is_named_and_restored_only_when_the_audit_allows(
    tmp_path: Path,
) -> None:
    db = tmp_path / "run.db"
    writer = subprocess.run([sys.executable, str(WRITER), str(db), "run-1", "--max", "30",
                             "--checkpoint"], capture_output=True, text=True,
                            timeout=PROCESS_TIMEOUT)
    assert writer.returncode == 0, writer.stderr
    # A healthy store ahead of... nothing: equal revisions, no restore offered.
    assert offer_restore(db).decision.reason == "up-to-date"
    more = subprocess.run([sys.executable, str(WRITER), str(db), "run-1", "--max", "33"],
                          capture_output=True, text=True, timeout=PROCESS_TIMEOUT)
    assert more.returncode == 0, more.stderr
    refused = offer_restore(db)
    assert not refused.allowed and refused.decision.reason == "primary-ahead"
    assert not restore_from_checkpoint(db, now=NOW).restored
    # Now the disk eats the end of the database file.
    with db.open("r+b") as handle:
        handle.truncate(db.stat().st_size // 2)
    with pytest.raises(StoreError) as info:
        RunStore.open(db)
    message = str(info.value)
    assert info.value.kind == "corrupt" and str(db) in message and "\n" not in message
    offer = offer_restore(db)
    assert offer.allowed and offer.decision.checkpoint_revision == 30
    result = restore_from_checkpoint(db, now=NOW)
    assert result.restored and result.revision == 30
    with RunStore.open(db) as store:
        assert store.integrity_check() == ("ok",)
        assert [p.key for p in store.thread()] == _expected_keys(30)
