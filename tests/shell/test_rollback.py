"""B20 for real (issue 10 item 11): the loop keeps its working revision apart from the store's,
and a retried turn rolls back what the failed attempt left uncommitted."""

from __future__ import annotations

import io
from pathlib import Path

from helpers.faults import DiskSwitch, faulty_connection
from helpers.scripted import EXAMPLES, ScriptedCLIs

from autodev_core.control.identity import resolve_active_identity
from autodev_core.control.turn_input import plan_turn_input as real_plan
from autodev_core.simulation import scheduler_config
from autodev_core.simulation.scenario import parse_scenario
from autodev_shell import runner as runner_module
from autodev_shell.clock import FakeClock
from autodev_shell.durability.writes import Durability
from autodev_shell.runner import Runner, StreamLog
from autodev_shell.store.run_store import RunStore


def test_B20_a_retry_rolls_back_what_the_failed_attempt_left_uncommitted(
    tmp_path: Path, monkeypatch: object,
) -> None:
    # 01-chain-hop: a fresh turn fails on claude (limit) and is retried on its chain. The
    # store fails throughout while the shadow copy works, so the gate lets turns start on
    # the recovery copy (B9) and the failed attempt's revisions stay uncommitted.
    scenario = parse_scenario((EXAMPLES / "01-chain-hop.yaml").read_text())
    clock = FakeClock(scenario.start)
    identity = resolve_active_identity(run_id="test-run")
    switch = DiskSwitch()
    store = RunStore.open(tmp_path / "run.db", create=True, run_id="test-run",
                          now=scenario.start, factory=faulty_connection(switch))
    durability = Durability.open(store, identity)
    switch.fail(("BEGIN IMMEDIATE",))  # every write fails; reads work
    seen = []

    def spy(turn, record):  # type: ignore[no-untyped-def]
        plan = real_plan(turn, record)
        seen.append((turn.turn_type, turn.committed_revision, turn.working_revision,
                     plan.rollback.required))
        return plan

    monkeypatch.setattr(runner_module, "plan_turn_input", spy)  # type: ignore[attr-defined]
    stream = io.StringIO()
    runner = Runner(config=scheduler_config(scenario), store=store, durability=durability,
                    identity=identity, clock=clock, log=StreamLog(scenario.zone, stream=stream),
                    perform_call=ScriptedCLIs(scenario, clock), slice_seconds=3600)
    runner.run(stop_at=scenario.until)
    retries = [s for s in seen if s[0] == "retry"]
    assert retries, seen
    # The store's revision and the loop's are apart: the working one ran ahead (B20) ...
    assert all(committed == 0 < working for _, committed, working, _ in retries)
    assert all(required for *_, required in retries)
    # ... and the retry rolled back the failed attempt's uncommitted revisions.
    assert "that the failed attempt left uncommitted (B20)" in stream.getvalue()
    rolled = [int(r) for line in stream.getvalue().splitlines() if "rolled back" in line
              for r in line.split("revisions ")[1].split(" ")[0].split("-")]
    assert rolled and all(r not in durability.pending for r in rolled)
    # What the attempt posted is never rolled back, and everything else lands once it can.
    switch.heal()
    done = durability.retry(identity=identity, now=clock.now())
    assert done.outcome == "committed"
    assert "patch for issue 12" in [p.text for p in store.thread()]
    assert not set(rolled) & set(done.committed)
