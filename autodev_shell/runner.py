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
"""

from __future__ import annotations

import json
import sys
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, tzinfo
from pathlib import Path
from typing import Final, Protocol, TextIO

import attrs

from autodev_core.identity import RunIdentity
from autodev_core.participant import Participant
from autodev_core.persistence import describe_persistence
from autodev_core.scheduler import (
    CallEnded,
    Effect,
    Event,
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
    Woke,
    call_ended,
    initial_state,
    step,
)
from autodev_core.serialization import from_json, to_json
from autodev_core.thread_window import thread_window
from autodev_core.turn_input import InputRecord, TurnStart, bind_input_context, plan_turn_input

from .adapters import (
    DEFAULT_TEMPLATES,
    CallResult,
    CommandTemplate,
    argv_for,
    call_participant,
    prompt_on_stdin,
)
from .clock import Clock
from .durability import Durability, PersistResult
from .lanes import Lanes
from .sleeper import COUNTDOWN_MIN_SECONDS, DEFAULT_SLICE_SECONDS, countdown_text, sleep_until
from .store import NewPost, RunStore

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
#: Real seconds between attempts to write a revision the turn gate is waiting for (B9).
GATE_RETRY_SECONDS: Final = 1.0
#: The participant name user messages are posted under.
USER: Final = "user"


class LogSink(Protocol):
    """Where log lines go: the core's lines (`line`) and the shell's own notes (`note`)."""

    def line(self, at: datetime, message: str) -> None: ...

    def note(self, at: datetime, message: str) -> None: ...


class StreamLog:
    """Log lines to a stream (stderr) and a log file; JSON lines with `json_lines` (C7)."""

    def __init__(
        self,
        zone: tzinfo,
        *,
        stream: TextIO | None = None,
        file: Path | None = None,
        json_lines: bool = False,
    ) -> None:
        self.zone = zone
        self.stream = stream
        self.json_lines = json_lines
        self._file = file.open("a", encoding="utf-8") if file is not None else None
        self.lines: list[tuple[datetime, str]] = []

    def _stamp(self, at: datetime) -> str:
        return at.astimezone(self.zone).strftime("%Y-%m-%dT%H:%M:%S")

    def _write(self, at: datetime, message: str, kind: str) -> None:
        text = f"{self._stamp(at)} {message}"
        if self.json_lines:
            text = json.dumps(
                {"at": at.isoformat(), "local": self._stamp(at), "kind": kind, "message": message},
                ensure_ascii=False,
            )
        for out in (self.stream, self._file):
            if out is not None:
                out.write(text + "\n")
                out.flush()

    def line(self, at: datetime, message: str) -> None:
        self.lines.append((at, message))
        self._write(at, message, "log")

    def note(self, at: datetime, message: str) -> None:
        self._write(at, message, "note")

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


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


def restore_state(config: SchedulerConfig, saved_json: str) -> SchedulerState:
    """The scheduler state to start from after a restart.

    The turn order (who is due) and each participant's seat survive when the team is the same;
    the limit and outage registry does not (A25: a restart forgets it and rediscovers limits by
    calling), nor does a call or wait that the restart cut short.
    """
    fresh = initial_state(config)
    if not saved_json:
        return fresh
    try:
        saved = from_json(saved_json, SchedulerState)
    except Exception:  # an unreadable saved state is a run starting over, not a crash
        return fresh
    if tuple(p.id for p in saved.config.team) != tuple(p.id for p in config.team):
        return fresh
    return attrs.evolve(
        fresh, due=saved.due, gates=saved.gates, iterations=saved.iterations, runtime=saved.runtime
    )


class Controls:
    """Commands queued by other processes (the store's control table), read without loss."""

    def __init__(self, store: RunStore, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        self.queue: deque[tuple[str, str]] = deque()

    def poll(self) -> None:
        for control in self.store.take_controls(now=self.clock.now()):
            self.queue.append((control.command, control.arg))

    def has(self, *commands: str) -> bool:
        self.poll()
        return any(command in commands for command, _ in self.queue)

    def take_all(self, command: str) -> list[tuple[str, str]]:
        """Remove and return every queued `command`, leaving the others in order."""
        self.poll()
        taken = [item for item in self.queue if item[0] == command]
        if taken:
            self.queue = deque(item for item in self.queue if item[0] != command)
        return taken

    def take(self) -> tuple[str, str] | None:
        self.poll()
        return self.queue.popleft() if self.queue else None


class Runner:
    """One run's daemon: the scheduler state, the store, and the effect handlers (B21)."""

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
    ) -> None:
        self.config = config
        self.store = store
        self.durability = durability
        self.identity = identity
        self.clock = clock
        self.log = log
        self.templates = templates
        self.env = env
        self.slice_seconds = slice_seconds
        self.countdown = countdown
        self.lanes = lanes
        #: Where an argv prompt too long for one argument is written for its call (private).
        self.prompt_dir = prompt_dir
        self.perform_call = perform_call or self._call_cli
        self.controls = Controls(store, clock)
        self.members = {p.id: p for p in config.team}
        self.state = restore_state(config, store.snapshot().scheduler_state_json)
        self.revision = store.revision
        self.events = 0
        self.calls = 0
        self.posts: list[tuple[str, str]] = []
        self.statuses: list[str] = []
        self._call_posts: dict[CallEnded, NewPost] = {}
        self._parent: tuple[str, str] = ("", "")  # the input the current turn answers (B19)
        # B21: one handler per effect type the core can emit; a test checks none is missing.
        self.handlers: dict[type, Callable[[Effect], Event | None]] = {
            StartCall: self._on_start_call,  # type: ignore[dict-item]
            Sleep: self._on_sleep,  # type: ignore[dict-item]
            Log: self._on_log,  # type: ignore[dict-item]
            StatusChanged: self._on_status,  # type: ignore[dict-item]
        }
        self._stop_at: datetime | None = None

    # --- the loop --------------------------------------------------------------------------

    def run(self, *, stop_at: datetime | None = None) -> RunSummary:
        """Run until the run is stopped (by `autodev stop`, or at `stop_at` on the clock)."""
        self._stop_at = stop_at
        events: deque[Event] = deque([RunStarted(now=self.clock.now())])
        while True:
            while events:
                event = events.popleft()
                self._apply(event, events)
                self._drain_controls(events)
            if self.state.status == "stopped":
                break
            if self.state.status == "paused":
                self._wait_while_paused(events)
                continue
            # A status with nothing to do next cannot happen; stop rather than spin.
            self.log.note(self.clock.now(), f"nothing to do while {self.state.status}; stopping")
            events.append(StopRequested(now=self.clock.now()))
        return RunSummary(
            status=self.state.status,
            events=self.events,
            calls=self.calls,
            posts=tuple(self.posts),
            revisions=self.revision,
            persistence=describe_persistence(self.durability.state),
        )

    def _apply(self, event: Event, events: deque[Event]) -> None:
        before = self.state
        post = self._call_posts.pop(event, None) if isinstance(event, CallEnded) else None
        last = before.last_event_at
        if last is not None and event.now < last:
            # The wall clock was set back (A20): the core refuses time going backwards (A38),
            # so the event happens at the last instant it knows.
            event = attrs.evolve(event, now=last)
        self.state, effects = step(before, event)
        self.events += 1
        posts: list[NewPost] = []
        if post is not None:
            posts.append(post)
            self.posts.append((post.participant, post.engine))
        self._commit(posts, reason=type(event).__name__)
        follow: Event | None = None
        for effect in effects:
            handler = self.handlers[type(effect)]
            result = handler(effect)
            if result is not None:
                follow = result
        if follow is not None:
            events.append(follow)
        # A user message is posted as soon as the loop sees it, whatever the run is doing; the
        # core decides what it changes (A19, A30).
        for _command, arg in self.controls.take_all("say"):
            now = self.clock.now()
            self._user_message(arg, now)
            events.append(MessageArrived(now=now))

    def _drain_controls(self, events: deque[Event]) -> None:
        """Turn queued controls into events, once the events in hand are done."""
        if events:
            return
        if self._stop_at is not None and self.clock.now() >= self._stop_at:
            if self.state.status != "stopped":
                events.append(StopRequested(now=self.clock.now()))
            return
        while (item := self.controls.take()) is not None:
            command, arg = item
            now = self.clock.now()
            if command == "stop":
                events.append(StopRequested(now=now))
            elif command == "pause":
                events.append(PauseRequested(now=now))
            elif command == "resume":
                events.append(ResumeRequested(now=now))
            elif command == "say":
                self._user_message(arg, now)
                events.append(MessageArrived(now=now))
            else:
                self.log.note(now, f"unknown control {command!r} ignored")
            return

    def _wait_while_paused(self, events: deque[Event]) -> None:
        while not events:
            if self._stop_at is not None and self.clock.now() >= self._stop_at:
                events.append(StopRequested(now=self.clock.now()))
                return
            now = self.clock.now()
            self.store.heartbeat(now)
            # Wait a slice (controls are polled all the while), never past the end of the run.
            seconds = self.slice_seconds
            if self._stop_at is not None:
                seconds = min(seconds, max((self._stop_at - now).total_seconds(), 0.0))
            self.clock.wait(seconds, lambda: self.controls.has("stop", "resume", "say", "pause"))
            self._drain_controls(events)

    def _clock_factor(self) -> float:
        return float(getattr(self.clock, "factor", 1.0))

    # --- persistence (C3, B4-B9) -----------------------------------------------------------

    def _commit(self, posts: Sequence[NewPost], *, reason: str) -> PersistResult:
        self.revision += 1
        result = self.durability.persist_revision(
            self.revision,
            posts,
            to_json(self.state),
            identity=self.identity,
            now=self.clock.now(),
            reason=reason,
        )
        if result.outcome != "committed":
            self.log.note(
                self.clock.now(),
                f"revision {self.revision} not confirmed "
                f"({result.outcome}: {result.error or result.gate.reason})",
            )
        return result

    def _gate_open(self) -> bool:
        """B9: a turn starts only when the last writes are confirmed; else retry the write."""
        while True:
            gate = self.durability.gate(self.identity)
            if gate.may_start:
                return True
            if not gate.retry_write:
                self.log.note(self.clock.now(), f"turn deferred: {gate.reason} {gate.detail}")
            result = self.durability.retry(identity=self.identity, now=self.clock.now())
            if result.gate.may_start:
                return True
            if self.clock.wait(
                GATE_RETRY_SECONDS * self._clock_factor(),
                lambda: self.controls.has("stop", "pause"),
            ):
                return False

    # --- effect handlers ---------------------------------------------------------------------

    def _on_log(self, effect: Log) -> None:
        self.log.line(effect.at, effect.message)

    def _on_status(self, effect: StatusChanged) -> None:
        # The status itself is part of the scheduler state committed after this step.
        self.statuses.append(effect.status)

    def _on_sleep(self, effect: Sleep) -> Event | None:
        shown = [""]

        def heartbeat(now: datetime, target: datetime) -> None:
            self.store.heartbeat(now)
            left = (target - now).total_seconds()
            if self.countdown is not None and left >= COUNTDOWN_MIN_SECONDS:
                text = countdown_text(self._waiting_for(effect), target, now, self.config.zone)
                if text != shown[0]:
                    shown[0] = text
                    self.countdown.write("\r" + text + "   ")
                    self.countdown.flush()

        target = effect.until
        if self._stop_at is not None and self._stop_at < target:
            target = self._stop_at
        wake = sleep_until(
            target,
            clock=self.clock,
            slice_seconds=self.slice_seconds,
            heartbeat=heartbeat,
            stop=lambda: self.controls.has("stop"),
            pause=lambda: self.controls.has("pause"),
            message=lambda: self.controls.has("say"),
            wakes_on_message=effect.wakes_on_message,
        )
        if self.countdown is not None:
            self.countdown.write("\n")
        if wake.reason == "target" and target is not effect.until:
            return StopRequested(now=wake.at)
        if wake.reason == "target":
            return Woke(now=wake.at)
        if wake.reason == "message":
            for _command, arg in self.controls.take_all("say"):
                self._user_message(arg, wake.at)
            return MessageArrived(now=wake.at)
        return None  # stop/pause: the control is still queued and becomes the next event

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

    def _on_start_call(self, effect: StartCall) -> Event | None:
        member = self.members[effect.participant]
        if self._stop_at is not None and self.clock.now() >= self._stop_at:
            return None  # the run's time is up: the loop stops it before another call
        if self.controls.has("stop", "pause") or not self._gate_open():
            return None  # stop or pause arrived while waiting for the write
        prompt = self._prompt(effect, member)
        self.store.heartbeat(self.clock.now())
        self.calls += 1
        result = self.perform_call(effect, member, prompt)
        if result.cancelled:
            return None  # a stop or pause cut the call short; the control is still queued
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
        if text:  # committed with the CallEnded it belongs to; the key only has to be unique (C3)
            self._call_posts[ended] = NewPost(
                participant=effect.participant,
                engine=str(effect.engine),
                text=text,
                at=result.ended_at,
                key=f"r{self.revision + 1}:{effect.participant}",
            )
        return ended

    def _call_cli(self, effect: StartCall, member: Participant, prompt: str) -> CallResult:
        lanes = self.lanes
        if lanes is not None:
            argv = argv_for(member, effect.engine, prompt, self.templates)
            on_stdin = prompt_on_stdin(effect.engine.provider, self.templates)
            lanes.begin_call(
                member.id,
                engine=str(effect.engine),
                argv=argv,
                at=self.clock.now(),
                stdin_chars=len(prompt) if on_stdin else None,
            )
        result = call_participant(
            member,
            effect.engine,
            prompt,
            templates=self.templates,
            prompt_dir=self.prompt_dir,
            clock=self.clock,
            local_tz=self.config.zone,
            env=self.env,
            sink=lanes.sink(member.id) if lanes is not None else None,
            cancel=lambda: self.controls.has("stop", "pause"),
        )
        if lanes is not None:
            lanes.end_call(member.id, result)  # C8: the lane says how each call ended
        return result

    # --- the thread and prompts (B18-B20) --------------------------------------------------

    def _user_message(self, text: str, now: datetime) -> None:
        if not text.strip():
            return
        self.revision += 1
        self.durability.persist_revision(
            self.revision,
            [
                NewPost(
                    participant=USER,
                    engine="",
                    text=text.strip(),
                    at=now,
                    key=f"r{self.revision}:{USER}",
                )
            ],
            to_json(self.state),
            identity=self.identity,
            now=now,
            reason="user message",
        )

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
                committed_revision=self.revision,
                working_revision=self.revision,
            ),
            record,
        )
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
        self.store.save_turn_input(
            bind_input_context(f"{parent_id}:{member.id}", parent_text, context),
            now=self.clock.now(),
        )
        return context


def default_countdown() -> TextIO | None:
    """A countdown only when stderr is a terminal (C7)."""
    return sys.stderr if sys.stderr.isatty() else None


__all__ = [
    "CallPerformer",
    "Controls",
    "InputRecord",
    "LogSink",
    "RunSummary",
    "Runner",
    "StreamLog",
    "default_countdown",
    "restore_state",
]
