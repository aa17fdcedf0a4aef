"""A harness for YOUR orchestrator's loop (docs/testing-your-orchestrator.md), as zarr's store
tests take yours.

`SchedulerMachine` checks autodev's core; `OrchestratorMachine` checks the code you wrap around
it: the effect handler that runs CLIs, sleeps, writes logs and saves the state. Subclass it and
set `make` to build your orchestrator on the harness's `World` (a virtual clock, stand-in CLIs
answering with real CLI outputs, and a log); Hypothesis then drives random runs through your
loop — calls that post, hit limits with every reset form, lose the network, are not logged in,
crash, time out or print long model text — with user messages, pauses, resumes, stops and
restarts in between, and checks after every step that:

- your loop fed `step` exactly the events it was given, in order: its state is the core's;
- every `StartCall` ran one CLI call, on that participant and engine, and nothing else did;
- every `Log` line was written, in order, with the SPEC's words;
- your store holds the state after each event (`saved()`), so a crash loses nothing —
  including the last write before a stop;
- each `CallEnded` your loop reports says what the CLI output it was handed says (read by the
  core's `classify_output` and `call_ended`: kind, notice, post or none, exit code, timeout),
  stamped when the call returned;
- with `restart` set, a crash at any moment loses nothing: a new loop built from your store
  holds `restore_state(config, saved())` and the owed turn is run again, once, by its owner.

Your orchestrator implements `Orchestrator`: `state`, `handle(event)` and `saved()`. See
docs/testing-your-orchestrator.md for a complete example. This module imports hypothesis.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar, Protocol

import attrs
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from ..detection import classify_output
from ..scheduler.effects import Effect, Log, StartCall
from ..scheduler.events import (
    EVENT_TYPES,
    CallEnded,
    Event,
    MessageArrived,
    PauseRequested,
    ResumeRequested,
    RunStarted,
    StopRequested,
    call_ended,
)
from ..scheduler.restore import restore_state
from ..scheduler.state import SchedulerConfig, SchedulerState, initial_state
from ..scheduler.step import TRANSITIONS, step
from .notices import NOTICE_CASES
from .scheduler_strategies import scheduler_configs

#: What `cli_outputs` can draw: a post, each kind of notice, and plain failures (A28, A31).
OUTPUT_KINDS: tuple[str, ...] = (
    "post", "limit", "network", "login", "exit", "timeout", "empty", "long-text",
)
#: The reset forms of a limit notice (A6): epoch, relative, clock time, date, none readable.
RESET_FORMS: tuple[str, ...] = ("epoch", "relative", "clock", "date", "none")


@attrs.frozen
class CliOutput:
    """What one stand-in CLI call printed: `stdout`, `stderr`, the `exit_code` (None when the
    call timed out), the `post` it made (None: none), and how long it took. `kind` is what the
    harness meant it to be, for your assertions; classify the output yourself, as your loop
    does with real output."""

    stdout: str = ""
    stderr: str = ""
    exit_code: int | None = 0
    post: str | None = None
    duration: timedelta = timedelta(seconds=30)
    timed_out: bool = False
    kind: str = "post"


def notice_outputs(
    provider: str, kind: str = "limit", reset_form: str | None = None
) -> st.SearchStrategy[CliOutput]:
    """Real notices of `provider` from the project's corpus: `kind` is `limit`, `network` or
    `login` (claude only, A32); for a limit, `reset_form` narrows to one of `RESET_FORMS`."""
    cases = [
        c for c in NOTICE_CASES
        if c[1] == provider and c[2] == kind and (reset_form is None or c[3] == reset_form)
    ]
    if not cases:
        raise ValueError(f"no {kind} notice of {provider} with reset form {reset_form!r}")
    return st.sampled_from(cases).map(
        lambda c: CliOutput(stdout=c[4], stderr=c[5], exit_code=c[6] if c[6] is not None else 1,
                            kind=kind)
    )


#: How a model's report quotes a notice it saw (A5): in its own prose, as plain stdout, or that
#: prose carried in the CLI's own answer event (claude's `result`, codex's `agent_message`).
LONG_TEXT_FORMS: tuple[str, ...] = ("prose", "answer-event")


def _quoted(case: tuple[Any, ...]) -> str:
    """A notice as a report quotes it: its words on one line. A stream-json notice is quoted
    by what it says (the `result` or `message` text inside its events), never as the events."""
    raw = (case[4] or case[5]).strip()
    said: list[str] = []
    for line in raw.split("\n"):
        line = line.strip()
        if not line.startswith("{"):
            said.append(line)
            continue
        try:
            event = json.loads(line)
        except ValueError:
            said.append(line)
            continue
        found = _said_in(event)
        if found:
            said.append(found)
    return " ".join(" ".join(said).split())


def _said_in(value: Any) -> str:
    """The first human sentence an event holds (`result`, `message`, `text`), else ''."""
    if isinstance(value, dict):
        for key in ("result", "message", "text"):
            if isinstance(value.get(key), str) and value[key].strip():
                return str(value[key])
        for item in value.values():
            found = _said_in(item)
            if found:
                return found
    return ""


def _answer_event(provider: str, text: str) -> str:
    """`text` as the CLI's own successful answer on stdout (the shell's stream-json modes)."""
    if provider == "claude":
        events = [
            {"type": "system", "subtype": "init", "session_id": "s"},
            {"type": "result", "subtype": "success", "is_error": False, "result": text,
             "session_id": "s"},
        ]
    else:
        events = [
            {"type": "thread.started", "thread_id": "t"}, {"type": "turn.started"},
            {"type": "item.completed", "item": {"id": "item_0", "type": "agent_message",
                                                "text": text}},
            {"type": "turn.completed", "usage": {"input_tokens": 1, "output_tokens": 1}},
        ]
    return "".join(json.dumps(event, ensure_ascii=False) + "\n" for event in events)


#: The words of a short answer: none is a word of any notice, so no answer reads as one.
POST_WORDS: tuple[str, ...] = (
    "Reviewed", "the", "diff", "and", "fixed", "two", "typos", "tests", "pass", "merged",
    "#12", "see", "notes", "done", "café", "naïve", "日本語", "Ελληνικά", "ok", "LGTM",
)


def _short_posts() -> st.SearchStrategy[str]:
    """A short answer as plain stdout (A5: read as model text, so it must not be a notice):
    harmless words between odd separators (spaces, punctuation, symbols, emoji, controls),
    never starting with `{` (a structured event). The post is the text trimmed, as
    `extract_post` reads it. Text drawn freely is not safe here: Hypothesis mines string
    constants from the code it runs, the reader's own notice phrases among them."""
    separators = st.text(st.characters(categories=["Zs", "Pd", "Po", "Sm", "So", "Cc"],
                                       exclude_characters="{"), min_size=1, max_size=3)
    return st.lists(st.tuples(st.sampled_from(POST_WORDS), separators), min_size=1,
                    max_size=8).map(lambda parts: "".join(w + sep for w, sep in parts))


