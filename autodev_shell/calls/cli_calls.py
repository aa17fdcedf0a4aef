"""Running a participant's CLI for one `StartCall` (SPEC C1, C8): the lane that shows it, the
adapter that runs it, and the record of its process group that outlives a kill -9 of the daemon
(C1).

`CliCalls` is the part of `Runner` (autodev_shell/runner.py) that spawns: `call` is the loop's
default `perform_call`; `cancel` is the loop's own check, asked several times a second while the
call runs (a stop or pause cuts it short; a user message is posted at once).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping
from datetime import tzinfo
from pathlib import Path
from typing import TYPE_CHECKING

from autodev_core.participant import Participant

from ..clock import Clock
from ..store.run_store import RunStore, StoreError
from .argv import CommandTemplate, argv_for, prompt_on_stdin
from .environments import CallEnvironments
from .lanes import Lanes
from .processes import end_group, start_ticks
from .run import CallResult, call_participant

if TYPE_CHECKING:
    from autodev_core.scheduler import StartCall

    from ..loop.logsink import LogSink


class CliCalls:
    """The CLI calls of one run's daemon (see module doc)."""

    def __init__(self, *, store: RunStore, clock: Clock, log: LogSink, zone: tzinfo,
                 templates: Mapping[str, CommandTemplate], env: Mapping[str, str] | None,
                 lanes: Lanes | None, prompt_dir: Path | None,
                 cancel: Callable[[], bool], cwd: Path | None = None,
                 environments: CallEnvironments | None = None) -> None:
        self.store = store
        self.clock = clock
        self.log = log
        #: The zone the CLIs keep their clocks in: their output's clock times are read in it.
        self.zone = zone
        self.templates = templates
        self.env = env
        self.lanes = lanes
        #: Where an argv prompt too long for one argument is written for its call (private).
        self.prompt_dir = prompt_dir
        self.cancel = cancel
        #: The project folder every call runs in (`project:`; None: the daemon's own folder).
        self.cwd = cwd
        #: `env:` of the team, its accounts and participants (docs/participants.md, Accounts).
        self.environments = environments

    def call(self, effect: StartCall, member: Participant, prompt: str) -> CallResult:
        """Run `member`'s CLI on `effect.engine` with `prompt` and say how it ended."""
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
            local_tz=self.zone,
            env=self._env(member, effect),
            sink=lanes.sink(member.id) if lanes is not None else None,
            cancel=self.cancel,
            started=self._call_started,
            cwd=self.cwd,
        )
        self._call_over()
        if lanes is not None:
            lanes.end_call(member.id, result)  # C8: the lane says how each call ended
        return result

    def _env(self, member: Participant, effect: StartCall) -> Mapping[str, str] | None:
        """The call's environment: the daemon's, with the `env:` that applies over it."""
        found = self.environments
        if found is None or found.empty:
            return self.env
        base = os.environ if self.env is None else self.env
        return found.for_call(base, member.id, effect.engine)

    def _call_started(self, pid: int) -> None:
        """Record the call's process group (its pid, C1) so a daemon that follows a kill -9
        of this one can end it before starting the owed turn again (C1)."""
        try:
            self.store.record_call_process(pid, pid, start_ticks(pid), now=self.clock.now())
        except StoreError as exc:  # the CLI still dies with this daemon (PR_SET_PDEATHSIG)
            self.log.note(self.clock.now(), f"the call's process could not be recorded: {exc}")

    def _call_over(self) -> None:
        # A stale record names a finished process: the next daemon finds it gone.
        with contextlib.suppress(StoreError):
            self.store.clear_call_process()

    def end_previous_call(self) -> None:
        """A daemon killed with -9 during a call may have left that call's process group
        running (the CLI's own children outlive it): end it, once it is proved ours, before
        any turn starts — never two calls of one turn alive together."""
        try:
            record = self.store.call_process()
        except StoreError:
            return
        if record is None:
            return
        if end_group(record.pid, record.pgid, record.ticks):
            self.log.note(
                self.clock.now(),
                f"ended the call a previous daemon left running (process group {record.pgid})",
            )
        self._call_over()
