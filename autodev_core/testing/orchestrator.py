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
- each `Sleep` ends with one `Woke` at or after its deadline, stamped with the clock's time on
  waking (`World.sleep_until` may wake late, as a suspended machine does), a limit wait
  included (A19-A21, A23, C2);
- a no-new-input call (a retry, a hop) sends the prompt the call before it sent (B18, B19);
- the thread (`World.post`) holds each post of a reported call once, and no post more often than
  the CLI made it, crashes and all (A17);
- with `restart` set, a crash at any moment loses nothing: a new loop built from your store
  and the team folder as it is now (`team_edits`) holds `restore_state(config, saved())` and
  the owed turn is run again, once, by its owner.

Runs start on any day of 2026-2027 or around a DST edge of the team's zone (`run_starts`), so a
notice's clock time read in UTC instead of the run's zone fails. A failure is a
`HarnessFailure`: the rule, what was expected, what your loop did and the differing fields
(`field_diff`); `harness_settings()` is the profile to run with.

Your orchestrator implements `Orchestrator`: `state`, `handle(event)` and `saved()`. See
docs/testing-your-orchestrator.md for a complete example. This module imports hypothesis.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar, Protocol
from zoneinfo import ZoneInfo

import attrs
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from ..detection import classify_output
from ..scheduler.effects import Effect, Log, Sleep, StartCall
from ..scheduler.events import (
    EVENT_TYPES,
    CallEnded,
    Event,
    MessageArrived,
    PauseRequested,
    ResumeRequested,
    RunStarted,
    StopRequested,
    Woke,
    call_ended,
)
from ..scheduler.restore import restore_state
from ..scheduler.state import SchedulerConfig, SchedulerState, initial_state
from ..scheduler.step import TRANSITIONS, step
from .notices import NOTICE_CASES
from .scheduler_strategies import instants, participants, scheduler_configs

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

#: How late past its deadline the world's clock is when a sleep ends, in seconds (A20, C2): most
#: sleeps end on time; a machine suspended during the wait wakes minutes or hours after it.
OVERSLEEPS: tuple[int, ...] = (0, 0, 0, 1, 45, 19 * 60, 3 * 3600)
_OVERSLEEP_DRAW = st.sampled_from(OVERSLEEPS)
#: `cli_outputs(provider)` for each provider the world has drawn for.
_OUTPUTS: dict[str, st.SearchStrategy[CliOutput]] = {}


def _offset_changes(zone_name: str, year: int) -> tuple[datetime, ...]:
    """The instants (UTC, to the minute) at which `zone_name`'s offset from UTC changes in `year`
    (its DST edges; none for a zone without DST)."""
    zone = ZoneInfo(zone_name)
    edges: list[datetime] = []
    day = datetime(year, 1, 1, tzinfo=UTC)
    offset = day.astimezone(zone).utcoffset()
    while day.year == year:
        after = day + timedelta(days=1)
        if after.astimezone(zone).utcoffset() != offset:
            low, high = day, after  # the offset changes in (low, high]: halve to the minute
            while high - low > timedelta(minutes=1):
                mid = low + (high - low) / 2
                if mid.astimezone(zone).utcoffset() == offset:
                    low = mid
                else:
                    high = mid
            edges.append(high.replace(second=0, microsecond=0))
            offset = after.astimezone(zone).utcoffset()
        day = after
    return tuple(edges)


_EDGES: dict[str, tuple[datetime, ...]] = {}


def dst_edges(zone_name: str) -> tuple[datetime, ...]:
    """`zone_name`'s DST edges in 2026 and 2027, as UTC instants (empty for a zone without)."""
    if zone_name not in _EDGES:
        _EDGES[zone_name] = _offset_changes(zone_name, 2026) + _offset_changes(zone_name, 2027)
    return _EDGES[zone_name]


@st.composite
def run_starts(draw: st.DrawFn, zone: str = "UTC") -> datetime:
    """When a run starts (UTC): any second of 2026-2027, or within three hours of a DST edge of
    `zone`, so a loop that reads a notice's clock time in UTC where the run's zone is meant
    fails whatever the zone's offset that day (A6)."""
    edges = dst_edges(zone)
    near_edge: bool = draw(st.booleans()) if edges else False
    if near_edge:
        edge = draw(st.sampled_from(edges))
        return edge + timedelta(seconds=draw(st.integers(min_value=-3 * 3600,
                                                         max_value=3 * 3600)))
    return draw(instants())


_EDITS = st.sampled_from(("same", "same", "add", "remove", "edit"))


