"""B20 for real: the loop keeps its working revision apart from the store's,
and a retried turn rolls back what the failed attempt left uncommitted."""

from __future__ import annotations

import io
from pathlib import Path

from helpers.faults import DiskSwitch, faulty_connection
from helpers.scripted import EXAMPLES, scripted_runner

from autodev_core.control.identity import resolve_active_identity
from autodev_core.simulation.scenario import parse_scenario
from autodev_shell.clock import FakeClock
from autodev_shell.durability.writes import Durability
from autodev_shell.runner import StreamLog
from autodev_shell.store.run_store import RunStore

#: A roll-back the runner asked for: (to_revision, the store's revision then, what it dropped).
RollBack = tuple[int, int, tuple[int, ...]]


def watched_durability(rollbacks: list[RollBack]) -> type[Durability]:
    """The runner's `Durability` (a constructor argument: the seam, docs/design.md), keeping
    in `rollbacks` each roll-back the runner asks of it."""

    class WatchedDurability(Durability):
        def roll_back(self, to_revision: int) -> tuple[int, ...]:
            dropped = super().roll_back(to_revision)
            rollbacks.append((to_revision, self.committed_revision, dropped))
            return dropped

    return WatchedDurability


def test_B20_a_retry_rolls_back_what_the_failed_attempt_left_uncommitted(
    tmp_path: Path,
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
    rollbacks: list[RollBack] = []
    durability = watched_durability(rollbacks).open(store, identity)
    switch.fail(("BEGIN IMMEDIATE",))  # every write fails; reads work
    stream = io.StringIO()
    runner = scripted_runner(scenario, store, clock, durability=durability,
                             log=StreamLog(scenario.zone, stream=stream), slice_seconds=3600)
    runner.run(stop_at=scenario.until)
    assert rollbacks
    # The store's revision and the loop's are apart: the working one ran ahead (B20), so the
    # retry rolled back to the store's revision what the failed attempt left uncommitted ...
    # (a pending revision that holds posts is kept, so a roll-back may drop nothing) ...
    assert all(to == committed == 0 for to, committed, _ in rollbacks), rollbacks
    notes = [line for line in stream.getvalue().splitlines() if "rolled back" in line]
    assert len(notes) == len([dropped for *_, dropped in rollbacks if dropped])
    assert all("that the failed attempt left uncommitted (B20)" in line for line in notes)
    rolled = [r for _, _, dropped in rollbacks for r in dropped]
    assert rolled and all(r not in durability.pending for r in rolled)
    # What the attempt posted is never rolled back, and everything else lands once it can.
    switch.heal()
    done = durability.retry(identity=identity, now=clock.now())
    assert done.outcome == "committed"
    assert "patch for issue 12" in [p.text for p in store.thread()]
    assert not set(rolled) & set(done.committed)
