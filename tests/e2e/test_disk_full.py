"""A full disk never kills the daemon (SPEC B6-B9, C2, C3; docs/store.md "A full disk").

The run folder is a small tmpfs that another process fills and frees while the real daemon
runs on stand-in CLIs. The store, the shadow copy, the log file and the lanes all fail while it
is full. The daemon must stay up (the B9 gate holds the next turn while its writes are not
confirmed), keep its heartbeat on the lock file, recover when space returns, and lose no
acknowledged message or post. Needs root to mount the tmpfs; skipped otherwise.
"""

from __future__ import annotations

import io
import os
import random
import sqlite3
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from helpers.daemons import Daemon, alive, wait_for
from helpers.disks import fill, tmpfs

from autodev_shell.store.run_store import RunStore


def thread(d: Daemon) -> list[tuple[str, str, str]]:
    return d.thread()


def start(d: Daemon, errors: Path) -> subprocess.Popen[bytes]:
    # stderr to a file outside the tmpfs: an unread pipe would block a chatty daemon.
    d.proc = subprocess.Popen(
        [sys.executable, "-m", "autodev_shell.cli", "run", str(d.team), "--run", str(d.run_dir)],
        env=d.env, stdout=subprocess.DEVNULL, stderr=errors.open("wb"), start_new_session=True,
    )
    return d.proc


def disk_soak(root: Path, *, cycles: int, hold: float, seed: int) -> None:
    rng = random.Random(seed)
    d = Daemon(root, {"ana": "claude", "rui": "codex"},
               {"default": {"post": "ok", "sleep": 0.2}})
    errors = root / "daemon.err"
    with tmpfs(d.run_dir):
        proc = start(d, errors)
        acknowledged: list[str] = []
        try:
            wait_for(lambda: (d.run_dir / "run.db").exists() and len(thread(d)) >= 2,
                     "the first posts")
            for cycle in range(cycles):
                filler = fill(d.run_dir)
                deadline = time.monotonic() + hold
                while time.monotonic() < deadline:
                    text = f"message {cycle}.{len(acknowledged)}"
                    if d.cli("say", text).returncode == 0:
                        acknowledged.append(text)
                    status = d.cli("status")
                    assert status.returncode == 0, status.stderr
                    time.sleep(rng.uniform(0.1, 0.5))
                    assert alive(proc.pid), errors.read_text(errors="replace")[-3000:]
                # a message acknowledged before the disk filled may still be waiting
                seen = len(thread(d))
                filler.unlink()
                wait_for(lambda seen=seen: len(thread(d)) > seen + 1,  # type: ignore[misc]
                         f"progress after space returned (cycle {cycle})")
                assert alive(proc.pid), errors.read_text(errors="replace")[-3000:]
            wait_for(lambda: all(any(body == text for _, who, body in thread(d) if who == "user")
                                 for text in acknowledged), "every acknowledged message")
        finally:
            (d.run_dir / "filler").unlink(missing_ok=True)
            try:
                d.stop()
            finally:
                if proc.poll() is None:  # a stop that could not be queued leaves no daemon
                    proc.kill()
                    proc.wait(timeout=60)
        assert proc.returncode == 0, errors.read_text(errors="replace")[-3000:]
        err = errors.read_text(errors="replace")
        assert "Traceback" not in err, err[-3000:]
        posts = thread(d)
        said = [body for _, who, body in posts if who == "user"]
        for text in acknowledged:
            assert said.count(text) == 1, text
        assert len({key for key, _, _ in posts}) == len(posts)
        # every call that ended with a post is in the thread, but the one a stop cut short
        assert sum(1 for _, who, _ in posts if who != "user") >= len(d.calls()) - 1
        with RunStore.open(d.run_dir / "run.db") as store:
            assert store.integrity_check() == ("ok",)
        status = d.cli("status")
        assert "status: running" not in status.stdout, status.stdout
        assert "status: stopped" in status.stdout


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_C3_B9_a_disk_that_fills_and_frees_never_kills_the_daemon(tmp_path: Path) -> None:
    # The CI version: two fill/free cycles, a few seconds full each (well under a minute).
    disk_soak(tmp_path, cycles=2, hold=3.0, seed=1)


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
@pytest.mark.skipif(os.environ.get("HYPOTHESIS_PROFILE") != "thorough",
                    reason="the long soak runs under HYPOTHESIS_PROFILE=thorough; CI runs the "
                           "short version above")
