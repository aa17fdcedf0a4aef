"""Running one call of a CLI to its end (SPEC C1, A12, A28, A37).

- `run_call(argv, provider=…, input=…)`: spawn the CLI in a new process group, its stdin the
  prompt (`input`, for a template without `{prompt}`) or /dev/null, stream its stdout and
  stderr into a bounded capture (`capture.py`), stop the whole group on timeout (SIGTERM, then
  SIGKILL), and — while it streams — ask the core's `classify_output` about the output so far:
  a CLI that retries the network by itself without end (A37: codex's `Reconnecting... waiting
  for network`) is stopped at once and reported as a network outage. The answer is a frozen
  `CallResult`. A CLI that cannot be started at all (not found, not executable, an argument list
  too long, a NUL byte in an argument) is a call that failed with its reason on stderr, never an
  exception (A28).
- `call_participant(...)`: the argv and stdin of one participant's call, run. A prompt is never
  one unbounded argv item: claude and codex read it on stdin; an argv prompt (agy's `-p`) longer
  than `ARGV_PROMPT_MAX_BYTES` goes into a private file that a short argv prompt points to.

No policy lives here: what a limit, an outage or a missing post means is the core's decision.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import selectors
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, tzinfo
from typing import Any

import attrs

from autodev_core.detection.classification import Classification
from autodev_core.detection.posts import extract_post
from autodev_core.detection.reader import classify_output
from autodev_core.engine import PROVIDERS, Engine
from autodev_core.participant import Participant

from ..clock import Clock, Interrupt, SystemClock, is_set, local_zone
from .argv import (
    ARGV_PROMPT_MAX_BYTES,
    DEFAULT_CALL_TIMEOUT_SECONDS,
    DEFAULT_TEMPLATES,
    CommandTemplate,
    argv_for,
    call_environment,
)
from .capture import Sink, _Capture
from .processes import die_with_parent, signal_group, stop_group

#: C1: after SIGTERM to the group, this long before SIGKILL.
KILL_GRACE_SECONDS = 5.0
#: A37: how often the output so far is classified while the call streams.
CHECK_INTERVAL_SECONDS = 0.5
#: After the CLI exits, how long to wait for the pipes to close before killing what holds them.
DRAIN_SECONDS = 2.0
#: How often a `cancel` interrupt is asked while a call runs.
CANCEL_POLL_SECONDS = 0.2
_READ_CHUNK = 64 * 1024
#: Exit codes reported when the CLI could not be started at all (as a shell reports them):
#: 127 not found, 126 found but not startable (permission, E2BIG, a NUL byte in an argument).
EXIT_NOT_FOUND = 127
EXIT_NOT_EXECUTABLE = 126


@attrs.frozen
class CallResult:
    """What one call did.

    `stdout` is what the detectors and `extract_post` read. A stream of events: the structured
    events kept (whole, or a post event cut to `POST_MAX_BYTES`) that the tail no longer holds,
    then the stdout tail (at most `STDOUT_TAIL_BYTES`, starting at a line boundary when cut).
    Plain text: all of it, or its first `STDOUT_HEAD_BYTES`, the cut marker and its tail.
    `post_cut_bytes` says how many bytes of the answer the post left out.
    `stdout_bytes`/`stderr_bytes` count everything the CLI wrote.
    `exit_code` is the process's own (negative: killed by that signal; 127/126: could not start).
    `post` is set only when the call ended by itself with exit code 0 and its output carries one.
    """

    provider: str
    argv: tuple[str, ...]
    started_at: datetime
    ended_at: datetime
    exit_code: int
    stdout: str
    stderr: str
    stdout_bytes: int
    stderr_bytes: int
    timed_out: bool
    stopped_early: bool
    cancelled: bool
    classification: Classification
    post: str | None
    pid: int | None
    #: Why the sink stopped receiving output (it raised), or None.
    sink_error: str | None = None
    #: How many bytes of the answer the post left out (0: whole; see `POST_MAX_BYTES`).
    post_cut_bytes: int = 0

    @property
    def killed(self) -> bool:
        """The shell ended the call (timeout, early stop, cancel) rather than the CLI."""
        return self.timed_out or self.stopped_early or self.cancelled


#: Receives every chunk the CLI writes, as it comes: ("stdout" | "stderr", bytes). Lanes use it.


def _not_started(
    provider: str,
    argv: tuple[str, ...],
    clock: Clock,
    local_tz: tzinfo,
    code: int,
    why: str,
    sink: Sink | None,
) -> CallResult:
    """A call whose CLI could not be started: a failed call (A28), its reason on stderr and in
    the sink (the lane, C8)."""
    now = clock.now()
    stderr = f"{argv[0] if argv else provider}: {why}\n"
    if sink is not None:
        with contextlib.suppress(Exception):  # a lane that cannot be written fails nothing
            sink("stderr", stderr.encode("utf-8", errors="replace"))
    return CallResult(
        provider=provider, argv=argv, started_at=now, ended_at=now, exit_code=code, stdout="",
        stderr=stderr, stdout_bytes=0, stderr_bytes=len(stderr), timed_out=False,
        stopped_early=False, cancelled=False,
        classification=classify_output(
            provider, stderr=stderr, exit_code=code, now=now, local_tz=local_tz
        ),
        post=None, pid=None,
    )


def _why_not_started(exc: BaseException, args: tuple[str, ...]) -> tuple[int, str]:
    """The exit code and reason of a CLI that could not be started (127 not found, else 126)."""
    if isinstance(exc, OSError):
        where = exc.filename if exc.filename not in (None, "", args[0] if args else None) else None
        if exc.errno == errno.ENOENT and where is None:
            return EXIT_NOT_FOUND, "command not found"
        reason = exc.strerror or str(exc)
        if exc.errno == errno.E2BIG:
            total = sum(len(a.encode("utf-8", errors="replace")) + 1 for a in args)
            longest = max((len(a.encode("utf-8", errors="replace")) for a in args), default=0)
            reason += f" ({total} bytes of arguments, the longest {longest})"
        elif where is not None:
            reason += f" ({where})"
        code = EXIT_NOT_FOUND if exc.errno == errno.ENOENT else EXIT_NOT_EXECUTABLE
        return code, f"cannot start: {reason}"
    return EXIT_NOT_EXECUTABLE, f"cannot start: {exc}"


# Long for its 14 parameters and their contract; the body is one spawn, stream, wait.
def run_call(
    argv: Sequence[str],
    *,
    provider: str,
    timeout: float = DEFAULT_CALL_TIMEOUT_SECONDS,
    clock: Clock | None = None,
    local_tz: tzinfo | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    sink: Sink | None = None,
    cancel: Interrupt = None,
    check_interval: float = CHECK_INTERVAL_SECONDS,
    kill_grace: float = KILL_GRACE_SECONDS,
    input: str | bytes | None = None,
    started: Callable[[int], None] | None = None,
) -> CallResult:
    """Run one CLI call to its end, its timeout, an early stop (A37) or `cancel`.

    The CLI runs in its own process group (C1) and, on Linux, dies with the calling process
    (`processes.die_with_parent`); `started` is told its pid (= its process group id) as soon
    as it runs, so the daemon can record it (C1).

    `timeout` is in real seconds. `clock` stamps the call and gives `now` to the detectors;
    `local_tz` is the machine's zone for clock times in notices (A3). `input` is written to the
    CLI's stdin (as the CLI reads it, while its output streams), which is then closed; without
    it stdin is /dev/null. Never raises for what the CLI does; a CLI that cannot be started at
    all (not found, not executable, arguments too long, a NUL byte in an argument or the
    environment) ends with exit code 127 (or 126) and its reason on stderr and in the sink.
    """
    if provider not in PROVIDERS:
        raise ValueError(f"unknown provider {provider!r} (known: {', '.join(PROVIDERS)})")
    clock = clock or SystemClock()
    local_tz = local_tz or local_zone()
    args = tuple(argv)
    feed = input.encode("utf-8", errors="replace") if isinstance(input, str) else input
    try:
        proc = subprocess.Popen(
            args,
            # C1: agy gets /dev/null (it waits on an open stdin); a prompt on stdin is closed
            # once written, so codex never waits for more.
            stdin=subprocess.DEVNULL if feed is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # C1: its own process group, killed as a whole
            env=dict(env) if env is not None else None,
            cwd=cwd,
            close_fds=True,
            # No CLI outlives a daemon killed with -9 (C1).
            preexec_fn=functools.partial(die_with_parent, os.getpid()),
        )
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        # ENOENT, EACCES, E2BIG, a NUL byte in argv or env…: the call failed, the run goes on.
        code, why = _why_not_started(exc, args)
        return _not_started(provider, args, clock, local_tz, code, why, sink)
    if started is not None:
        try:
            started(proc.pid)
        except BaseException:
            stop_group(proc, kill_grace)
            raise
    call = _Call(proc, feed, provider=provider, clock=clock, local_tz=local_tz, sink=sink,
                 cancel=cancel, timeout=timeout, check_interval=check_interval)
    try:
        call.stream()
        call.wait_for_exit()
        if proc.poll() is None:
            stop_group(proc, kill_grace)
        call.drain()
    finally:
        call.close()
        if proc.poll() is None:  # only on an unexpected error above
            stop_group(proc, kill_grace)
    return call.result(args, proc.wait())


class _Call:
    """One CLI running: its pipes, what they wrote so far, and why the shell would end it.

    `stream` reads both pipes (and writes the prompt to stdin) until they close, the deadline
    passes, `cancel` is set or the output so far says the CLI would retry the network without
    end (A37); `wait_for_exit` waits for a CLI whose pipes closed before it exited; `drain`
    reads what the group wrote before it died; `result` is the `CallResult`.
    """

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        feed: bytes | None,
        *,
        provider: str,
        clock: Clock,
        local_tz: tzinfo,
        sink: Sink | None,
        cancel: Interrupt,
        timeout: float,
        check_interval: float,
    ) -> None:
        self.proc = proc
        self.provider = provider
        self.clock = clock
        self.local_tz = local_tz
        self.cancel = cancel
        self.check_interval = check_interval
        self.started_at = clock.now()
        self.capture = _Capture(sink, provider)
        self.selector = selectors.DefaultSelector()
        assert proc.stdout is not None and proc.stderr is not None
        for stream, name in ((proc.stdout, "stdout"), (proc.stderr, "stderr")):
            os.set_blocking(stream.fileno(), False)
            self.selector.register(stream, selectors.EVENT_READ, name)
        self.pending = memoryview(feed or b"")
        if proc.stdin is not None:
            if self.pending:
                os.set_blocking(proc.stdin.fileno(), False)
                self.selector.register(proc.stdin, selectors.EVENT_WRITE, "stdin")
            else:
                proc.stdin.close()
        self.deadline = time.monotonic() + timeout
        self.next_check = time.monotonic() + check_interval
        self.next_cancel_check = 0.0
        self.timed_out = self.stopped_early = self.cancelled = False
        self.early: Classification | None = None
        self.exited_at: float | None = None

    @property
    def ended_by_shell(self) -> bool:
        return self.timed_out or self.stopped_early or self.cancelled

    def close_stdin(self) -> None:
        stdin = self.proc.stdin
        if stdin is not None and not stdin.closed:
            with contextlib.suppress(KeyError):
                self.selector.unregister(stdin)
            with contextlib.suppress(OSError):
                stdin.close()

    def read_ready(self, wait: float) -> None:
        """Move what is ready: the prompt's next bytes to stdin, output into the capture."""
        for key, _ in self.selector.select(timeout=max(wait, 0.0)):
            if key.data == "stdin":
                self._write_stdin(key.fd)
                continue
            try:
                chunk = os.read(key.fd, _READ_CHUNK)
            except BlockingIOError:
                continue
            if chunk:
                self.capture.feed(str(key.data), chunk)
            else:
                self.selector.unregister(key.fileobj)

    def _write_stdin(self, fd: int) -> None:
        try:
            written = os.write(fd, self.pending[:_READ_CHUNK])
        except BlockingIOError:
            return
        except OSError:  # the CLI closed its stdin (or exited): it reads no more
            self.close_stdin()
            return
        self.pending = self.pending[written:]
        if not self.pending:
            self.close_stdin()

    def stream(self) -> None:
        """Read until both pipes close, or until the shell must end the call."""
        while self.selector.get_map():
            now_mono = time.monotonic()
            self.read_ready(min(self.check_interval, max(self.deadline - now_mono, 0.0), 0.25))
            now_mono = time.monotonic()
            if self.proc.poll() is not None:
                # The CLI exited; its pipes may still be held by a child it left behind.
                self.exited_at = self.exited_at if self.exited_at is not None else now_mono
                if now_mono - self.exited_at > DRAIN_SECONDS:
                    signal_group(self.proc.pid, signal.SIGKILL)
                    return
                continue
            if self.cancel is not None and now_mono >= self.next_cancel_check:
                # A callable cancel may query a store: ask it a few times a second, not per chunk.
                self.next_cancel_check = now_mono + CANCEL_POLL_SECONDS
                if is_set(self.cancel):
                    self.cancelled = True
                    return
            if now_mono >= self.deadline:
                self.timed_out = True
                return
            if self.capture.changed and now_mono >= self.next_check:
                self.next_check = now_mono + self.check_interval
                self.capture.changed = False
                if self._retries_without_end():
                    return

    def _retries_without_end(self) -> bool:
        """A37: the output so far says the CLI would retry the network without end."""
        seen = classify_output(
            self.provider,
            stdout=self.capture.stdout_text(),
            stderr=self.capture.stderr_text(),
            exit_code=None,
            now=self.clock.now(),
            local_tz=self.local_tz,
        )
        if seen.kind != "network":
            return False
        self.stopped_early, self.early = True, seen
        return True

    def wait_for_exit(self) -> None:
        """Both pipes closed but the CLI runs on: wait for it, still bounded by the deadline
        and `cancel`."""
        while not self.ended_by_shell and self.proc.poll() is None:
            if time.monotonic() >= self.deadline:
                self.timed_out = True
            elif is_set(self.cancel):
                self.cancelled = True
            else:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.proc.wait(timeout=CANCEL_POLL_SECONDS)

    def drain(self) -> None:
        """Whatever the group wrote before it died."""
        drain_until = time.monotonic() + DRAIN_SECONDS
        while self.selector.get_map() and time.monotonic() < drain_until:
            self.read_ready(0.05)

    def close(self) -> None:
        self.close_stdin()
        self.selector.close()
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self.proc.stdout.close()
        self.proc.stderr.close()

    def result(self, args: tuple[str, ...], exit_code: int) -> CallResult:
        capture = self.capture
        capture.finish()
        ended_at = self.clock.now()
        stdout, stderr = capture.stdout_text(), capture.stderr_text()
        killed = self.ended_by_shell
        classification = self.early or classify_output(
            self.provider,
            stdout=stdout,
            stderr=stderr,
            exit_code=None if killed else exit_code,
            now=ended_at,
            local_tz=self.local_tz,
        )
        post = extract_post(self.provider, stdout) if not killed and exit_code == 0 else None
        post_cut_bytes = capture.post_cut_bytes() if post is not None else 0
        return CallResult(
            provider=self.provider, argv=args, started_at=self.started_at, ended_at=ended_at,
            exit_code=exit_code, stdout=stdout, stderr=stderr, stdout_bytes=capture.out.total,
            stderr_bytes=capture.err.total, timed_out=self.timed_out,
            stopped_early=self.stopped_early, cancelled=self.cancelled,
            classification=classification, post=post, pid=self.proc.pid,
            sink_error=capture.sink_error, post_cut_bytes=post_cut_bytes,
        )


