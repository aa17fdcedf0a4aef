"""A reusable Hypothesis harness for the scheduler (SPEC 0.4), shipped like `zarr.testing`.

Orchestrators that import autodev can property-test the scheduler against their own teams:

    from autodev_core.testing import SchedulerMachine, scheduler_configs
    class MyTeam(SchedulerMachine):
        configs = scheduler_configs(max_team=3)
    TestMyTeam = MyTeam.TestCase

`SchedulerMachine` feeds random interleavings of call outcomes (posts, notices with random
resets, network errors, crashes, timeouts, empty turns, login failures), usage readings on
healthy calls (docs/limits.md), limits and readings reported by other runs sharing the account
(docs/sharing.md), messages, clock jumps, stops, pauses, resumes and gates to `step`, and after
every step checks the invariants of SPEC A against a tiny independent model — with
`Policy.headroom` off, also that the readings change nothing at all. This module imports
hypothesis; nothing else in `autodev_core` does.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import ClassVar

import attrs
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from ..detection.classification import LimitNotice, UsageReading
from ..engine import Engine
from ..scheduler import logs
from ..scheduler.effects import (
    STATUSES,
    WAIT_STATUSES,
    Effect,
    Log,
    Sleep,
    StartCall,
    StatusChanged,
)
from ..scheduler.events import (
    CallCancelled,
    CallEnded,
    Event,
    GateApproved,
    GateRequested,
    LimitObserved,
    MessageArrived,
    PauseRequested,
    ResumeRequested,
    RunStarted,
    StopRequested,
    UsageObserved,
    Woke,
)
from ..scheduler.restore import restore_state
from ..scheduler.state import SchedulerConfig, SchedulerState, initial_state
from ..scheduler.step import TRANSITIONS, step
from ..serialization import from_json, from_yaml, to_json, to_yaml
from .scheduler_model import (
    SPEC_DEFAULT_RESET,
    SPEC_EMPTY_TURNS,
    SPEC_GIVE_UP_AFTER,
    back_at,
    expected_wait,
    is_learned,
    near_limit,
    reading_levels,
    spec_backoff,
    spec_outage_retry,
)
from .scheduler_strategies import (
    OUTCOME_WEIGHTS,
    durations,
    instants,
    reset_offsets,
    scheduler_configs,
    usage_readings,
)


class SchedulerMachine(RuleBasedStateMachine):
    """Random runs of the scheduler; every SPEC A invariant is checked after each step."""

    #: Override to test your own teams (any strategy of `SchedulerConfig`).
    configs: ClassVar[st.SearchStrategy[SchedulerConfig]] = scheduler_configs()

    def __init__(self) -> None:
        super().__init__()
        self.state: SchedulerState | None = None
        self.now = datetime(2026, 12, 1, tzinfo=UTC)
        self.failures = 0
        self.empties: dict[str, int] = {}
        #: A27: consecutive failed attempts to reach each provider, counted by the model.
        self.outage_attempts: dict[str, int] = {}
        self.steps = 0

    # -- driving ---------------------------------------------------------------------------

    @property
    def s(self) -> SchedulerState:
        assert self.state is not None
        return self.state

    def feed(self, event: Event) -> tuple[Effect, ...]:
        before = self.s
        frozen_before = to_json(before)
        new, effects = step(before, event)
        again, effects_again = step(before, event)
        # Deterministic, and the input is never mutated (SPEC 0.1).
        assert (again, effects_again) == (new, effects)
        assert to_json(before) == frozen_before
        if before.config.policy.headroom is None:
            self.check_readings_change_nothing(before, event, new, effects)
        self.check_step(before, event, new, effects)
        self.state = new
        self.steps += 1
        return effects

    @initialize(data=st.data(), start=instants())
    def start(self, data: st.DataObject, start: datetime) -> None:
        config = data.draw(type(self).configs, label="config")  # the subclass's own strategy
        self.state = initial_state(config)
        self.now = start
        self.empties = {p.id: 0 for p in config.team}
        self.feed(RunStarted(now=start))

    @precondition(lambda self: self.state is not None and self.state.call is not None)
    @rule(
        data=st.data(),
        duration=durations(),
        kind=st.sampled_from(OUTCOME_WEIGHTS),
        posted_too=st.booleans(),
        reset=reset_offsets(),
        exit_code=st.integers(min_value=1, max_value=255),
        read=st.sampled_from((False, True, True)),
    )
    def end_call(
        self,
        data: st.DataObject,
        duration: timedelta,
        kind: str,
        posted_too: bool,
        reset: timedelta | None,
        exit_code: int,
        read: bool,
    ) -> None:
        usage = None
        readings: tuple[UsageReading, ...] = ()
        if read and kind not in ("limit", "network", "login"):  # docs/limits.md: a healthy call's
            call = self.s.call
            assert call is not None
            usage = data.draw(usage_readings(provider=call.engine.provider,
                                             now=self.now + duration), label="reading")
            # Issue 37: a call reports each of its account's windows (claude's unifiedWindows).
            more = data.draw(st.none() | usage_readings(provider=call.engine.provider,
                                                        now=self.now + duration), label="more")
            if more is not None and more.window != usage.window:
                readings = tuple(sorted((usage, more), key=lambda r: r.window))
        self._end_call(duration, kind, posted_too, reset, exit_code, usage, readings)

    @precondition(lambda self: self.state is not None and self.state.call is not None)
    @rule(
        count=st.integers(min_value=1, max_value=SPEC_GIVE_UP_AFTER + 1),
        kind=st.sampled_from(("exit", "timeout", "empty")),
        message_at=st.none() | st.integers(min_value=0, max_value=SPEC_GIVE_UP_AFTER),
    )
    def failure_burst(self, count: int, kind: str, message_at: int | None) -> None:
        """Failures in a row, each wait slept out (or cut by a message): reaches A29 and A31."""
        for index in range(count):
            if self.s.call is None:
                if self.s.status != "backing_off":
                    return
                if index == message_at:
                    self.feed(MessageArrived(now=self.now))
                else:
                    wait_until = self.s.wait_until
                    assert wait_until is not None
                    self.now = wait_until
                    self.feed(Woke(now=self.now))
                if self.s.call is None:
                    return
            self._end_call(timedelta(seconds=30), kind, False, None, 1)

    def _end_call(
        self,
        duration: timedelta,
        kind: str,
        posted_too: bool,
        reset: timedelta | None,
        exit_code: int,
        usage: UsageReading | None = None,
        readings: tuple[UsageReading, ...] = (),
    ) -> None:
        call = self.s.call
        assert call is not None
        self.now += duration
        engine = call.engine
        limit = None
        if kind == "limit":
            limit = LimitNotice(
                provider=engine.provider,
                reset_at=None if reset is None else self.now + reset,
                text="limit",
            )
        if kind == "login" and engine.provider != "claude":
            kind = "exit"  # A32: only claude has a login check
            usage = None
            readings = ()
        event = CallEnded(
            now=self.now,
            participant=call.participant,
            engine=engine,
            kind=kind,  # type: ignore[arg-type]
            posted=kind == "post" or (kind == "limit" and posted_too),
            limit=limit,
            exit_code=exit_code if kind == "exit" else None,
            usage=usage,
            readings=readings,
        )
        self.feed(event)

    @precondition(lambda self: self.state is not None)
    @rule(
        data=st.data(),
        reset=st.integers(min_value=-120, max_value=24 * 60),
        read=st.booleans(),
        seen_ago=st.integers(min_value=0, max_value=180),
        source=st.sampled_from(("laptop", "ci-runner")),
    )
    def peer_limit(
        self, data: st.DataObject, reset: int, read: bool, seen_ago: int, source: str
    ) -> None:
        """Another run on the same account reports a limit (docs/sharing.md): on an engine of the
        team, seen up to three hours ago (a late delivery), its reset past or to come."""
        engines = sorted({e for lane in self.s.config.lanes for e in lane}, key=str)
        engine = data.draw(st.sampled_from(engines), label="peer engine")
        seen = self.now - timedelta(minutes=seen_ago)
        until = self.now + timedelta(minutes=reset)
        if until <= seen:
            until = seen + timedelta(minutes=1)
        self.feed(
            LimitObserved(
                now=self.now, engine=engine, until=until, read=read, seen=seen, source=source
            )
        )

    @precondition(lambda self: self.state is not None)
    @rule(
        data=st.data(),
        seen_ago=st.integers(min_value=0, max_value=180),
        source=st.sampled_from(("laptop", "ci-runner")),
    )
    def peer_usage(self, data: st.DataObject, seen_ago: int, source: str) -> None:
        """Another run on the same account reports a usage reading (docs/sharing.md), seen up to
        three hours ago, on an engine of the team."""
        engines = sorted({e for lane in self.s.config.lanes for e in lane}, key=str)
        engine = data.draw(st.sampled_from(engines), label="peer engine")
        seen = self.now - timedelta(minutes=seen_ago)
        reading = data.draw(usage_readings(provider=engine.provider, now=self.now),
                            label="peer reading")
        self.feed(UsageObserved(now=self.now, engine=engine, reading=reading, seen=seen,
                                source=source))

    @precondition(lambda self: self.state is not None and self.state.wait_until is not None)
    @rule(early=st.booleans(), late=st.integers(min_value=0, max_value=300))
    def wake(self, early: bool, late: int) -> None:
        until = self.s.wait_until
        assert until is not None
        if early and self.now < until - timedelta(seconds=1):
            self.now = until - timedelta(seconds=1)  # woke early: the core sleeps again
        else:
            # On time, or late as a suspended machine is (A20).
            self.now = max(self.now, until) + timedelta(seconds=late)
        self.feed(Woke(now=self.now))

    @precondition(lambda self: self.state is not None)
    @rule(jump=durations(max_hours=1))
    def message(self, jump: timedelta) -> None:
        if self.s.wait_until is not None:
            self.now = min(self.now + jump, max(self.now, self.s.wait_until))
        self.feed(MessageArrived(now=self.now))

    @precondition(lambda self: self.state is not None and self.state.status != "stopped")
    @rule()
    def pause(self) -> None:
        before = self.s
        self.feed(PauseRequested(now=self.now))
        # A pause asked for is the operator's; a run already paused keeps the reason it has.
        assert self.s.paused_for == (
            before.paused_for if before.status == "paused" else "operator")

    @precondition(lambda self: self.state is not None and self.state.status == "paused")
    @rule(jump=durations())
    def resume(self, jump: timedelta) -> None:
        self._start_counts_afresh(jump)
        self.feed(ResumeRequested(now=self.now))

    @precondition(lambda self: self.state is not None and self.state.status != "stopped")
    @rule()
    def stop(self) -> None:
        self.feed(StopRequested(now=self.now))

    @precondition(lambda self: self.state is not None and self.state.status == "stopped")
    @rule(jump=durations())
    def restart(self, jump: timedelta) -> None:
        self._start_counts_afresh(jump)
        self.feed(RunStarted(now=self.now))

    @precondition(
        lambda self: self.state is not None
        and self.state.call is not None
        and self.state.status in ("paused", "stopped")
    )
    @rule(duration=durations(max_hours=1))
    def cancel_call(self, duration: timedelta) -> None:
        """The shell cut the call short for the pause or stop (it killed the CLI)."""
        self.now += duration
        self.feed(CallCancelled(now=self.now))

    @precondition(lambda self: self.state is not None)
    @rule(jump=durations(), reorder=st.booleans())
    def save_and_restore(self, jump: timedelta, reorder: bool) -> None:
        """Save the state as JSON at any moment (mid-call, mid-wait, paused, stopped), restore it
        (with the team reordered, sometimes) and start again: the owed turn is started."""
        saved = from_json(to_json(self.s), SchedulerState)
        config = saved.config
        if reorder:
            config = attrs.evolve(config, team=tuple(reversed(config.team)))
        restored = restore_state(config, saved)
        owed = saved.config.team[saved.due].id
        assert restored.config.team[restored.due].id == owed  # A33: the same turn is owed
        assert restored.approved == saved.approved
        assert restored.gates == saved.gates
        assert restored.call is None and restored.wait_until is None
        assert restored.limits == () and restored.outages == ()  # A25
        self.outage_attempts = {}
        assert (restored.iterations, restored.runtime) == (saved.iterations, saved.runtime)
        assert restored.last_event_at == saved.last_event_at  # A20: the saved instant, a floor
        assert restored.status == ("paused" if saved.status == "paused" else "stopped")
        assert restored.paused_for == saved.paused_for  # why it paused, kept
        self.state = restored
        self._start_counts_afresh(jump)
        if restored.status == "paused":
            self.feed(ResumeRequested(now=self.now))
        else:
            self.feed(RunStarted(now=self.now))

    def _start_counts_afresh(self, jump: timedelta) -> None:
        """Resume and a new start reset the failure and empty-turn counts (A29, A31)."""
        self.now += jump
        self.failures = 0
        self.empties = dict.fromkeys(self.empties, 0)

    @precondition(lambda self: self.state is not None)
    @rule(data=st.data(), approve=st.booleans())
    def gate(self, data: st.DataObject, approve: bool) -> None:
        who = data.draw(st.sampled_from([p.id for p in self.s.config.team]))
        if approve:
            self.feed(GateApproved(now=self.now, participant=who))
        else:
            self.feed(GateRequested(now=self.now, participant=who))

    # -- the invariants --------------------------------------------------------------------

    def check_readings_change_nothing(
        self,
        before: SchedulerState,
        event: Event,
        after: SchedulerState,
        effects: tuple[Effect, ...],
    ) -> None:
        """docs/limits.md: with `Policy.headroom` off, usage readings change nothing but the
        readings themselves: the same step from the same state without any reading, on the
        same event without its reading, makes the same effects and the same state."""
        bare = attrs.evolve(before, readings=(), usage_series=())
        if isinstance(event, UsageObserved):
            assert effects == ()
            assert attrs.evolve(after, readings=(), usage_series=()) == attrs.evolve(
                bare, last_event_at=event.now)
            return
        if not before.readings and not (isinstance(event, CallEnded)
                                        and (event.usage or event.readings)):
            return  # nothing to take away
        if isinstance(event, CallEnded) and (event.usage is not None or event.readings):
            event = attrs.evolve(event, usage=None, readings=())
        state, done = step(bare, event)
        assert done == effects
        assert attrs.evolve(after, readings=(), usage_series=()) == state

    def check_headroom(
        self,
        before: SchedulerState,
        event: Event,
        after: SchedulerState,
        starts: list[StartCall],
    ) -> None:
        """docs/scheduler.md, "Which entry a turn runs on" (`Policy.headroom`): a reading joins
        its window's record (`check_reading_joined`); wherever a turn lands — a turn start, or
        the same turn after a refused call or an outage — it runs on an entry free and not near
        its limit when one exists: the runner's earliest such entry (its chain, A10-A13: the
        owner at a turn start, whoever ran the refused call after one), else the owner's (when
        a colleague ran it), else — when the owner may hand over (A16, A22) — the first
        colleague after the owner in team order with one (A15, A33). A turn start whose owner's
        earliest free entry is not near takes it, as without the knob. Only when no such entry
        is free does it run on a near one: the participant's free entry read lowest, the
        earliest on a tie; a reading never makes it wait (`check_limit_wait`)."""
        now = event.now
        self.check_reading_joined(before, event, after)
        if after.config.policy.headroom is None:
            return
        levels = reading_levels(after, now)
        near = near_limit(after, now)
        config = after.config
        rerouted = isinstance(event, CallEnded) and event.kind in ("limit", "network") and (
            not event.posted)
        for start in starts:
            owner = config.index[start.turn_owner]
            runner = config.index[event.participant] if (
                rerouted and isinstance(event, CallEnded)) else owner

            def frees(who: int) -> list[Engine]:
                return [e for e in config.lanes[who] if back_at(after, e, now) is None]

            def cool(who: int) -> Engine | None:
                return next((e for e in frees(who) if e not in near), None)

            if not rerouted:
                free = next(iter(frees(owner)), None)
                if free is not None and free not in near:
                    # The earliest free entry is not near its limit: taken, as without the knob.
                    assert (start.participant, start.engine) == (start.turn_owner, free), start
                    continue
            hands_over = not (
                len(config.team) == 1 or after.approved == start.turn_owner
                or start.turn_owner in after.gates
            )
            order = [runner] + ([owner] if owner != runner else [])
            if hands_over:
                order += [(owner + k) % len(config.team) for k in range(1, len(config.team))
                          if (owner + k) % len(config.team) not in order]
            expected = next(((config.team[who].id, cool(who)) for who in order
                             if cool(who) is not None), None)
            if expected is not None:
                assert (start.participant, start.engine) == expected, (start, near, expected)
                continue
            # Nothing free is cool: the run goes on as without the knob, and a participant
            # that runs on its own entries takes the one read lowest (the earliest on a tie).
            mine = frees(config.index[start.participant])
            assert start.engine in mine, (start, mine)
            if all(e in near for e in mine):
                lowest = min(levels.get(e, 0.0) for e in mine)
                first = next(e for e in mine if levels.get(e, 0.0) == lowest)
                assert start.engine == first, (start, mine, levels)

    def check_reading_joined(
        self, before: SchedulerState, event: Event, after: SchedulerState
    ) -> None:
        """A reading joins its window's record: a live one over one whose window has reset,
        then the newest (`registry.merge_usage`)."""
        now = event.now
        said: tuple[UsageReading, ...] = ()
        seen = now
        if isinstance(event, CallEnded):
            said = event.readings or ((event.usage,) if event.usage is not None else ())
        elif isinstance(event, UsageObserved):
            said = (event.reading,)
            seen = event.seen if event.seen is not None else now
        if len({r.window for r in said}) != len(said):
            return  # one call naming a window twice: each joins in turn (not drawn here)
        for reading in said:
            engine = event.engine  # type: ignore[union-attr]
            (record,) = [r for r in after.readings
                         if r.engine == engine and r.window == reading.window]
            previous = [r for r in before.readings
                        if r.engine == engine and r.window == reading.window]
            assert record.seen is not None
            # The reading's window: its reset, else A6's default wait from when it was seen.
            until = reading.resets_at if reading.resets_at is not None else (
                seen + after.config.policy.default_limit_wait(engine.provider))
            held = previous[0] if previous else None
            if held is not None and (held.until > now) != (until > now):
                # A reading whose window has reset by now counts no more (A38): a live one takes
                # its place, whichever was seen later, and it never takes a live one's.
                if until > now:
                    assert (record.utilization, record.seen, record.until) == (
                        reading.utilization, seen, until)
                else:
                    assert record == held
            else:  # both live or both reset: the newest wins
                assert record.seen >= seen or held == record
                if held is None or (held.seen is not None and held.seen < seen):
                    assert record.utilization == reading.utilization and record.seen == seen

    def check_step(
        self,
        before: SchedulerState,
        event: Event,
        after: SchedulerState,
        effects: tuple[Effect, ...],
    ) -> None:
        """Every invariant of one step, each group checked by its own method below."""
        # The table (h2): the status reached is one the table allows.
        _handler, targets = TRANSITIONS[(before.status, type(event))]
        assert after.status in targets
        starts = [e for e in effects if isinstance(e, StartCall)]
        sleeps = [e for e in effects if isinstance(e, Sleep)]
        messages = [e.message for e in effects if isinstance(e, Log)]
        self.check_effects(event, effects, starts, sleeps, messages)
        self.check_starts(before, event, after, starts)
        self.check_turn_decided(before, event, after, effects, starts, sleeps)
        self.check_resets_never_earlier(before, event, after)
        if isinstance(event, LimitObserved):
            self.check_peer_limit(before, event, after, effects)
        self.check_headroom(before, event, after, starts)
        self.check_status(before, after, effects)
        # Failures and empty turns, counted by the model (A28-A31, A41).
        if isinstance(event, (RunStarted, ResumeRequested)):
            self.failures = 0
            self.empties = dict.fromkeys(self.empties, 0)
        if isinstance(event, CallEnded):
            self.check_call_end(before, event, after, messages, sleeps)
        for sleep in sleeps:
            self.check_sleep(before, event, after, effects, sleep, messages)
        # SPEC 0.3: lossless round trips.
        assert from_json(to_json(after), SchedulerState) == after
        if self.steps % 7 == 0:
            assert from_yaml(to_yaml(after), SchedulerState) == after

    def check_effects(
        self, event: Event, effects: tuple[Effect, ...], starts: list[StartCall],
        sleeps: list[Sleep], messages: list[str],
    ) -> None:
        """At most one call or one sleep; A39: stamped at the instant, learned before decided."""
        assert len(starts) <= 1 and len(sleeps) <= 1 and not (starts and sleeps)
        for effect in effects:
            assert getattr(effect, "at", event.now) == event.now
        learned = [is_learned(m) for m in messages]
        assert learned == sorted(learned, reverse=True), messages

    def check_starts(
        self, before: SchedulerState, event: Event, after: SchedulerState,
        starts: list[StartCall],
    ) -> None:
        """A8/A26: no call on an engine known limited or a provider known down at decision
        time; A12, A15, A16, A22."""
        for start in starts:
            assert back_at(after, start.engine, event.now) is None, (
                start, after.limits, after.outages)
            lane = after.config.lanes[after.config.index[start.participant]]
            assert start.engine in lane  # A12: installed entries only
            if isinstance(event, CallEnded) and event.kind == "limit":
                assert start.engine != event.engine  # A15: never onto the limited engine
            assert after.call is not None and after.call.engine == start.engine
            if start.turn_owner in after.gates or len(after.config.team) == 1 or (
                after.approved == start.turn_owner
            ):
                # A16, A22: never handed over (a colleague that already held the turn when the
                # gate came may go on along its own chain).
                assert start.participant == start.turn_owner or (
                    before.call is not None and before.call.participant == start.participant
                )

    def check_turn_decided(
        self, before: SchedulerState, event: Event, after: SchedulerState,
        effects: tuple[Effect, ...], starts: list[StartCall], sleeps: list[Sleep],
    ) -> None:
        """A33: a cancelled call leaves its turn owed; a start or resume decides it at once."""
        if isinstance(event, CallCancelled):
            # The cut-short call has no outcome: nothing learned, counted or decided.
            assert after.call is None and not effects and after.status == before.status
            assert (after.due, after.approved, after.failures, after.empties) == (
                before.due, before.approved, before.failures, before.empties)
            assert (after.limits, after.outages, after.iterations) == (
                before.limits, before.outages, before.iterations)
        if isinstance(event, (RunStarted, ResumeRequested)) and before.call is None:
            # With no call in flight: a call for the owed turn, a wait, or the stop of A43 —
            # never `running` with nothing to do.
            assert starts or sleeps or after.status == "stopped", (before, effects)
            owner = before.approved or before.config.team[before.due].id
            for start in starts:
                assert start.turn_owner == owner

    def check_resets_never_earlier(
        self, before: SchedulerState, event: Event, after: SchedulerState
    ) -> None:
        """A23: a recorded reset never moves earlier except by lifting — or when a reset read
        from a notice replaces one the A6 default stood in for (docs/sharing.md)."""
        old = {r.engine: r for r in before.limits}
        for record in after.limits:
            previous = old.get(record.engine)
            if previous is not None and previous.until > event.now:
                assert record.until >= previous.until or (record.read and not previous.read), (
                    previous, record)

    def check_status(
        self, before: SchedulerState, after: SchedulerState, effects: tuple[Effect, ...]
    ) -> None:
        """A42: status and the state agree, and each change of it is announced."""
        assert after.status in STATUSES
        if after.status == "running":
            assert after.call is not None
        if after.status in WAIT_STATUSES:
            assert after.call is None and after.wait_until is not None
        else:
            assert after.wait_until is None
        changes = [e.status for e in effects if isinstance(e, StatusChanged)]
        if changes:
            assert changes[-1] == after.status
        else:
            assert after.status == before.status

    def check_sleep(
        self, before: SchedulerState, event: Event, after: SchedulerState,
        effects: tuple[Effect, ...], sleep: Sleep, messages: list[str],
    ) -> None:
        """A sleep ends after now at the state's deadline: the same one when woken early, a
        failure wait brought forward to a limit's end (A30), else the wait of A18/A35."""
        now = event.now
        assert sleep.until > now and sleep.until == after.wait_until
        assert sleep.status == after.status
        early = before.wait_until is not None and now < before.wait_until
        if isinstance(event, Woke) and early:
            assert sleep.until == before.wait_until  # woke early: same deadline
        elif isinstance(event, LimitObserved) and not any(not is_learned(m) for m in messages):
            assert sleep.status == before.status  # nothing decided: the same wait ...
            if sleep.status != "backing_off":
                assert sleep.until == before.wait_until
            else:  # ... or a failure wait brought forward to a limit's end (A30)
                assert before.wait_until is not None
                ends = [r.until for r in after.limits if now < r.until < before.wait_until]
                assert sleep.until == min([before.wait_until, *ends])
        elif sleep.status != "backing_off":
            self.check_limit_wait(after, now, sleep, messages)
            self.check_wait_names(after, now, sleep, effects)

    def check_call_end(
        self,
        before: SchedulerState,
        event: CallEnded,
        after: SchedulerState,
        messages: list[str],
        sleeps: list[Sleep],
    ) -> None:
        now = event.now
        live = before.status == "running"
        if event.posted:
            self.failures = 0
            self.empties[event.participant] = 0
            assert logs.posted_via(event.participant, event.engine) in messages
        if event.kind == "limit" and event.posted:  # A17: the post, then the limit
            posted = messages.index(logs.posted_via(event.participant, event.engine))
            assert messages[posted + 1].startswith(f"{event.engine} limited until ")
        if event.kind in ("exit", "timeout", "empty"):
            self.failures += 1
            if event.kind == "empty":
                self.empties[event.participant] += 1
        assert after.failures == self.failures
        if event.kind == "limit":
            assert event.limit is not None
            self.check_limit_recorded(before, event.engine, event.limit.reset_at, now, after)
        provider = event.engine.provider
        if event.kind == "network":
            # A27: tried again 1, 2, 4, 8, then every 15 minutes after each failed attempt.
            attempts = self.outage_attempts.get(provider, 0) + 1
            self.outage_attempts[provider] = attempts
            retries = [o.retry_at for o in after.outages if o.provider == provider]
            assert retries == [now + spec_outage_retry(attempts)], (attempts, after.outages)
        else:
            self.outage_attempts[provider] = 0  # A27, A40: any answer ends the outage
            assert all(o.provider != provider for o in after.outages)
        if not live:
            assert after.status == before.status and after.call is None
            return
        self.check_call_decided(before, event, after, messages, sleeps)

    def check_call_decided(
        self,
        before: SchedulerState,
        event: CallEnded,
        after: SchedulerState,
        messages: list[str],
        sleeps: list[Sleep],
    ) -> None:
        """What a live run decides at a call's end: the pauses of A29, A31, A32, the backoff of
        A28 (brought forward by A30), or anything but a pause."""
        now = event.now
        empty_pause = event.kind == "empty" and (
            self.empties[event.participant] >= SPEC_EMPTY_TURNS
        )
        if empty_pause:  # A31: the 3rd empty turn of one participant pauses at once
            assert after.status == "paused" and after.paused_for == "empty"
            assert messages[-1] == (
                f"{event.participant} ended {SPEC_EMPTY_TURNS} turns in a row without a post; "
                "run paused — resume to try again."
            )
        elif event.kind in ("exit", "timeout", "empty") and self.failures >= SPEC_GIVE_UP_AFTER:
            assert after.status == "paused"  # A29: exactly at the 12th failure
            assert after.paused_for == "failures"
            assert messages[-1].startswith(
                f"Gave up after {SPEC_GIVE_UP_AFTER} failed attempts in a row, over five hours ("
            )
        elif event.kind == "login":
            assert after.status == "paused" and after.paused_for == "login"  # A32
        elif event.kind in ("exit", "timeout", "empty"):
            if after.status == "stopped":
                assert after.config.max_iterations is not None
                return
            assert after.status == "backing_off"
            expected = now + spec_backoff(self.failures)  # A28, A38
            for record in after.limits:
                if now < record.until < expected:
                    expected = record.until  # A30
            assert sleeps[0].until == expected and sleeps[0].wakes_on_message
        else:
            assert after.status != "paused"
        if after.status == "paused":
            assert before.status == "running"

    def check_peer_limit(
        self,
        before: SchedulerState,
        event: LimitObserved,
        after: SchedulerState,
        effects: tuple[Effect, ...],
    ) -> None:
        """docs/sharing.md: a limit another run saw is learned as a local one is, and written
        once."""
        now = event.now
        messages = [e.message for e in effects if isinstance(e, Log)]
        record = next((r for r in after.limits if r.engine == event.engine), None)
        if event.until > now and record is not None and record.until > now:
            # The engine is out at least until the peer's reset, unless a read reset of this
            # run or another outranks a defaulted one.
            assert record.until >= event.until or (record.read and not event.read)
        if messages and is_learned(messages[0]):
            assert messages[0].startswith(f"{event.engine} limited until ")
            assert messages[0].endswith(")") and "(reported by " in messages[0]
        if before.call is not None:
            assert after.call == before.call  # A24: a call in flight is not touched
        if before.status in ("paused", "stopped", "running"):
            assert after.status == before.status
            assert not any(isinstance(e, (StartCall, Sleep)) for e in effects)

    def check_limit_recorded(
        self,
        before: SchedulerState,
        engine: Engine,
        reset_at: datetime | None,
        now: datetime,
        after: SchedulerState,
    ) -> None:
        """A6/A8/A23: the engine is out until its reset (A6's default when none is readable or it
        has passed), never earlier than a reset already recorded for it, except that a read reset
        replaces a defaulted one (docs/sharing.md)."""
        read = reset_at is not None and reset_at > now
        until = reset_at if reset_at is not None and read else (
            now + SPEC_DEFAULT_RESET[engine.provider]
        )
        for record in before.limits:
            # docs/sharing.md: a read reset outranks a defaulted one (even an earlier one);
            # between two of a kind the later wins. A record that has already ended is a new
            # limit's past.
            if record.engine == engine and record.until > now and (
                (record.read, record.until) > (read, until)
            ):
                until = record.until
        assert [r.until for r in after.limits if r.engine == engine] == [until]

    def check_limit_wait(
        self, after: SchedulerState, now: datetime, sleep: Sleep, messages: list[str]
    ) -> None:
        """A18/A35/A40: a limit or outage wait ends at the first instant something is usable."""
        assert not sleep.wakes_on_message  # A19
        owner = (
            after.config.index[after.approved] if after.approved is not None else after.due
        )
        if any("cannot hand its turn over" in m for m in messages):
            runners = [owner]
        else:
            runners = list(range(len(after.config.team)))
        assert sleep.until == expected_wait(after, now, runners)

    def check_wait_names(
        self, after: SchedulerState, now: datetime, sleep: Sleep, effects: tuple[Effect, ...]
    ) -> None:
        """A18/A35/A27: a wait line names what comes back at the wait's end — an engine whose
        limit ends then, or the provider retried then when its outage outlasts the entry's
        limit (docs/scheduler.md: of several, the smallest name) — in its text and in its
        structured side (`engine` or `provider`)."""
        lines = [e for e in effects if isinstance(e, Log)
                 and e.kind in ("wait-limited", "wait-unreachable", "wait-own")]
        if not lines:
            return
        (line,) = lines
        owner = after.config.index[after.approved] if after.approved is not None else after.due
        lanes = [after.config.lanes[owner]] if line.kind == "wait-own" else after.config.lanes
        candidates: list[tuple[str, Engine | None, str | None]] = []
        for lane in lanes:
            for engine in lane:
                limit = max([r.until for r in after.limits
                             if r.engine == engine and r.until > now], default=None)
                retry = max([o.retry_at for o in after.outages
                             if o.provider == engine.provider and o.retry_at > now], default=None)
                back = max((t for t in (limit, retry) if t is not None), default=None)
                if back != sleep.until:
                    continue
                if limit == back:
                    candidates.append((str(engine), engine, None))
                else:
                    candidates.append((engine.provider, None, engine.provider))
        assert candidates, (line, after.limits, after.outages)
        named = min(candidates, key=lambda c: (c[0], c[1] is None))  # a name tie: the engine
        if line.kind != "wait-unreachable":
            assert f"waiting for {named[0]}," in line.message, (line.message, candidates)
        assert (line.engine, line.provider) == named[1:], (line, candidates)

    @invariant()
    def paused_exactly_when_a_reason_is_said(self) -> None:
        """A42: the run is `paused` if and only if it says why (`paused_for`): set by every
        pause (A29, A31, A32, the operator's), cleared by whatever takes the run out of it."""
        if self.state is not None:
            assert (self.state.status == "paused") == (self.state.paused_for is not None), (
                self.state.status, self.state.paused_for)

    @invariant()
    def due_is_a_member(self) -> None:
        if self.state is not None:
            assert 0 <= self.state.due < len(self.state.config.team)
            assert (
                self.state.failures < SPEC_GIVE_UP_AFTER or self.state.status != "backing_off"
            )


__all__ = [
    "SchedulerMachine",
]
