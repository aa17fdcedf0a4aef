"""`Durability` follows the core's replica cadence (SPEC B13-B16): the checkpoint and the search
replica are synced when due, not after every commit; a flush brings them level; one failing
does not stop the other, and a failed one is tried again when next due.

A stateful machine drives a real store and its files: commits, heartbeats and flushes at times
that move on (and sometimes back), with the checkpoint's path made unwritable (a directory in
its place: `rename` cannot replace it, even for root) or the search rebuild raising. Its model
states the rule on its own: a replica behind is synced when never synced, when `EVERY` or more
revisions behind, when its last sync is `SECONDS` or more old (or in the future), or on a flush.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from datetime import datetime, timedelta
from pathlib import Path

from helpers.clock import T0
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from autodev_core.control.identity import resolve_active_identity
from autodev_core.control.replicas import SyncCadence
from autodev_shell.durability.checkpoint import read_checkpoint
from autodev_shell.durability.writes import Durability
from autodev_shell.store.run_store import NewPost, RunStore, Snapshot

RUN = resolve_active_identity(run_id="run-1")
EVERY, SECONDS = 4, 30.0


def _due(primary: int, held: int, synced: datetime | None, now: datetime, flush: bool) -> bool:
    if held >= primary:
        return False
    if flush or synced is None:
        return True
    age = (now - synced).total_seconds()
    return primary - held >= EVERY or age >= SECONDS or age < 0


class CadenceMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="cadence-"))
        self.store = RunStore.open(self.dir / "run.db", create=True, run_id="run-1", now=T0)
        self.search_fails = False
        self.rebuilt: list[int] = []

        def rebuild(snapshot: Snapshot) -> None:
            if self.search_fails:
                raise RuntimeError("index offline")
            self.rebuilt.append(snapshot.revision)

        self.durability = Durability.open(self.store, RUN, search=rebuild,
                                          cadence=SyncCadence(EVERY, SECONDS))
        self.now = T0
        self.primary = 0
        self.held = {"checkpoint": 0, "search": 0}
        self.synced: dict[str, datetime] = {}
        self.checkpoint_fails = False
        #: Whether each replica could be written at the last commit, heartbeat or flush.
        self.could_write = {"checkpoint": True, "search": True}

    def teardown(self) -> None:
        self.store.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _expect(self, flush: bool) -> None:
        """What the model says this move syncs, given what fails now."""
        fails = {"checkpoint": self.checkpoint_fails, "search": self.search_fails}
        self.could_write = {name: not failing for name, failing in fails.items()}
        for name in ("checkpoint", "search"):
            if _due(self.primary, self.held[name], self.synced.get(name), self.now, flush) \
                    and not fails[name]:
                self.held[name] = self.primary
                self.synced[name] = self.now

    @rule(seconds=st.integers(-5, 45))
    def commit(self, seconds: int) -> None:
        self.now += timedelta(seconds=seconds)
        self.primary += 1
        result = self.durability.persist_revision(
            self.primary, (NewPost("ana", "claude", f"post {self.primary}", self.now,
                                   key=f"k{self.primary}"),),
            f'{{"rev": {self.primary}}}', identity=RUN, now=self.now)
        assert result.outcome == "committed"
        self._expect(flush=False)

    @rule(seconds=st.integers(0, 45))
    def heartbeat(self, seconds: int) -> None:
        self.now += timedelta(seconds=seconds)
        self.durability.sync_replicas(now=self.now)
        self._expect(flush=False)

    @rule()
    def flush(self) -> None:
        self.durability.sync_replicas(now=self.now, flush=True)
        self._expect(flush=True)
        for name, fails in (("checkpoint", self.checkpoint_fails),
                            ("search", self.search_fails)):
            if not fails:
                assert self.held[name] == self.primary

    @precondition(lambda self: not self.checkpoint_fails)
    @rule()
    def break_checkpoint(self) -> None:
        path = self.durability.checkpoint_file
        path.unlink(missing_ok=True)
        path.mkdir()
        self.checkpoint_fails = True

    @precondition(lambda self: self.checkpoint_fails)
    @rule()
    def mend_checkpoint(self) -> None:
        self.durability.checkpoint_file.rmdir()
        self.checkpoint_fails = False
        # The file the daemon wrote is gone: what it last wrote is still what it knows of it,
        # and the next sync that is due rewrites it.

    @rule(fails=st.booleans())
    def search_goes(self, fails: bool) -> None:
        self.search_fails = fails

    @invariant()
    def replicas_are_where_the_rule_puts_them(self) -> None:
        assert (self.durability.checkpoint_revision or 0) == self.held["checkpoint"]
        assert (self.rebuilt[-1] if self.rebuilt else 0) == self.held["search"]
        if not self.checkpoint_fails and self.durability.checkpoint_file.exists():
            on_disk = read_checkpoint(self.durability.checkpoint_file)
            assert on_disk is not None and on_disk.revision == self.held["checkpoint"]

    @invariant()
    def never_further_behind_than_the_cadence_while_it_can_write(self) -> None:
        for name, could in self.could_write.items():
            lag = self.primary - self.held[name]
            if not could or lag == 0:
                continue
            assert lag < EVERY
            age = (self.now - self.synced[name]).total_seconds()
            assert 0 <= age < SECONDS

    @invariant()
    def the_audit_says_pending_sync_never_drift(self) -> None:
        status, pending = self.durability.audit()
        behind = tuple(n for n in ("checkpoint", "search") if self.held[n] < self.primary)
        assert status == ("pending-sync" if behind else "in-sync" if self.primary else "empty")
        assert pending == behind


#: Each step commits and fsyncs a real store: a short run in CI, a long one when thorough.
_THOROUGH = os.environ.get("HYPOTHESIS_PROFILE") == "thorough"
CadenceMachine.TestCase.settings = settings(
    CadenceMachine.TestCase.settings, deadline=None,
    max_examples=200 if _THOROUGH else 12, stateful_step_count=40 if _THOROUGH else 20)
test_B14_B16_durability_follows_the_cadence = CadenceMachine.TestCase


def test_B14_by_default_a_burst_of_commits_writes_one_checkpoint(tmp_path: Path) -> None:
    """The daemon's default: revisions committed in the same second do not each rewrite the
    whole thread; the first commit of a run writes the checkpoint (never synced), the next ones
    leave it "pending sync" until the cadence or a flush."""
    store = RunStore.open(tmp_path / "run.db", create=True, run_id="run-1", now=T0)
    durability = Durability.open(store, RUN)
    written = []
    for revision in range(1, 11):
        result = durability.persist_revision(
            revision, (NewPost("ana", "claude", "hi", T0, key=f"k{revision}"),), "{}",
            identity=RUN, now=T0)
        written.append(result.checkpoint is not None)
    assert written == [True] + [False] * 9
    checkpoint = read_checkpoint(durability.checkpoint_file)
    assert checkpoint is not None and checkpoint.revision == 1
    assert durability.audit() == ("pending-sync", ("checkpoint",))
    durability.sync_replicas(now=T0, flush=True)
    checkpoint = read_checkpoint(durability.checkpoint_file)
    assert checkpoint is not None and checkpoint.revision == 10
    assert durability.audit() == ("in-sync", ())
    store.close()


def test_B14_a_restarted_daemon_counts_from_the_checkpoint_it_finds(tmp_path: Path) -> None:
    """The time of the last sync survives a restart: it is the checkpoint's `written_at`."""
    store = RunStore.open(tmp_path / "run.db", create=True, run_id="run-1", now=T0)
    first = Durability.open(store, RUN)
    first.persist_revision(1, (), "{}", identity=RUN, now=T0)
    second = Durability.open(store, RUN)
    soon = second.persist_revision(2, (), "{}", identity=RUN, now=T0 + timedelta(seconds=5))
    assert soon.checkpoint is None  # written 5 s ago: not due
    late = second.persist_revision(3, (), "{}", identity=RUN, now=T0 + timedelta(minutes=5))
    assert late.checkpoint is not None and late.checkpoint.revision == 3
    store.close()