@st.composite
def _long_text(draw: st.DrawFn, provider: str) -> CliOutput:
    """A model's report over 300 characters quoting a notice: a post, never a limit (A5).

    The notice is quoted inside the report's own prose, on one line, so no line of stdout is
    the CLI's structured event or a notice standing alone; for the stream-json CLIs (claude,
    codex) the report may come inside the CLI's answer event, where A5's 300 characters apply
    to the answer's text."""
    case = draw(st.sampled_from([c for c in NOTICE_CASES if c[1] == provider and c[2] == "limit"]))
    padding = draw(st.integers(min_value=301, max_value=1200))
    text = (f"Summary of the review. The CLI once printed: {_quoted(case)} "
            + "All tests pass. " * (padding // 16 + 1)).strip()
    forms = LONG_TEXT_FORMS if provider in ("claude", "codex") else ("prose",)
    if draw(st.sampled_from(forms)) == "answer-event":
        return CliOutput(stdout=_answer_event(provider, text), post=text, kind="long-text")
    return CliOutput(stdout=text, post=text, kind="long-text")


def cli_outputs(
    provider: str, kinds: Sequence[str] = OUTPUT_KINDS
) -> st.SearchStrategy[CliOutput]:
    """Realistic outputs of `provider`'s CLI, each kind in `kinds`: a post, a usage limit with
    each reset form (A2-A6), a network error (A26), claude's login error (A32), a crash, a
    timeout, an empty turn (A28, A31), or model text over 300 characters (A5)."""
    options: list[st.SearchStrategy[CliOutput]] = []
    for kind in kinds:
        if kind == "post":
            options.append(_short_posts().map(
                lambda t: CliOutput(stdout=t, post=t.strip(), kind="post")))
        elif kind == "limit":
            forms = sorted({c[3] for c in NOTICE_CASES if c[1] == provider and c[2] == "limit"
                            and c[3] is not None})
            options.extend(notice_outputs(provider, "limit", form) for form in forms)
        elif kind in ("network", "login"):
            if any(c[1] == provider and c[2] == kind for c in NOTICE_CASES):
                options.append(notice_outputs(provider, kind))
        elif kind == "exit":
            options.append(st.integers(min_value=1, max_value=255).map(
                lambda code: CliOutput(stderr="panic: something broke", exit_code=code,
                                       kind="exit")))
        elif kind == "timeout":
            options.append(st.just(CliOutput(exit_code=None, timed_out=True, kind="timeout",
                                             duration=timedelta(minutes=10))))
        elif kind == "empty":
            options.append(st.just(CliOutput(kind="empty")))
        elif kind == "long-text":
            options.append(_long_text(provider))
        else:
            raise ValueError(f"unknown output kind {kind!r} (one of {', '.join(OUTPUT_KINDS)})")
    if not options:  # e.g. only `login` for codex, which has no login check (A32)
        raise ValueError(f"{provider} has no output of the kinds {', '.join(kinds)}")
    return st.one_of(options)


#: The user's controls, by the name the `user` rule draws.
_CONTROLS: dict[str, Callable[..., Event]] = {
    "message": MessageArrived, "pause": PauseRequested, "resume": ResumeRequested,
    "stop": StopRequested, "start": RunStarted,
}


class World:
    """The harness's stand-ins for everything your loop touches outside the core: a virtual
    clock (`now`, `sleep_until`), the CLIs (`run_cli`) and the log (`log`)."""

    def __init__(self, start: datetime, draw: Callable[[st.SearchStrategy[Any]], Any]) -> None:
        self._now = start
        self.draw = draw
        self.calls: list[StartCall] = []
        self.outputs: list[CliOutput] = []
        #: When each call of `calls` returned (the clock after its duration).
        self.returned: list[datetime] = []
        self.logged: list[str] = []

    @property
    def now(self) -> datetime:
        """The virtual clock's time."""
        return self._now

    def advance(self, seconds: float) -> None:
        self._now += timedelta(seconds=seconds)

    def sleep_until(self, until: datetime) -> datetime:
        """Sleep until `until` (at once, in virtual time); returns the time on waking."""
        self._now = max(self._now, until)
        return self._now

    def run_cli(self, call: StartCall) -> CliOutput:
        """Run the CLI `call` asks for: a realistic output of its provider; the clock moves on
        by the call's duration."""
        output: CliOutput = self.draw(cli_outputs(call.engine.provider))
        self.calls.append(call)
        self.outputs.append(output)
        self._now = max(self._now, call.at) + output.duration
        self.returned.append(self._now)
        return output

    def log(self, message: str) -> None:
        self.logged.append(message)


class Orchestrator(Protocol):
    """Your loop, as the harness drives it."""

    @property
    def state(self) -> SchedulerState:
        """The scheduler state your loop holds now."""

    def handle(self, event: Event) -> Sequence[Event]:
        """Feed `event` to `step` once, carry out its effects (through the `World`), save what
        you save, and return the events the effects led to (a `CallEnded`, a `Woke`, a
        `MessageArrived`), not yet fed."""

    def saved(self) -> SchedulerState | None:
        """What your store holds now: the state a restart after a crash would load."""


class OrchestratorMachine(RuleBasedStateMachine):
    """Random runs through YOUR loop. Subclass, set `make`, and use `.TestCase`:

        class TestMine(OrchestratorMachine):
            make = staticmethod(lambda config, world: MyOrchestrator(config, world))
        TestMyLoop = TestMine.TestCase
    """

    #: Build your orchestrator for `config`, on the harness's `world`.
    make: ClassVar[Callable[[SchedulerConfig, World], Orchestrator]]
    #: The teams to try (any strategy of `SchedulerConfig`).
    configs: ClassVar[st.SearchStrategy[SchedulerConfig]] = scheduler_configs(max_team=3)
    #: When your store must hold the state: "always" (after every event) or "at-rest" (only
    #: once the run is stopped or paused).
    saved_when: ClassVar[str] = "always"
    #: How your loop comes back after a crash: given the crashed loop (whose store survives),
    #: the config and the world, a new loop that loaded its store through
    #: `restore_state(config, saved)`. None (the default): no crash rule.
    restart: ClassVar[Callable[[Orchestrator, SchedulerConfig, World], Orchestrator] | None] = (
        None
    )

    def __init__(self) -> None:
        super().__init__()
        self.orchestrator: Orchestrator | None = None
        self.world: World | None = None
        self.reference: SchedulerState | None = None
        self.pending: list[Event] = []
        self.expected_calls: list[StartCall] = []
        self.expected_logs: list[str] = []
        self.config: SchedulerConfig | None = None
        self.checked_calls = 0  # the world's calls whose CallEnded was checked or lost

    def new_world(
        self, start: datetime, draw: Callable[[st.SearchStrategy[Any]], Any]
    ) -> World:
        """The world of one example (a hook: the asyncio harness of the shell puts an asyncio
        event loop on a virtual clock behind it)."""
        return World(start, draw)

    @property
    def o(self) -> Orchestrator:
        assert self.orchestrator is not None
        return self.orchestrator

    @property
    def w(self) -> World:
        assert self.world is not None
        return self.world

    def _feed(self, data: st.DataObject, event: Event) -> None:
        """Hand `event` to your loop, and replay it on the core beside it."""
        assert self.reference is not None
        self.w.draw = data.draw
        self.reference, effects = step(self.reference, event)
        self.expected_calls += [e for e in effects if isinstance(e, StartCall)]
        self.expected_logs += [e.message for e in effects if isinstance(e, Log)]
        follow = list(self.o.handle(event))
        for later in follow:
            assert isinstance(later, EVENT_TYPES), f"handle returned {later!r}, not an event"
            if isinstance(later, CallEnded):
                self._check_call_ended(later)
        self.pending.extend(follow)
        self._check(effects)

    def expected_call_ended(self, index: int) -> CallEnded:
        """What the world's call `index` must be reported as: its output read by the core."""
        assert self.reference is not None
        call, output, at = self.w.calls[index], self.w.outputs[index], self.w.returned[index]
        seen = classify_output(call.engine.provider, stdout=output.stdout, stderr=output.stderr,
                               exit_code=output.exit_code, now=at,
                               local_tz=self.reference.config.zone)
        return call_ended(at, call.participant, call.engine, seen, posted=bool(output.post),
                          exit_code=output.exit_code, timed_out=output.timed_out)

    def _check_call_ended(self, reported: CallEnded) -> None:
        assert self.checked_calls < len(self.w.calls), (
            f"your loop reported {reported!r} for a call it never ran through world.run_cli")
        index, output = self.checked_calls, self.w.outputs[self.checked_calls]
        self.checked_calls += 1
        expected = self.expected_call_ended(index)
        assert reported == expected, (
            f"your loop reported the call as {reported!r}, but the CLI printed a {output.kind!r} "
            f"output ({output!r}) that the core reads as {expected!r}: report what the CLI "
            "said (its post, exit code, timeout), stamped when the call returned"
        )

    def _legal(self, event_type: object) -> bool:
        return self.reference is not None and (self.reference.status, event_type) in TRANSITIONS

    @initialize(data=st.data())
    def start(self, data: st.DataObject) -> None:
        config = data.draw(type(self).configs, label="config")
        self.config = config
        self.world = self.new_world(datetime(2026, 12, 1, 9, tzinfo=UTC), data.draw)
        self.orchestrator = type(self).make(config, self.world)
        self.reference = initial_state(config)
        self._feed(data, RunStarted(now=self.w.now))

    @precondition(lambda self: bool(self.pending))
    @rule(data=st.data())
    def proceed(self, data: st.DataObject) -> None:
        """Your loop goes on: the next event its effects led to."""
        self._feed(data, self.pending.pop(0))

    @precondition(lambda self: self.reference is not None)
    @rule(data=st.data(), kind=st.sampled_from(("message", "pause", "resume", "stop", "start")))
    def user(self, data: st.DataObject, kind: str) -> None:
        """The user speaks, pauses, resumes, stops or starts the run again."""
        event_type: Callable[..., Event] = _CONTROLS[kind]
        if self._legal(event_type):
            # Between two events of the loop: at the instant of the last one fed (the events
            # still pending were stamped no earlier, so time never goes backwards, A38).
            assert self.reference is not None
            now = self.reference.last_event_at or self.w.now
            self._feed(data, event_type(now=now))

    @precondition(lambda self: self.reference is not None and type(self).restart is not None)
    @rule(data=st.data())
    def crash_and_restart(self, data: st.DataObject) -> None:
        """Your process dies between two events (what was in flight is lost) and comes back
        through `restart`: it must hold `restore_state(config, saved())`, and the owed turn
        runs again, once, on its owner (A33; the call lists are checked as ever)."""
        restart = type(self).restart
        assert self.config is not None and restart is not None
        saved = self.o.saved()
        self.pending.clear()
        self.checked_calls = len(self.w.calls)  # a lost call's end is never reported
        self.orchestrator = restart(self.o, self.config, self.w)
        self.reference = restore_state(self.config, saved)
        assert self.o.state == self.reference, (
            "after a restart your loop's state is not restore_state(config, saved()): "
            "load your store through restore_state, which keeps the owed turn"
        )
        if self.reference.status == "stopped":
            self._feed(data, RunStarted(now=self.w.now))

    def _check(self, effects: tuple[Effect, ...]) -> None:
        o, w = self.o, self.w
        assert o.state == self.reference, (
            "your loop's state is not the core's: did it feed step exactly the events given?"
        )
        assert [(c.participant, c.engine) for c in w.calls] == [
            (c.participant, c.engine) for c in self.expected_calls
        ], "every StartCall runs one CLI call on its participant and engine, and nothing else"
        assert w.logged == self.expected_logs, "every Log line is written, in order"
        at_rest = o.state.status in ("stopped", "paused")
        if type(self).saved_when == "always" or at_rest:
            assert o.saved() == o.state, (
                f"your store does not hold the state after {o.state.status!r}: a crash now "
                "would lose the last step"
            )

    @invariant()
    def time_never_goes_backwards(self) -> None:
        if self.reference is not None and self.reference.last_event_at is not None:
            assert self.w.now >= self.reference.last_event_at


__all__ = [
    "OUTPUT_KINDS",
    "RESET_FORMS",
    "CliOutput",
    "Orchestrator",
    "OrchestratorMachine",
    "World",
    "cli_outputs",
    "notice_outputs",
]
