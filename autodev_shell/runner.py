"""The daemon loop: drive `autodev_core.scheduler.step` and carry out every effect it returns.

The loop is the whole of the shell's "control flow", and it decides nothing:

- `StartCall` → ask the persistence turn gate (B9) whether a turn may start, assemble the turn's
  prompt (B18-B20: fresh turns compute it, retries and hops reapply the persisted one), run the
  CLI through its adapter (C1), and report the end as a `CallEnded` event;
- `Sleep` → sleep in slices with a heartbeat until the target, a stop, a pause, or (when the
  core says so) a user message (C2, A19, A20, A30);
- `Log` → the log sink (stderr, the log file, `--json` lines; C7);
- `StatusChanged` → the store's run state, through the next revision.

After every step the new scheduler state (and the post, when the call posted) is committed as one
revision through `Durability` (C3, B4-B9). Controls from other processes (`autodev stop`,
`pause`, `resume`, `say`) arrive through the store's control table and become events.

This module is the loop itself: the steps, the effect handlers, the controls turned into events
between steps, and the turn's prompt (B18-B20). Its other jobs are parts the `Runner` holds,
each in its own module: `loop/commits.Commits` (each revision, the turn gate's wait, the
heartbeat, the store-file check), `calls/cli_calls.CliCalls` (running a CLI and recording its
process group), `loop/operator_commands.Controls` (reading the control table),
`loop/messages.Messages` (user messages, posted at once) and `loop/logsink.StreamLog` (the log
lines).
"""

from __future__ import annotations

import contextlib
import sys
from collections import deque
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from types import MappingProxyType
from typing import Final, TextIO

import attrs

from autodev_core.control.identity import RunIdentity
from autodev_core.control.persistence import describe_persistence
from autodev_core.control.thread_window import thread_window
from autodev_core.control.turn_input import (
    InputRecord,
    TurnStart,
    bind_input_context,
    plan_turn_input,
)
from autodev_core.engine import Engine
from autodev_core.errors import AutodevError
from autodev_core.participant import Participant
from autodev_core.scheduler import (
    CallCancelled,
    Effect,
    LimitCleared,
    Log,
    MessageArrived,
    PauseRequested,
    ResumeRequested,
    RunStarted,
    SchedulerConfig,
    SchedulerState,
    Sleep,
    StartCall,
    StatusChanged,
    StopRequested,
    UsageObserved,
    Woke,
    call_ended,
    logs,
    restore_state,
    step,
)
from autodev_core.scheduler.limited import lifted_at_reset
from autodev_core.serialization import from_json

from .calls import DEFAULT_TEMPLATES, CallResult, CommandTemplate
from .calls.cli_calls import CliCalls
from .calls.environments import CallEnvironments
from .calls.lanes import Lanes
from .calls.ledger import ledger_for
from .clock import Clock, local_zone
from .durability.writes import Durability
from .loop.commits import GATE_RETRY_SECONDS, Commits, RunFolderGone, revision_span
from .loop.logsink import LOG_FIELDS, LogSink, StreamLog
from .loop.messages import USER, Messages, Todo
from .loop.operator_commands import Controls
from .loop.sleeper import (
    COUNTDOWN_MIN_SECONDS,
    DEFAULT_SLICE_SECONDS,
    Wake,
    countdown_text,
    sleep_until,
)
from .private import write_private_text
from .sharing import LimitSharing
from .store.run_store import Control, NewPost, RunStore

#: The thread's last posts shown to a participant in a fresh turn's prompt.
PROMPT_THREAD_POSTS: Final = 20
#: The thread window's bound in UTF-8 bytes: a post is whatever a CLI printed (70 KB, 10 MB),
#: so posts alone cannot bound a prompt. 64 KiB keeps an argv prompt (agy's `-p`) well below
#: Linux's 128 KiB limit on one argument with room for the participant's own text, and keeps
#: every prompt a modest share of a model's context. Oldest posts are dropped first.
PROMPT_THREAD_BYTES: Final = 64 * 1024
#: One post's most in the window: a longer post is cut (its start kept) with a marker, so one
#: huge post never pushes every other post out.
PROMPT_POST_BYTES: Final = 16 * 1024
ControlEvent = (StopRequested | PauseRequested | ResumeRequested | MessageArrived
                | LimitCleared)