def call_participant(
    participant: Participant,
    entry: Engine,
    prompt: str,
    *,
    templates: Mapping[str, CommandTemplate] = DEFAULT_TEMPLATES,
    prompt_dir: str | os.PathLike[str] | None = None,
    **kwargs: Any,
) -> CallResult:
    """Run `participant`'s call on `entry` with its template's timeout (keyword arguments go to
    `run_call`).

    The prompt goes where the template puts it: on stdin when its argv has no `{prompt}`, else
    in argv — unless it is longer than `ARGV_PROMPT_MAX_BYTES`, when it is written to a private
    file (mode 0600, in `prompt_dir`, default the system's temporary directory) for the call's
    length, and the argv prompt is one line asking the CLI to read that file.
    """
    template = templates[entry.provider]
    kwargs.setdefault("timeout", template.timeout_seconds)
    kwargs["env"] = call_environment(entry.provider, kwargs.get("env"))
    if template.prompt_on_stdin:
        argv = argv_for(participant, entry, prompt, templates)
        return run_call(argv, provider=entry.provider, input=prompt, **kwargs)
    if len(prompt.encode("utf-8", errors="replace")) <= ARGV_PROMPT_MAX_BYTES:
        argv = argv_for(participant, entry, prompt, templates)
        return run_call(argv, provider=entry.provider, **kwargs)
    handle, path = tempfile.mkstemp(
        prefix=f"prompt-{participant.id}-", suffix=".md",
        dir=os.fspath(prompt_dir) if prompt_dir is not None else None,
    )
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(prompt.encode("utf-8", errors="replace"))
        pointer = (
            f"Your instructions for this turn are too long for a command line, so they are in "
            f"the file {path}. Read that whole file now and follow it exactly."
        )
        argv = argv_for(participant, entry, pointer, templates)
        return run_call(argv, provider=entry.provider, **kwargs)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