def test_C3_B9_disk_fill_soak(tmp_path: Path) -> None:
    # 20 fill/free cycles of 6 s full each, at random moments of the run (about four minutes).
    disk_soak(tmp_path, cycles=20, hold=6.0, seed=int(time.time()))



# --- each store write the daemon makes, failing on its own (in process, fake clock) ----------


def _runner_on_failing_disk(tmp_path: Path, prefixes: tuple[str, ...],
                            log_file: bool = False, turn_inputs_fail: bool = False,
                            ) -> tuple[object, object, io.StringIO]:
    from helpers.faults import DiskSwitch, faulty_connection
    from helpers.scripted import EXAMPLES, scripted_runner

    from autodev_core.simulation.scenario import parse_scenario
    from autodev_shell.clock import FakeClock
    from autodev_shell.runner import StreamLog
    from autodev_shell.store.runlock import RunLock

    scenario = parse_scenario((EXAMPLES / "02-colleague-round-robin.yaml").read_text())
    clock = FakeClock(scenario.start)
    switch = DiskSwitch()
    db = tmp_path / "run.db"
    RunLock.acquire(db, run="test-run")
    store = RunStore.open(db, create=True, run_id="test-run", now=scenario.start,
                          factory=faulty_connection(switch))
    switch.fail(prefixes)
    if turn_inputs_fail:
        from autodev_shell.store.run_store import StoreError

        def full(*_args: object, **_kwargs: object) -> None:
            raise StoreError("Could not save a turn input (database or disk is full).",
                             path=db, kind="write-failed")

        store.save_turn_input = full  # type: ignore[method-assign]
    stream = io.StringIO()
    log = StreamLog(scenario.zone, stream=stream,
                    file=tmp_path / "autodev.log" if log_file else None)
    runner = scripted_runner(scenario, store, clock, log=log)
    summary = runner.run(stop_at=scenario.until)
    return runner, summary, stream


def test_C2_a_heartbeat_the_store_cannot_take_never_stops_the_daemon(tmp_path: Path) -> None:
    from autodev_shell.store.runlock import lock_path

    before = time.time()
    runner, summary, stream = _runner_on_failing_disk(tmp_path, ("INSERT INTO heartbeat",))
    assert summary.status == "stopped" and summary.calls > 0  # type: ignore[attr-defined]
    assert runner.store.last_heartbeat() is None  # type: ignore[attr-defined]
    assert lock_path(tmp_path / "run.db").stat().st_mtime >= before - 1
    notes = stream.getvalue()
    assert notes.count("heartbeat not written") == 1, "said once, clearly"
    assert "the lock file's time stands in for it" in notes


def test_B19_a_turn_input_the_store_cannot_take_is_committed_with_the_next_revision(
    tmp_path: Path,
) -> None:
    # The direct write fails; the revision's commit after it carries the record.
    _runner, summary, _ = _runner_on_failing_disk(tmp_path, (), turn_inputs_fail=True)
    assert summary.status == "stopped" and summary.calls > 0  # type: ignore[attr-defined]
    reader = sqlite3.connect(f"file:{tmp_path / 'run.db'}?mode=ro", uri=True)
    try:  # another connection reads what the store committed
        saved = reader.execute("SELECT count(*) FROM turn_inputs").fetchone()[0]
    finally:
        reader.close()
    assert saved >= 1


def test_C3_a_store_that_cannot_be_read_for_controls_is_read_again_later(
    tmp_path: Path,
) -> None:
    _runner, summary, _ = _runner_on_failing_disk(tmp_path, ("SELECT ID, COMMAND",))
    assert summary.status == "stopped" and summary.calls > 0  # type: ignore[attr-defined]


def test_C7_a_log_file_the_disk_cannot_take_never_stops_the_daemon(tmp_path: Path) -> None:
    from autodev_shell.runner import StreamLog

    stream = io.StringIO()
    log = StreamLog(UTC, stream=stream, file=tmp_path / "autodev.log")

    class FullDisk(io.StringIO):
        def flush(self) -> None:
            raise OSError(28, "No space left on device")

    log._file = FullDisk()  # type: ignore[assignment]
    at = datetime(2026, 12, 1, 9, tzinfo=UTC)
    log.line(at, "one")
    log.note(at, "two")
    text = stream.getvalue()
    assert "one" in text and "two" in text
    assert text.count("the log file cannot be written") == 1
    log.close()