#: The event each control (`autodev stop`, `pause`, `resume`, `say`, C6; `autodev limits
#: clear`, docs/cli.md) becomes: the one mapping of control names to events (a `say` also
#: brings its text as posts: loop/messages.py; a `clear` its engine: `_cleared`).
_CONTROL_EVENTS: Final[Mapping[str, type[ControlEvent]]] = MappingProxyType({
    "stop": StopRequested, "pause": PauseRequested, "resume": ResumeRequested,
    "say": MessageArrived, "clear": LimitCleared,
})
#: The controls that carry nothing but their instant (a `say` brings posts, a `clear` an engine).
_PLAIN_CONTROLS: Final[Mapping[str, type[StopRequested | PauseRequested | ResumeRequested]]] = (
    MappingProxyType({"stop": StopRequested, "pause": PauseRequested, "resume": ResumeRequested}))
#: The same, read back: the control an event carries out (`--json`'s `control` line).
_CONTROL_NAMES: Final[Mapping[type, str]] = MappingProxyType(
    {event: name for name, event in _CONTROL_EVENTS.items()})

#: Reads the team's participant files again: their participants when the files changed since
#: the last reading, None when they did not; raises `AutodevError` (the loader's one line).
TeamReader = Callable[[], "tuple[Participant, ...] | None"]
#: Runs one call for the loop: (effect, participant, prompt) -> the adapter's result.
CallPerformer = Callable[[StartCall, Participant, str], CallResult]

@attrs.frozen
class RunSummary:
    """What a `Runner.run` did, for the CLI and the demo to print."""

    status: str
    events: int
    calls: int
    posts: tuple[tuple[str, str], ...]  # (participant, engine) per post, in order
    revisions: int
    persistence: str


def clock_behind(now: datetime, floor: datetime) -> str:
    """The note of a restart on a clock behind the run's last event (A20)."""
    behind = floor - now
    minutes, seconds = divmod(int(behind.total_seconds()), 60)
    hours, minutes = divmod(minutes, 60)
    span = f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{seconds:02d}s"
    return (f"the machine clock is {span} behind the run's last event, at "
            f"{floor.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC; events are stamped at that instant "
            "until the clock catches up (A20)")


def restored_state(config: SchedulerConfig, saved_json: str) -> SchedulerState:
    """The scheduler state to start from after a restart: the core's `restore_state` of the
    last committed state (A25, A33), or a fresh one when none can be read."""
    saved: SchedulerState | None = None
    if saved_json and saved_json != "{}":
        try:
            saved = from_json(saved_json, SchedulerState)
        except Exception:  # an unreadable saved state is a run starting over, not a crash
            saved = None
    return restore_state(config, saved)