def _edit_team(draw: Callable[[st.SearchStrategy[Any]], Any],
               config: SchedulerConfig) -> SchedulerConfig:
    team = list(config.team)
    edit = draw(_EDITS)
    if edit == "remove" and len(team) > 1:
        del team[draw(st.integers(min_value=0, max_value=len(team) - 1))]
    elif edit == "add":
        ids = {p.id for p in team}
        new_id = next(f"p{n}" for n in range(len(team) + 1) if f"p{n}" not in ids)
        team.append(draw(participants(id=new_id, installed=config.installed)))
    elif edit == "edit":
        at = draw(st.integers(min_value=0, max_value=len(team) - 1))
        team[at] = draw(participants(id=team[at].id, installed=config.installed))
    else:
        return config
    return attrs.evolve(config, team=tuple(team))


@st.composite
def team_edits(draw: st.DrawFn, config: SchedulerConfig) -> SchedulerConfig:
    """The team folder as a restart reads it: as it was, or with one participant added, removed
    or edited (its CLI, model, chain or gate), the rest of the config unchanged."""
    return _edit_team(draw, config)


class World:
    """The harness's stand-ins for everything your loop touches outside the core, one interface
    for a synchronous loop and an asyncio one (the shell's `asyncio_harness.AsyncWorld`, where
    `call` and `sleep_until` are awaited):

    - `now`: the virtual clock's time;
    - `call(effect, prompt)`: run the stand-in CLI for a `StartCall`, sending `prompt` (the input
      your loop sends the CLI; the harness checks a retried turn sends its saved input, B19);
    - `sleep_until(t)`: sleep; returns the clock's time on waking, which may be past `t` (a
      machine suspended during the wait, A20);
    - `post(participant, text)`: append a post to the thread (the thread survives a crash);
    - `log(message)`: write a log line.

    `run_cli(call)` is the former name of `call` (deprecated; it still works)."""

    def __init__(self, start: datetime, draw: Callable[[st.SearchStrategy[Any]], Any]) -> None:
        self._now = start
        self.draw = draw
        self.calls: list[StartCall] = []
        self.outputs: list[CliOutput] = []
        #: The prompt sent with each call of `calls` (None: the loop passed none).
        self.prompts: list[str | None] = []
        #: When each call of `calls` returned (the clock after its duration).
        self.returned: list[datetime] = []
        self.logged: list[str] = []
        #: Each sleep: its deadline and the clock's time on waking.
        self.slept: list[tuple[datetime, datetime]] = []
        #: The thread: each post appended, as (participant, text).
        self.thread: list[tuple[str, str]] = []

    @property
    def now(self) -> datetime:
        """The virtual clock's time."""
        return self._now

    def advance(self, seconds: float) -> None:
        self._now += timedelta(seconds=seconds)

    def _output(self, call: StartCall, prompt: str | None) -> CliOutput:
        """Draw the output of `call` and record the call (shared by the sync and async worlds)."""
        if not isinstance(call, StartCall):
            raise TypeError(f"world.call takes the StartCall effect, not {call!r}")
        if prompt is not None and not isinstance(prompt, str):
            raise TypeError(f"the prompt is the text your loop sends the CLI, not {prompt!r}")
        provider = call.engine.provider
        if provider not in _OUTPUTS:  # built once: a strategy is validated on its first draw
            _OUTPUTS[provider] = cli_outputs(provider)
        output: CliOutput = self.draw(_OUTPUTS[provider])
        self.calls.append(call)
        self.outputs.append(output)
        self.prompts.append(prompt)
        return output

    def _oversleep(self) -> timedelta:
        return timedelta(seconds=self.draw(_OVERSLEEP_DRAW))

    def call(self, call: StartCall, prompt: str | None = None) -> CliOutput:
        """Run the CLI `call` asks for, sending `prompt`: a realistic output of its provider;
        the clock moves on by the call's duration."""
        output = self._output(call, prompt)
        self._now = max(self._now, call.at) + output.duration
        self.returned.append(self._now)
        return output

    def run_cli(self, call: StartCall, prompt: str | None = None) -> CliOutput:
        """Deprecated: the former name of `call` (one name for the sync and async worlds)."""
        return self.call(call, prompt)

    def sleep_until(self, until: datetime) -> datetime:
        """Sleep until `until` (at once, in virtual time); returns the time on waking: the
        deadline, or later when the machine was suspended (A20)."""
        self._now = max(self._now, until) + self._oversleep()
        self.slept.append((until, self._now))
        return self._now

    def post(self, participant: str, text: str) -> None:
        """Append `participant`'s post `text` to the thread."""
        self.thread.append((participant, text))

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


