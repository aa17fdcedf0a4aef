"""How a CLI is called and its output captured (SPEC C1, A5, A12, A13, A28, A31, A37).

- `argv.py`: command templates, the argv of a call, which CLIs are installed;
- `capture.py`: a call's output held with bounded memory, the events that matter kept whole;
- `run.py`: `run_call`, one CLI run to its end, timeout, early stop or cancel, and
  `call_participant`, a participant's call with its prompt where its CLI reads it;
- `processes.py`: process groups, a CLI that dies with its daemon, groups a dead daemon left;
- `cli_calls.py`: `CliCalls`, the runner's part that runs a `StartCall` with its lane (C8).

The public names are here (and, as before, in `autodev_shell.adapters`). No policy lives here:
what a limit, an outage or a missing post means is the core's decision.
"""

from __future__ import annotations

from .argv import (
    ARGV_PROMPT_MAX_BYTES,
    DEFAULT_CALL_TIMEOUT_SECONDS,
    DEFAULT_TEMPLATES,
    MODEL_ARGS,
    RETRY_ENV,
    CommandTemplate,
    argv_for,
    build_argv,
    call_environment,
    installed_providers,
    prompt_on_stdin,
    resolve_binary,
    templates_from_config,
)
from .capture import (
    CUT_MARKER,
    EVENT_FIELDS_BYTES,
    POST_EVENT_MAX_BYTES,
    POST_MAX_BYTES,
    SMALL_EVENT_MAX_BYTES,
    SMALL_EVENTS_KEPT,
    STDERR_TAIL_BYTES,
    STDOUT_HEAD_BYTES,
    STDOUT_TAIL_BYTES,
    Sink,
    cut_marker,
)
from .run import (
    CANCEL_POLL_SECONDS,
    CHECK_INTERVAL_SECONDS,
    DRAIN_SECONDS,
    EXIT_NOT_EXECUTABLE,
    EXIT_NOT_FOUND,
    KILL_GRACE_SECONDS,
    CallResult,
    call_participant,
    run_call,
)

__all__ = [
    "ARGV_PROMPT_MAX_BYTES",
    "CANCEL_POLL_SECONDS",
    "CHECK_INTERVAL_SECONDS",
    "CUT_MARKER",
    "DEFAULT_CALL_TIMEOUT_SECONDS",
    "DEFAULT_TEMPLATES",
    "DRAIN_SECONDS",
    "EVENT_FIELDS_BYTES",
    "EXIT_NOT_EXECUTABLE",
    "EXIT_NOT_FOUND",
    "KILL_GRACE_SECONDS",
    "MODEL_ARGS",
    "POST_EVENT_MAX_BYTES",
    "POST_MAX_BYTES",
    "RETRY_ENV",
    "SMALL_EVENTS_KEPT",
    "SMALL_EVENT_MAX_BYTES",
    "STDERR_TAIL_BYTES",
    "STDOUT_HEAD_BYTES",
    "STDOUT_TAIL_BYTES",
    "CallResult",
    "CommandTemplate",
    "Sink",
    "argv_for",
    "build_argv",
    "call_environment",
    "call_participant",
    "cut_marker",
    "installed_providers",
    "prompt_on_stdin",
    "resolve_binary",
    "run_call",
    "templates_from_config",
]