class Runner:
    """One run's daemon: the scheduler state, the store, and the effect handlers (B21).

    Its parts (see module doc): `commits`, `cli`, `controls` and `messages`.
    """

    def __init__(
        self,
        *,
        config: SchedulerConfig,
        store: RunStore,
        durability: Durability,
        identity: RunIdentity,
        clock: Clock,
        log: LogSink,
        perform_call: CallPerformer | None = None,
        templates: Mapping[str, CommandTemplate] = DEFAULT_TEMPLATES,
        env: Mapping[str, str] | None = None,
        slice_seconds: float = DEFAULT_SLICE_SECONDS,
        countdown: TextIO | None = None,
        lanes: Lanes | None = None,
        prompt_dir: Path | None = None,
        sharing: LimitSharing | None = None,
        project: Path | None = None,
        environments: CallEnvironments | None = None,
        reload_team: TeamReader | None = None,
        team_edit_file: Path | None = None,
    ) -> None:
        self.config = config
        self.store = store
        self.durability = durability
        self.identity = identity
        self.clock = clock
        self.slice_seconds = slice_seconds
        self.countdown = countdown
        # Limits shared with other runs on the same accounts (docs/sharing.md); the team's
        # engines are read at each turn start.
        self.sharing = sharing
        # How each engine's last limit notice wrote its reset (docs/sharing.md "Clocks").
        self._reset_forms: dict[Engine, str | None] = {}
        self._engines: tuple[Engine, ...] = tuple(
            dict.fromkeys(engine for lane in config.lanes for engine in lane)
        )
        self.controls = Controls(store, clock)
        self.commits = Commits(store=store, durability=durability, identity=identity,
                               clock=clock, log=log, controls=self.controls)
        # `prompt_dir`: where an argv prompt too long for one argument is written (private).
        # A3, A6: a CLI's clock times are read in its own zone (its TZ, else the machine's),
        # never in the run's `timezone:`, which is for writing `<time>` only.
        self.cli = CliCalls(store=store, clock=clock, log=log, zone=local_zone(env),
                            templates=templates, env=env, lanes=lanes, prompt_dir=prompt_dir,
                            cancel=self._during_call, cwd=project,
                            environments=environments)
        self._log = log
        self.perform_call = perform_call or self.cli.call
        # The call ledger beside the lanes (docs/timeline.md): a line per ended call.
        self.ledger = None if lanes is None else ledger_for(
            lanes, say=lambda line: self.log.note(self.clock.now(), line))
        self.members = {p.id: p for p in config.team}
        self.state = restored_state(config, store.snapshot().scheduler_state_json)
        self.events = 0
        self.calls = 0
        self.posts: list[tuple[str, str]] = []
        self.statuses: list[str] = []
        self._events: deque[Todo] = deque()
        self.messages = Messages(controls=self.controls, clock=clock, queue=self._events,
                                 apply=lambda todo: self._apply(todo, self._events))
        self._parent: tuple[str, str] = ("", "")  # the input the current turn answers (B19)
        # B21: one handler per effect type the core can emit; a test checks none is missing.
        self.handlers: dict[type, Callable[[Effect], list[Todo]]] = {
            StartCall: self._on_start_call,  # type: ignore[dict-item]
            Sleep: self._on_sleep,  # type: ignore[dict-item]
            Log: self._on_log,  # type: ignore[dict-item]
            StatusChanged: self._on_status,  # type: ignore[dict-item]
        }
        self._stop_at: datetime | None = None
        # Edits apply at the next turn start (docs/participants.md, Editing a running team).
        self.reload_team = reload_team
        self._team_said = ""  # the last refusal written, so one bad edit is said once
        self.team_edit_file = team_edit_file  # where `autodev status` reads the refusal

    @property
    def log(self) -> LogSink:
        """Where the loop and its parts write their lines; setting it sets it for all."""
        return self._log

    @log.setter
    def log(self, sink: LogSink) -> None:
        self._log = sink
        self.commits.log = self.cli.log = sink

    @property
    def revision(self) -> int:
        """The loop's revision counter: the last revision it committed or tried to (C3)."""
        return self.commits.revision

    def check_store_file(self) -> None:
        """See `Commits.check_store_file` (raises `RunFolderGone`)."""
        self.commits.check_store_file()

    def flush_replicas(self) -> None:
        """Bring every replica level with the store now (pause, stop, a clean exit): the
        checkpoint then holds every revision (B13-B16); see `Commits.sync_replicas`."""
        self.commits.sync_replicas(self.clock.now(), flush=True)

    def end_previous_call(self) -> None:
        """See `CliCalls.end_previous_call`: end a call a killed daemon left running."""
        self.cli.end_previous_call()

    # --- the loop --------------------------------------------------------------------------

    def run(self, *, stop_at: datetime | None = None) -> RunSummary:
        """Run until the run is stopped (by `autodev stop`, or at `stop_at` on the clock)."""
        self._stop_at = stop_at
        events = self._events
        if self.durability.pending:
            # Revisions taken up from the shadow copy go to the store as soon as it works.
            shadowed = self.durability.pending
            taken_up = self.durability.retry(identity=self.identity, now=self.clock.now())
            done = ("committed to the store" if taken_up.outcome == "committed"
                    else f"not committed yet: {taken_up.error or taken_up.gate.detail}")
            self.log.note(self.clock.now(), f"took up revisions {revision_span(shadowed)} "
                          f"from the shadow copy; {done}")
        events.extend(self._shared(self.clock.now()))  # learned before the run starts (A39)
        self.end_previous_call()
        floor = self.state.last_event_at
        if floor is not None and self.clock.now() < floor:
            # A20: the saved instant is a floor (restore_state keeps it); the run goes on from
            # it, each event stamped there (`_apply`), until the clock catches up.
            self.log.note(floor, clock_behind(self.clock.now(), floor))
        if self.state.status == "paused":
            # A pause survives a restart: it waits for a person (A29, A31, A32).
            self.log.note(self.clock.now(), "the run is paused; `autodev resume` goes on")
        else:
            events.append(Todo(RunStarted(now=self.clock.now())))
        while True:
            while events:
                self._apply(events.popleft(), events)
                self._drain_controls(events)
            if self.state.status == "stopped":
                break
            if self.state.status == "paused":
                self.flush_replicas()  # B14: a paused run's backup holds all it has
                self._wait_while_paused(events)
                continue
            # A status with nothing to do next cannot happen; stop rather than spin.
            self.log.note(self.clock.now(), f"nothing to do while {self.state.status}; stopping")
            events.append(Todo(StopRequested(now=self.clock.now())))
        self.flush_replicas()  # B14: a stopped run's backup holds all it has
        return RunSummary(
            status=self.state.status,
            events=self.events,
            calls=self.calls,
            posts=tuple(self.posts),
            revisions=self.revision,
            persistence=describe_persistence(self.durability.state),
        )

    def _apply(self, todo: Todo, events: deque[Todo]) -> None:
        """One step of the core, committed as one revision with its posts and the controls it
        carries out; then its effects are carried out, in order."""
        event = todo.event
        last = self.state.last_event_at
        if last is not None and event.now < last:
            # The wall clock was set back (A20): the core refuses time going backwards (A38),
            # so the event happens at the last instant it knows.
            event = attrs.evolve(event, now=last)
        if not isinstance(event, (CallCancelled, StopRequested, PauseRequested)):
            self._take_team_edits(event.now)
        control = _CONTROL_NAMES.get(type(event))
        if control is not None:
            self.log.control(event.now, control)  # --json: the request, before what it does
        before = self.state
        self.state, effects = step(before, event)
        self.events += 1
        for post in todo.posts:
            if post.participant != USER:
                self.posts.append((post.participant, post.engine))
        self.commits.commit(self.state, todo.posts, reason=type(event).__name__,
                            taken=todo.taken)
        if not isinstance(event, LimitCleared):  # a limit cleared by hand has its own line
            for engine in lifted_at_reset(before.limits, self.state.limits, event.now):
                self.log.note(event.now, logs.limit_lifted(engine))
        self._publish(before, event.now)
        for effect in effects:
            events.extend(self.handlers[type(effect)](effect))
        # A user message is posted as soon as the loop sees it, whatever the run is doing; the
        # core decides what it changes (A19, A30).
        said = self.messages.take(self.clock.now())
        if said is not None:
            events.append(said)

    # --- edits of the participant files, at the next turn start --------------------------

    def _take_team_edits(self, now: datetime) -> None:
        """Read the team's files again when they changed (the provider is chosen when a turn
        starts): a team that reads cleanly and has the same participants in the same order
        replaces the running one before this step decides; a refused edit is the loader's one
        line in the log, said once, and the run goes on with the last good team."""
        if self.reload_team is None:
            return
        try:
            members = self.reload_team()
        except AutodevError as exc:
            self._refuse_edit(now, str(exc))
            return
        if members is None:
            return  # nothing changed since the last reading
        config = self.config
        if tuple(m.id for m in members) != tuple(m.id for m in config.team):
            self._refuse_edit(now, "participants added, removed or reordered apply at the next "
                              "`autodev run`")
            return
        if members == config.team:
            return
        try:
            new = attrs.evolve(config, team=members)
        except ValueError as exc:
            self._refuse_edit(now, str(exc))
            return
        state = self.state
        changed = [i for i, (a, b) in enumerate(zip(config.lanes, new.lanes, strict=True))
                   if a != b]
        # A changed lane starts again at its first entry; a call in flight on the old lane
        # ends as it began (its engine is the call's own, A24).
        seats = tuple(0 if i in changed else seat for i, seat in enumerate(state.seats))
        passed = tuple(0 if i in changed else bits for i, bits in enumerate(state.passed))
        self.state = attrs.evolve(state, config=new, seats=seats, passed=passed)
        self.config = new
        self.members = {m.id: m for m in members}
        edited = [m.id for m, old in zip(members, config.team, strict=True) if m != old]
        self._team_said = ""
        if self.team_edit_file is not None:
            with contextlib.suppress(OSError):
                self.team_edit_file.unlink(missing_ok=True)
        self.log.note(now, f"team edit applied from this turn: {', '.join(edited)}")

    def _refuse_edit(self, now: datetime, why: str) -> None:
        if why != self._team_said:
            self._team_said = why
            self.log.note(now, f"team edit refused: {why}; the run goes on with the last good "
                          "team")
            if self.team_edit_file is not None:
                with contextlib.suppress(OSError):  # the log has it; status is the extra
                    write_private_text(self.team_edit_file, why + "\n")

    # --- controls between and during steps: stop, pause, resume, say (C6) -------------

    def _drain_controls(self, events: deque[Todo]) -> None:
        """Turn queued controls into events, once the events in hand are done."""
        if events:
            return
        if self._stop_at is not None and self.clock.now() >= self._stop_at:
            if self.state.status != "stopped":
                events.append(Todo(StopRequested(now=self.clock.now())))
            return
        control = self.controls.take()
        if control is None:
            return
        now = self.clock.now()
        if control.command == "say":
            events.append(self.messages.arrived(now, first=control))
            return
        if control.command == "clear":
            events.extend(self._cleared(control, now))
            return
        kind = _PLAIN_CONTROLS.get(control.command)
        if kind is None:
            self.log.note(now, f"unknown control {control.command!r} ignored")
            self.commits.untaken.add(control.id)
            return
        events.append(Todo(kind(now=now), taken=(control.id,)))

    def _cleared(self, control: Control, now: datetime) -> list[Todo]:
        """`autodev limits clear ENGINE` as its step (docs/cli.md); an engine the core cannot
        read (the store edited by hand) is a note, and the control is marked taken."""
        try:
            engine = Engine.parse(control.arg)
        except ValueError as exc:
            self.log.note(now, f"limits clear {control.arg!r} ignored: {exc}")
            self.commits.untaken.add(control.id)
            return []
        return [Todo(LimitCleared(now=now, engine=engine), taken=(control.id,))]

    def _clear_now(self) -> bool:
        """Carry out every queued `autodev limits clear` now, in the middle of a wait, one step
        each (their follow-ups queued for the loop); whether any was."""
        taken = self.controls.take_all("clear")
        for control in taken:
            for todo in self._cleared(control, self.clock.now()):
                self._apply(todo, self._events)
        return bool(taken)

    def _wait_while_paused(self, events: deque[Todo]) -> None:
        while not events:
            if self._stop_at is not None and self.clock.now() >= self._stop_at:
                events.append(Todo(StopRequested(now=self.clock.now())))
                return
            now = self.clock.now()
            self.check_store_file()
            self.commits.beat(now)
            # Wait a slice (controls are polled all the while), never past the end of the run.
            seconds = self.slice_seconds
            if self._stop_at is not None:
                seconds = min(seconds, max((self._stop_at - now).total_seconds(), 0.0))
            self.clock.wait(seconds, lambda: self.controls.has("stop", "resume", "say", "pause",
                                                               "clear"))
            self._drain_controls(events)

    def _cut_short(self) -> list[Todo]:
        """A stop or pause cut the call short (or came before it started): that control, then
        `CallCancelled`, so the core knows the call has no outcome and its turn is still owed
        (A33) — a resume or a new start begins it again."""
        control = self.controls.take_first("stop", "pause")
        now = self.clock.now()
        if control is None:  # pragma: no cover - a cut-short call always has its control
            return []
        kind = _PLAIN_CONTROLS[control.command]
        return [Todo(kind(now=now), taken=(control.id,)), Todo(CallCancelled(now=now))]

    def _during_call(self) -> bool:
        """Asked several times a second while a call runs: post user messages at once, and
        say whether a stop or pause cuts the call short."""
        self.check_store_file()
        self.messages.post_now()
        return self.controls.has("stop", "pause")

    # --- effect handlers ---------------------------------------------------------------------

    def _on_log(self, effect: Log) -> list[Todo]:
        self.log.entry(effect)
        return []

    def _on_status(self, effect: StatusChanged) -> list[Todo]:
        # The status itself is part of the scheduler state committed after this step.
        self.statuses.append(effect.status)
        self.log.status(effect.at, effect.status)
        return []

    def _on_sleep(self, effect: Sleep) -> list[Todo]:
        """Sleep until the core's target (or the run's end), a stop, a pause, or what makes the
        core decide afresh: a user message (A19, A30), another run's limit (docs/sharing.md)."""
        # A message said as the call before this wait ended is posted now, not at its end.
        held = self.messages.held()
        if held and effect.wakes_on_message:
            return held  # A30: it ends a failure wait, as one said during the wait does
        for todo in held:
            self._apply(todo, self._events)  # A19: a limit wait goes on
        if held and self.state.wait_until != effect.until:
            return []  # the core changed course; its effects are already under way
        target = effect.until
        if self._stop_at is not None and self._stop_at < target:
            target = self._stop_at
        wake = self._sleep_through(effect, target)
        if not isinstance(wake, Wake):
            return wake  # ended early by a step of its own
        self._end_countdown()
        if wake.reason == "target" and target is not effect.until:
            return [Todo(StopRequested(now=wake.at))]
        if wake.reason == "target":
            return [Todo(Woke(now=wake.at))]
        if wake.reason == "message":
            return [self.messages.arrived(wake.at)]
        return []  # stop/pause: the control is still queued and becomes the next event

    def _sleep_through(self, effect: Sleep, target: datetime) -> Wake | list[Todo]:
        """The wait's slices, until the wake that ends it; or the events that end it early (what
        other runs learned), or none when a message's step changed the core's course."""
        heartbeat = self._heartbeat(effect)
        sharing = self.sharing
        while True:
            wake = sleep_until(
                target,
                clock=self.clock,
                slice_seconds=self.slice_seconds,
                heartbeat=heartbeat,
                stop=lambda: self.controls.has("stop"),
                pause=lambda: self.controls.has("pause"),
                message=self.messages.said,
                wakes_on_message=True,  # every message is posted at once ...
                news=lambda: self.controls.has("clear") or (
                    sharing is not None and sharing.has_news()),
            )
            if wake.reason == "news" and self._clear_now():
                # docs/cli.md: a limit lifted by hand; the core decided afresh.
                if self.state.wait_until != effect.until or self.state.status != effect.status:
                    self._end_countdown()
                    return []  # the core changed course; its effects are already under way
                if sharing is None or not sharing.has_news():
                    continue
            if wake.reason == "news" or (wake.reason == "target" and target is effect.until):
                # Another run's limit is heard before the wait ends or goes on; the core
                # decides afresh (a read reset may end a defaulted wait early).
                shared = self._heard(wake.at)
                if shared:
                    self._end_countdown()
                    return shared
                if wake.reason == "news":
                    continue
            if wake.reason != "message" or effect.wakes_on_message:
                return wake
            # ... but only a failure wait ends on one (A30); a limit wait sleeps on (A19).
            self.messages.post_now()
            if self.state.wait_until != effect.until:
                return []  # the core changed course; its effects are already under way

    def _heard(self, at: datetime) -> list[Todo]:
        """What other runs learned, as the events that end a wait; none when all of it is usage
        readings, which decide nothing and never end a wait (A39, docs/sharing.md): those are
        learned here, and the run sleeps on."""
        shared = self._shared(at)
        if any(not isinstance(todo.event, UsageObserved) for todo in shared):
            return shared
        for todo in shared:
            self._apply(todo, deque())
        return []

    def _heartbeat(self, effect: Sleep) -> Callable[[datetime, datetime], None]:
        """Each slice of a wait: the store-file check, the heartbeat (C2) and, on a terminal,
        the countdown (C7), rewritten only when its text changes."""
        shown = [""]

        def heartbeat(now: datetime, target: datetime) -> None:
            self.check_store_file()
            self.commits.beat(now)
            left = (target - now).total_seconds()
            if self.countdown is not None and left >= COUNTDOWN_MIN_SECONDS:
                text = countdown_text(self._waiting_for(effect), target, now, self.config.zone)
                if text != shown[0]:
                    shown[0] = text
                    self.countdown.write("\r" + text + "   ")
                    self.countdown.flush()

        return heartbeat

    def _end_countdown(self) -> None:
        if self.countdown is not None:
            self.countdown.write("\n")

    def _waiting_for(self, effect: Sleep) -> str:
        """What a wait waits for, for the countdown (C7): the engine or provider that comes back
        at its end, as the state records it."""
        if effect.status == "backing_off":
            return "the next attempt"
        for record in self.state.limits:
            if record.until == effect.until:
                return str(record.engine)
        for outage in self.state.outages:
            if outage.retry_at == effect.until:
                return outage.provider
        return "a provider"

    def _on_start_call(self, effect: StartCall) -> list[Todo]:
        member = self.members[effect.participant]
        if self._stop_at is not None and self.clock.now() >= self._stop_at:
            # The run's time is up: it stops before another call, and the call never ran.
            now = self.clock.now()
            return [Todo(StopRequested(now=now)), Todo(CallCancelled(now=now))]
        if self.controls.has("stop", "pause") or not self.commits.gate_open():
            return self._cut_short()  # stop or pause arrived while waiting for the write
        self.messages.post_now()  # a message said as the last call ended is in this prompt
        prompt = self._prompt(effect, member)
        self.check_store_file()
        self.commits.beat(self.clock.now())
        self.calls += 1
        result = self.perform_call(effect, member, prompt)
        if self.ledger is not None:  # every ended call, cancelled too (docs/timeline.md)
            self.ledger.add(effect.participant, str(effect.engine), result)
        if result.cancelled:
            return self._cut_short()
        text = (result.post or "").strip()
        ended = call_ended(
            max(self.clock.now(), effect.at),
            effect.participant,
            effect.engine,
            result.classification,
            posted=bool(text),
            exit_code=result.exit_code,
            timed_out=result.timed_out,
        )
        if ended.limit is not None:  # published with the limit (docs/sharing.md "Clocks")
            self._reset_forms[effect.engine] = ended.limit.reset_form
        # The post is committed with the CallEnded it belongs to, keyed by that revision (C3).
        posts = (
            (NewPost(participant=effect.participant, engine=str(effect.engine), text=text,
                     at=result.ended_at),)
            if text else ()
        )
        # The turn this call's end may start sees what other runs learned meanwhile
        # (learned first, at the same instant: A39).
        return [*self._shared(ended.now), Todo(ended, posts)]

    # --- the thread and prompts (B18-B20) --------------------------------------------------

    def _prompt(self, effect: StartCall, member: Participant) -> str:
        """The turn's prompt: computed for a fresh turn and persisted with its parent input;
        reapplied verbatim for a retry or a hop when the parent is unchanged (B19)."""
        thread = self.store.thread()
        if effect.turn_kind == "fresh" or not self._parent[0]:
            last = thread[-1] if thread else None
            self._parent = (f"seq:{last.seq}" if last else "seq:0", last.text if last else "")
        parent_id, parent_text = self._parent
        turn_type = "normal" if effect.turn_kind == "fresh" else "retry"
        record = self.store.load_turn_input(f"{parent_id}:{member.id}")
        plan = plan_turn_input(
            TurnStart(
                turn_type,
                f"{parent_id}:{member.id}",
                parent_text,
                # B20: the store's revision and the loop's own, apart: a failed attempt whose
                # writes the store never took leaves the working revision ahead.
                committed_revision=self.durability.committed_revision,
                working_revision=self.revision,
            ),
            record,
        )
        if plan.rollback.required:
            dropped = self.durability.roll_back(plan.rollback.to_revision)
            if dropped:
                self.log.note(self.clock.now(), f"rolled back revisions {revision_span(dropped)} "
                              "that the failed attempt left uncommitted (B20)")
        if plan.context is not None and not plan.needs_compute:
            return plan.context
        window = thread_window(
            [(p.participant, p.text) for p in thread],
            max_posts=PROMPT_THREAD_POSTS,
            max_bytes=PROMPT_THREAD_BYTES,
            max_post_bytes=PROMPT_POST_BYTES,
        )
        lines = [member.prompt.strip(), "", "--- the thread so far (oldest first) ---"]
        lines += list(window) or ["(empty)"]
        owner = "" if effect.turn_owner == member.id else f" (taking @{effect.turn_owner}'s turn)"
        lines += ["---", f"You are @{member.id}. It is your turn{owner}. Post your reply."]
        context = "\n".join(lines).strip()
        # Through the commit path: on a failing store it is written with the next revision.
        self.durability.save_turn_input(
            bind_input_context(f"{parent_id}:{member.id}", parent_text, context),
            identity=self.identity, now=self.clock.now(),
        )
        return context

    # --- limits shared with other runs (docs/sharing.md) ---------------------------------

    def _shared(self, now: datetime) -> list[Todo]:
        """What other runs on the same accounts learned since this run last asked: one round
        trip for the team's engines (a turn starts next), plus pub/sub news. Empty when this
        run does not share, or Redis cannot be reached (the run carries on with its own)."""
        if self.sharing is None:
            return []
        last = self.state.last_event_at
        at = now if last is None or now >= last else last
        return [Todo(observed) for observed in self.sharing.sync(self._engines, at)]

    def _publish(self, before: SchedulerState, now: datetime) -> None:
        """Offer the limits and the usage readings (docs/sharing.md) this step recorded from
        this run's own calls (never outages)."""
        if self.sharing is None:
            return
        if self.state.limits != before.limits:
            old = set(before.limits)
            learned = [r for r in self.state.limits if not r.source and r not in old]
            if learned:
                self.sharing.publish(learned, now, self._reset_forms)
        if self.state.readings != before.readings:
            seen = set(before.readings)
            read = [r for r in self.state.readings if not r.source and r not in seen]
            if read:
                self.sharing.publish_usage(read, now)


def default_countdown() -> TextIO | None:
    """A countdown only when stderr is a terminal (C7)."""
    return sys.stderr if sys.stderr.isatty() else None

__all__ = [
    "GATE_RETRY_SECONDS",
    "LOG_FIELDS",
    "PROMPT_POST_BYTES",
    "PROMPT_THREAD_BYTES",
    "PROMPT_THREAD_POSTS",
    "USER",
    "CallPerformer",
    "Controls",
    "InputRecord",
    "LogSink",
    "Messages",
    "RunFolderGone",
    "RunSummary",
    "Runner",
    "StreamLog",
    "default_countdown",
    "restored_state",
]
