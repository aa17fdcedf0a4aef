"""The adapter helpers of an orchestrator's own loop (docs/orchestrators.md, "Writing your
adapter"), and the provider adapters' former module name.

- `post_of(provider, stdout, exit_code, timed_out)`: the post a call made: only a clean exit
  posts, and a notice never does (A2-A6, A17, A26, A28, A31, A32);
- `restored(config, saved)`: `restore_state` that names the mistake when handed JSON text (call
  `from_json` first) or something else than a saved state;
- `resume_or_start(config, saved, now)`: after a restart, the state to hold and the first event
  to feed it (`RunStarted` after a stop or a crash; a pause waits for a person unless asked).

The provider adapters' public names live in `autodev_shell.calls` (docs/design.md) and stay
importable from here, so code written against `autodev_shell.adapters` keeps working.
"""

from __future__ import annotations

from datetime import datetime

from autodev_core.detection.posts import extract_post
from autodev_core.scheduler.events import Event, ResumeRequested, RunStarted
from autodev_core.scheduler.restore import NotASavedState, restore_state
from autodev_core.scheduler.state import SchedulerConfig, SchedulerState

from . import calls as _calls
from .calls import *  # noqa: F403 — this module is also the old name of the package


def post_of(
    provider: str,
    stdout: str,
    exit_code: int | None,
    timed_out: bool = False,
) -> str | None:
    """The post a call made, or None: only a clean exit posts (exit code 0, no timeout), and a
    notice never does (`extract_post` returns None for an answer that reads as one). A failed
    call and an empty turn post nothing (A28, A31); model text over 300 characters quoting a
    notice is a post (A5), and an answer followed by a notice keeps its post (A17: report the
    limit with `posted=True`). Report `posted=post is not None`."""
    if exit_code != 0 or timed_out:
        return None
    return extract_post(provider, stdout)


def restored(config: SchedulerConfig, saved: SchedulerState | None) -> SchedulerState:
    """`restore_state(config, saved)`, which refuses with a one-line `NotASavedState` what is not
    a saved state: JSON text (call `from_json(text, SchedulerState)` first) or anything else."""
    return restore_state(config, saved)


def resume_or_start(
    config: SchedulerConfig,
    saved: SchedulerState | None,
    now: datetime,
    *,
    resume_paused: bool = False,
) -> tuple[SchedulerState, Event | None]:
    """After a restart (a crash, a stop, a new process): the state to hold —
    `restore_state(config, saved)`, `config` read from the team folder now — and the event to
    feed it first: `RunStarted(now)` when it comes back stopped (a crash or a stop; the owed
    turn runs again, A33), None when it comes back paused (a pause waits for a person, A29,
    A31, A32), or `ResumeRequested(now)` with `resume_paused=True` (the person said go on)."""
    state = restored(config, saved)
    if state.status == "paused":
        return state, ResumeRequested(now=now) if resume_paused else None
    return state, RunStarted(now=now)


__all__ = [*_calls.__all__, "NotASavedState", "post_of", "restored", "resume_or_start"]