# --- failures an author can read ---------------------------------------------------------------


def _short(value: Any, width: int = 90) -> str:
    text = value.isoformat() if isinstance(value, datetime) else repr(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def field_diff(expected: Any, actual: Any, *, limit: int = 8, _prefix: str = "") -> list[str]:
    """The fields in which `actual` differs from `expected`, one short line each
    (`name: expected …, your loop …`), nested attrs values by their own fields; the values
    themselves when they are not attrs instances of one class."""
    if type(expected) is not type(actual) or not attrs.has(type(expected)):
        return [f"{_prefix or 'value'}: expected {_short(expected)}, your loop "
                f"{_short(actual)}"]
    lines: list[str] = []
    for field in attrs.fields(type(expected)):
        if not field.eq:
            continue
        want, got = getattr(expected, field.name), getattr(actual, field.name)
        if want == got:
            continue
        name = f"{_prefix}{field.name}"
        if attrs.has(type(want)) and type(want) is type(got) and _prefix.count(".") < 2:
            lines += field_diff(want, got, limit=limit, _prefix=name + ".")
        else:
            lines.append(f"{name}: expected {_short(want)}, your loop {_short(got)}")
    if len(lines) > limit:
        lines = [*lines[:limit], f"… and {len(lines) - limit} more"]
    return lines


class HarnessFailure(AssertionError):
    """What the harness caught in your loop: `rule` (the SPEC rule or the contract's clause),
    `what` (one line), `expected` and `did` (what your loop did), and `diff` (the differing
    fields, one line each). `str()` is all of it, short."""

    def __init__(self, rule: str, what: str, expected: str, did: str,
                 diff: Sequence[str] = ()) -> None:
        self.rule, self.what, self.expected, self.did = rule, what, expected, did
        self.diff = tuple(diff)
        lines = [what, f"  rule: {rule}", f"  expected: {expected}", f"  your loop: {did}"]
        if self.diff:
            lines.append("  differs:")
            lines += [f"    {line}" for line in self.diff]
        super().__init__("\n".join(lines))


def _first_difference(expected: Sequence[Any], got: Sequence[Any]) -> str:
    for index, (want, have) in enumerate(zip(expected, got, strict=False)):
        if want != have:
            return f"#{index + 1}: expected {_short(want)}, your loop {_short(have)}"
    if len(got) < len(expected):
        return f"#{len(got) + 1}: expected {_short(expected[len(got)])}, your loop none"
    return f"#{len(expected) + 1}: expected none, your loop {_short(got[len(expected)])}"


# --- the machine ---------------------------------------------------------------------------------


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
    #: the config read from the team folder now (`team_edits`: maybe a participant added,
    #: removed or edited) and the world, a new loop that loaded its store through
    #: `restore_state(config, saved)`. None (the default): no crash rule.
    restart: ClassVar[Callable[[Orchestrator, SchedulerConfig, World], Orchestrator] | None] = (
        None
    )
    #: Whether the team may change across a restart (as a restart from the team folder would
    #: read it); False keeps the config a restart is given the same.
    edits_team: ClassVar[bool] = True
    #: Whether your loop appends each post to the thread (`world.post`); the harness then checks
    #: every post a reported call made is there exactly once, crashes and all. False: your loop
    #: keeps no thread (a post is still never to be appended twice).
    posts_to_thread: ClassVar[bool] = True

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
        self.inputs_checked = 0  # the world's calls whose input was checked
        self.last_prompt: str | None = None  # the input the last call sent
        self.reported_posts: Counter[tuple[str, str]] = Counter()

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
        slept = len(self.w.slept)
        try:
            follow = list(self.o.handle(event))
        except AssertionError:
            raise
        except Exception as error:
            raise HarnessFailure(
                "the contract: handle carries out every effect of the event it is given",
                f"your loop raised {type(error).__name__} handling {type(event).__name__}",
                "the events the effects led to", f"{type(error).__name__}: {error}",
            ) from error
        self._check_calls()
        for later in follow:
            if not isinstance(later, EVENT_TYPES):
                raise HarnessFailure(
                    "the contract: handle returns events", "handle returned a non-event",
                    "the events the effects led to (CallEnded, Woke, ...)", _short(later))
            if isinstance(later, CallEnded):
                self._check_call_ended(later)
        self._check_wait(effects, follow, slept)
        self._check_inputs()
        self.pending.extend(follow)
        self._check(effects)
        self._check_thread()

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
        if self.checked_calls >= len(self.w.calls):
            raise HarnessFailure(
                "the contract: one CallEnded per call run through the world",
                "your loop reported the end of a call it never ran through world.call",
                "a CallEnded only after world.call", _short(reported))
        index, output = self.checked_calls, self.w.outputs[self.checked_calls]
        self.checked_calls += 1
        expected = self.expected_call_ended(index)
        if reported != expected:
            raise HarnessFailure(
                "A2-A6, A26, A28, A31, A32: a call is reported as its output reads "
                "(classify_output in the run's zone, call_ended), stamped when it returned",
                f"your loop reported the call as the core would not: the CLI printed a "
                f"{output.kind!r} output",
                _short(expected), _short(reported), field_diff(expected, reported))
        if output.post:
            self.reported_posts[(self.w.calls[index].participant, output.post)] += 1

    def _check_wait(self, effects: tuple[Effect, ...], follow: list[Event], slept: int) -> None:
        """A `Sleep` ends with one `Woke`, at or after its deadline, stamped with the clock."""
        sleeps = [e for e in effects if isinstance(e, Sleep)]
        wakes = [e for e in follow if isinstance(e, Woke)]
        if not sleeps:
            if wakes:
                raise HarnessFailure(
                    "A19, C2: a wake ends a wait", "your loop reported a wake without a wait",
                    "no Woke (the step asked for no Sleep)", _short(wakes[0]))
            return
        sleep = sleeps[-1]
        if len(wakes) != 1:
            raise HarnessFailure(
                "A19-A23, C2: a wait ends with the wake (then limits whose reset has passed are "
                "lifted)",
                f"your loop did not report the end of a {sleep.status} wait",
                f"one Woke at or after {sleep.until.isoformat()}",
                f"returned {_short(follow)}" if wakes else
                "no Woke: the run stays waiting for ever and no limit is ever lifted")
        woke = wakes[0]
        if woke.now < sleep.until:
            raise HarnessFailure(
                "A19, C2: a wait lasts until its deadline (a stop or a pause ends it, as events "
                "of their own)",
                f"your loop woke from a {sleep.status} wait before its deadline",
                f"a Woke at or after {sleep.until.isoformat()}",
                f"Woke(now={woke.now.isoformat()}), {sleep.until - woke.now} early: it went on "
                "without sleeping through world.sleep_until")
        clock = self.w.slept[-1][1] if len(self.w.slept) > slept else self.w.now
        if woke.now != clock:
            raise HarnessFailure(
                "A20, A21: a wake is stamped with the clock's time on waking (a suspended "
                "machine wakes late; the time asleep is not charged as call time)",
                "your loop stamped its wake with another time than the clock's",
                f"Woke(now={clock.isoformat()}) (what world.sleep_until returned)",
                f"Woke(now={woke.now.isoformat()})"
                + (" — the deadline" if woke.now == sleep.until else ""))

    def _check_inputs(self) -> None:
        """B18, B19: a no-new-input turn sends the input its last attempt sent."""
        while self.inputs_checked < len(self.w.calls):
            index = self.inputs_checked
            self.inputs_checked += 1
            call, prompt = self.w.calls[index], self.w.prompts[index]
            if prompt is None:
                continue
            if (call.turn_kind == "no-new-input" and self.last_prompt is not None
                    and prompt != self.last_prompt):
                raise HarnessFailure(
                    "B18, B19: a no-new-input turn (a retry, a hop) reapplies the input saved "
                    "with its first attempt",
                    f"your loop sent {call.participant}'s retried turn a fresh input",
                    _short(self.last_prompt), _short(prompt))
            self.last_prompt = prompt

    def _check_thread(self) -> None:
        """Each post a call made is appended at most once, and each reported one at least once."""
        made = Counter(
            (call.participant, output.post)
            for call, output in zip(self.w.calls, self.w.outputs, strict=True) if output.post
        )
        posted = Counter(self.w.thread)
        extra = posted - made
        if extra:
            (who, text), _ = next(iter(extra.items()))
            raise HarnessFailure(
                "A17, C3: the thread holds each post once, crashes and all",
                f"your loop appended a post of {who} more often than the CLI made it",
                f"{made[(who, text)]} time(s): {_short(text, 80)}",
                f"{posted[(who, text)]} time(s)")
        missing = self.reported_posts - posted
        if type(self).posts_to_thread and missing:
            (who, text), _ = next(iter(missing.items()))
            raise HarnessFailure(
                "A17, C3: a post stays: every post of a reported call is in the thread",
                f"your loop reported a post of {who} that is not in the thread",
                f"world.post({who!r}, {_short(text, 80)})", "never appended it")

    def _legal(self, event_type: object) -> bool:
        return self.reference is not None and (self.reference.status, event_type) in TRANSITIONS

    @initialize(data=st.data())
    def start(self, data: st.DataObject) -> None:
        config = data.draw(type(self).configs, label="config")
        self.config = config
        start = data.draw(run_starts(config.timezone), label="start")
        self.world = self.new_world(start, data.draw)
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
        through `restart` with the team folder as it is now: it must hold
        `restore_state(config, saved())`, and the owed turn runs again, once, on its owner (A33;
        the call lists are checked as ever)."""
        restart = type(self).restart
        assert self.config is not None and restart is not None
        saved = self.o.saved()
        if type(self).edits_team:
            self.config = _edit_team(data.draw, self.config)  # = team_edits(config)
        self.pending.clear()
        self.checked_calls = len(self.w.calls)  # a lost call's end is never reported
        self.orchestrator = restart(self.o, self.config, self.w)
        self.reference = restore_state(self.config, saved)
        if self.o.state != self.reference:
            raise HarnessFailure(
                "A33, the contract: a restart loads the store through restore_state, with the "
                "team the team folder holds now",
                "after a restart your loop's state is not restore_state(config, saved()): load "
                "your store through restore_state(config, saved), with the config restart is "
                "given, which keeps the owed turn",
                "restore_state(config, saved())", "another state",
                field_diff(self.reference, self.o.state))
        self._check_thread()
        if self.reference.status == "stopped":
            self._feed(data, RunStarted(now=self.w.now))

    def _check_calls(self) -> None:
        ran = [(c.participant, c.engine) for c in self.w.calls]
        owed = [(c.participant, c.engine) for c in self.expected_calls]
        if ran != owed:
            raise HarnessFailure(
                "A9-A15, A33: every StartCall runs one CLI call on its participant and engine",
                "every StartCall runs one CLI call on its participant and engine, and nothing "
                "else",
                f"{len(owed)} call(s)", f"{len(ran)} call(s)",
                [f"call {_first_difference(owed, ran)}"])

    def _check(self, effects: tuple[Effect, ...]) -> None:
        o, w = self.o, self.w
        if o.state != self.reference:
            raise HarnessFailure(
                "the contract: handle feeds step exactly the event it is given, once",
                "your loop's state is not the core's: did it feed step exactly the events given?",
                "the state step returned", "another state", field_diff(self.reference, o.state))
        if w.logged != self.expected_logs:
            raise HarnessFailure(
                "A1-A43's log lines: every Log effect is written, in order",
                "every Log line is written, in order",
                f"{len(self.expected_logs)} line(s)", f"{len(w.logged)} line(s)",
                [f"line {_first_difference(self.expected_logs, w.logged)}"])
        at_rest = o.state.status in ("stopped", "paused")
        if type(self).saved_when == "always" or at_rest:
            stored = o.saved()
            if stored != o.state:
                raise HarnessFailure(
                    "C3, the contract: the store holds the state after each step",
                    f"your store does not hold the state after {o.state.status!r}: a crash now "
                    "would lose the last step",
                    "saved() == state", "saved() is None" if stored is None else "an older state",
                    [] if stored is None else field_diff(o.state, stored))

    @invariant()
    def time_never_goes_backwards(self) -> None:
        if self.reference is not None and self.reference.last_event_at is not None:
            assert self.w.now >= self.reference.last_event_at


def harness_settings(*, derandomize: bool = True, max_examples: int = 100) -> settings:
    """The settings to run an orchestrator machine with: derandomized by default (the same draw
    on every run, as CI wants), shrinking on (a failure is shown at its smallest), the
    `@reproduce_failure(...)` line that replays a failure printed with it, no database and no
    deadline (virtual time, real CLIs' outputs). Pass `derandomize=False` and decorate the
    machine with `hypothesis.seed(n)` to try another draw; `@seed(n)` replays it."""
    return settings(max_examples=max_examples, derandomize=derandomize, database=None,
                    deadline=None, stateful_step_count=50, print_blob=True,
                    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


__all__ = [
    "OUTPUT_KINDS",
    "OVERSLEEPS",
    "RESET_FORMS",
    "CliOutput",
    "HarnessFailure",
    "Orchestrator",
    "OrchestratorMachine",
    "World",
    "cli_outputs",
    "dst_edges",
    "field_diff",
    "harness_settings",
    "notice_outputs",
    "run_starts",
    "team_edits",
]
