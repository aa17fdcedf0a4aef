"""`autodev status` says why a run is paused and what to do, in its status line, and `--json`
says it as `paused_for` (docs/cli.md; A29, A31, A32, and the operator's pause). A state saved
before reasons were kept says plain `paused` and `paused_for: null`."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import attrs
import pytest
from helpers.clock import T0 as NOW
from test_status_read import _cli, _posts

from autodev_core.control.identity import resolve_active_identity
from autodev_core.participant import Participant
from autodev_core.scheduler import SchedulerConfig, initial_state
from autodev_core.serialization import to_json
from autodev_shell.durability.writes import Durability
from autodev_shell.status import read as status_read
from autodev_shell.store.run_store import RunStore

SAID = {
    "login": "paused — claude needs a login (`claude /login`), then `autodev resume`",
    "empty": "paused — turns ended without a post (the log names who); `autodev resume` to "
             "try again",
    "failures": "paused — gave up after failed attempts in a row (the log says what failed); "
                "`autodev resume` to try again",
    "operator": "paused — by `autodev pause` (or the panel); `autodev resume` to go on",
}


def _paused_run(tmp_path: Path, paused_for: str | None, *, drop_key: bool = False,
                status: str = "paused") -> Path:
    """A run folder whose committed state is `status` (paused for `paused_for`), its daemon
    gone; `drop_key`: the state as a version before reasons wrote it."""
    run = tmp_path / "run"
    run.mkdir()
    state = attrs.evolve(initial_state(SchedulerConfig(
        team=(Participant(id="ana", provider="claude"),))), status=status,
        paused_for=paused_for)
    text = to_json(state)
    if drop_key:
        raw = json.loads(text)
        del raw["paused_for"]
        text = json.dumps(raw)
    store = RunStore.open(run / "run.db", create=True, run_id="run-1", now=NOW)
    try:
        identity = resolve_active_identity(run_id=store.run_id)
        durability = Durability.open(store, identity)
        durability.persist_revision(1, _posts(1, 1), text, identity=identity, now=NOW)
        store.heartbeat(NOW - timedelta(minutes=3), pid=4242)
    finally:
        store.close()
    return run


def _status_line(out: str) -> str:
    (line,) = [ln for ln in out.splitlines() if ln.startswith("status: ")]
    return line


@pytest.mark.parametrize("reason", sorted(SAID))
@pytest.mark.parametrize("fast", [True, False], ids=("fast-path", "full-path"))
def test_status_says_why_the_run_paused_and_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reason: str, fast: bool
) -> None:
    run = _paused_run(tmp_path, reason)
    if not fast:  # the full path (a RunStore and the core's restore) says the same
        monkeypatch.setattr(status_read, "read_status", lambda _db: None)
    code, out, err = _cli(["status", "--run", str(run)])
    assert code == 0 and err == ""
    line = _status_line(out)
    assert line.startswith("status: not running (daemon pid 4242 is gone; last heartbeat ")
    assert line.endswith(f"; last status: {SAID[reason]}"), line
    code, out, _err = _cli(["status", "--run", str(run), "--json"])
    assert code == 0 and json.loads(out)["paused_for"] == reason


def test_a_state_saved_before_reasons_says_plain_paused(tmp_path: Path) -> None:
    run = _paused_run(tmp_path, "login", drop_key=True)
    code, out, _err = _cli(["status", "--run", str(run)])
    assert code == 0 and _status_line(out).endswith("; last status: paused")
    code, out, _err = _cli(["status", "--run", str(run), "--json"])
    facts = json.loads(out)
    assert facts["status"] == "paused" and facts["paused_for"] is None


def test_a_run_not_paused_has_no_reason(tmp_path: Path) -> None:
    run = _paused_run(tmp_path, None, status="stopped")
    code, out, _err = _cli(["status", "--run", str(run), "--json"])
    assert code == 0 and json.loads(out)["paused_for"] is None
