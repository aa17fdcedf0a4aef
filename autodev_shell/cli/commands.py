"""The commands of the reference CLI (SPEC C4, C6, C7, C8, A14).

Each function takes the parsed arguments and returns an exit code. A mistake a user can make (a
bad participant file, a missing CLI, a locked run, a corrupt database, an unknown run) raises an
`AutodevError` whose message is one clear sentence; `cli.main` prints it without a traceback.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Final, TextIO

from autodev_core.errors import AutodevError, ConfigError

from ..store.folder import (
    DEFAULT_RUN_DIR,
    LANES_DIR,
    LOG_FILE,
    SHARING_FILE,
    open_existing,
    run_db,
)

# Each command imports what it uses when it runs: `autodev --help` builds the parser alone, and
# `autodev status` does not load the loop, the CLIs' adapters or YAML (docs/performance.md).
if TYPE_CHECKING:
    import argparse
    from types import SimpleNamespace

    from autodev_core.scheduler import SchedulerConfig

    from ..calls.environments import CallEnvironments
    from ..clock import Clock
    from ..loop.logsink import LogSink
    from ..runner import Runner, RunSummary
    from ..sharing import LimitSharing, ShareSettings
    from ..store.run_store import RunStore, StoreError
    from ..team import Team

#: `autodev run`'s exit code after SIGTERM (128 + 15, as a shell reports it).
EXIT_TERMINATED: Final = 143
#: `autodev run`'s exit code after SIGHUP, its terminal closed (128 + 1).
EXIT_HANGUP: Final = 129
#: `autodev run`'s exit code when its run store was removed under it (C2).
EXIT_FOLDER_GONE: Final = 1


def zone_name(zone: object) -> str:
    """The IANA name of a zone, or UTC when the machine's zone has no name."""
    key = getattr(zone, "key", None)
    return key if isinstance(key, str) and key else "UTC"


def scheduler_config_for(team: Team, installed: frozenset[str], timezone: str) -> SchedulerConfig:
    """The scheduler's configuration; a participant with no installed CLI is a clear error."""
    from autodev_core.scheduler import SchedulerConfig

    try:
        return SchedulerConfig(
            team=team.members,
            installed=installed,
            timezone=timezone,
            max_iterations=team.max_iterations,
            max_runtime=team.max_runtime,
            policy=team.policy,
        )
    except ValueError as exc:
        raise ConfigError(str(exc), source=str(team.directory)) from None


def start_run(
    team: Team,
    run_dir: Path,
    *,
    run_id: str,
    clock: Clock,
    installed: frozenset[str] | None = None,
    json_lines: bool = False,
    stream: TextIO | None = None,
    env: dict[str, str] | None = None,
    slice_seconds: float | None = None,
    stop_at: datetime | None = None,
    timezone: str | None = None,
    share: str | None = None,
) -> RunSummary:
    """Lock the run (C4), open its store, and drive the loop until the run stops. Everything
    is checked before anything is made: a refused team leaves no run folder behind.

    `share`: a redis:// URL to share limits on (docs/sharing.md), overriding the team's `share:`
    setting; only the accounts named under `accounts:` are shared (docs/sharing.md)."""
    import socket

    from ..calls.argv import installed_providers
    from ..clock import local_zone
    from ..notify import check_settings
    from ..private import make_private, private_dir
    from ..sharing import share_settings
    from ..store.run_store import RunStore
    from ..store.runlock import RunLock
    from ..team import SETTINGS_FILE

    check_settings(team.notify)  # notify.urls without Apprise: one line, nothing made
    sharing_settings = share_settings(
        team.share,
        url=share,
        default_name=f"{socket.gethostname()}/{run_id}",
        source=str(team.directory / SETTINGS_FILE),
    )
    zone_key = timezone or team.timezone or zone_name(local_zone())
    have = (
        installed
        if installed is not None
        else installed_providers(team.templates, path=(env or os.environ).get("PATH"))
    )
    config = scheduler_config_for(team, have, zone_key)
    from ..team import call_environments, check_project

    project = check_project(team, frozenset(e.provider for lane in config.lanes for e in lane))
    environments = call_environments(team, env if env is not None else os.environ)
    unshared: tuple[str, ...] = ()
    if sharing_settings is not None:  # `accounts:` may name engine accounts (docs/sharing.md)
        from ..sharing import unshared_accounts

        unshared = unshared_accounts(
            sharing_settings,
            {str(e.primary) for m in team.members for e in m.entries if e.account},
            source=str(team.directory / SETTINGS_FILE))
    private_dir(run_dir)  # folders made here are 0700 (docs/shell.md, private files)
    db = run_db(run_dir)
    lock = RunLock.acquire(db, run=run_id)
    from contextlib import suppress

    from ..private import write_private_text
    from ..store.folder import TEAM_EDIT_FILE
    from ..team import RUN_TEAM_FILE

    with suppress(OSError):  # a refusal of a run before this one is not this run's
        (run_dir / TEAM_EDIT_FILE).unlink(missing_ok=True)
    with suppress(OSError):  # the panel then asks for --team, as before
        # The panel finds the team from the run (docs/panel.md): `--team` is not needed.
        write_private_text(run_dir / RUN_TEAM_FILE, f"{team.directory.resolve()}\n")
    restore_sigterm = _raise_on_sigterm()
    try:
        make_private(run_dir)  # run files an older autodev (or another umask) left readable
        _refuse_half_restored(db, run_id=run_id, run_dir=run_dir)
        store = RunStore.open(db, create=True, run_id=run_id, now=clock.now())
        try:
            runner, closing = _daemon(
                store, team=team, config=config, run_dir=run_dir, run_id=run_id, clock=clock,
                sharing_settings=sharing_settings, json_lines=json_lines, stream=stream,
                unshared=unshared, env=env, slice_seconds=slice_seconds, project=project,
                environments=environments)
            return _drive(runner, stop_at=stop_at, closing=closing)
        finally:
            store.close()
    finally:
        restore_sigterm()
        lock.release()


def _refuse_half_restored(db: Path, *, run_id: str, run_dir: Path) -> None:
    """B10-B11: a restore died half-way; nothing writes until it is run again to its end."""
    from autodev_core.control.identity import resolve_active_identity
    from autodev_core.control.mutation import MutationContext, mutation_block_reason

    from ..durability.paths import restore_in_progress

    if restore_in_progress(db):
        blocked = mutation_block_reason("start the run", MutationContext(
            resolve_active_identity(run_id=run_id), restore_lock=True))
        raise AutodevError(f"{blocked} Run `autodev restore --run {run_dir}` again to "
                           "finish it.")


def _daemon(
    store: RunStore,
    *,
    team: Team,
    config: SchedulerConfig,
    run_dir: Path,
    run_id: str,
    clock: Clock,
    sharing_settings: ShareSettings | None,
    json_lines: bool,
    unshared: tuple[str, ...] = (),
    stream: TextIO | None,
    env: dict[str, str] | None,
    slice_seconds: float | None,
    project: Path | None = None,
    environments: CallEnvironments | None = None,
) -> tuple[Runner, Callable[[], None]]:
    """The run's `Runner` on its open store, and what closes its log and sharing after it."""
    from autodev_core.control.identity import resolve_active_identity

    from ..calls.lanes import Lanes
    from ..durability.writes import Durability
    from ..notify import observed_log
    from ..runner import Runner, StreamLog, default_countdown
    from ..store.folder import TEAM_EDIT_FILE
    from ..team import TeamFiles

    identity = resolve_active_identity(run_id=store.run_id)
    if not identity.names(run_id):
        raise AutodevError(
            f"The run store at {store.path} belongs to run {store.run_id!r}, not {run_id!r}; "
            "use another --run directory."
        )
    durability = Durability.open(store, identity)
    try:
        # The run's events file and `notify:` watch every line (docs/notifications.md).
        log = observed_log(StreamLog(
            config.zone,
            stream=stream if stream is not None else sys.stderr,
            file=run_dir / LOG_FILE,
            json_lines=json_lines,
        ), team.notify, run=run_id, run_dir=run_dir, now=clock.now)
        kwargs = {} if slice_seconds is None else {"slice_seconds": slice_seconds}
        sharing = _open_sharing(sharing_settings, log, clock, run_dir, unshared)
        runner = Runner(
            config=config, store=store, durability=durability, identity=identity,
            clock=clock, log=log, templates=team.templates, env=env,
            countdown=None if json_lines else default_countdown(),
            lanes=Lanes(run_dir / LANES_DIR), prompt_dir=run_dir, sharing=sharing,
            project=project, environments=environments,
            reload_team=TeamFiles(team.directory), team_edit_file=run_dir / TEAM_EDIT_FILE,
            **kwargs,  # type: ignore[arg-type]
        )
    except (Terminated, KeyboardInterrupt):
        # A signal while the daemon starts, its store open: as clean an end as one in the loop
        # (`_drive`); the backup catches up first (B14).
        durability.sync_replicas(now=clock.now(), flush=True)
        raise

    def closing() -> None:
        if sharing is not None:
            sharing.close()
        log.close()

    return runner, closing


def _drive(runner: Runner, *, stop_at: datetime | None,
           closing: Callable[[], None]) -> RunSummary:
    """The loop until the run stops; a shutdown asked for by a signal is a clean one. The log
    records the daemon's start (or restart, on a run with a saved state), its stop and a signal
    ending it (docs/loop.md, The daemon's own lines)."""
    again = runner.state.last_event_at is not None
    folder = runner.cli.cwd or Path.cwd()
    runner.log.note(runner.clock.now(), f"daemon {'restarted' if again else 'started'} "
                    f"(pid {os.getpid()})" + ("; going on from the run's saved state"
                                              if again else "") + f"; calls run in {folder}")
    try:
        summary = runner.run(stop_at=stop_at)
        runner.log.note(runner.clock.now(), f"daemon stopped; the run is {summary.status}")
        return summary
    except (Terminated, KeyboardInterrupt) as ended:
        # The backup catches up first (B14; a kill -9 leaves it at most a cadence behind, the
        # store holds it all).
        runner.flush_replicas()
        name = ended.signal_name if isinstance(ended, Terminated) else "SIGINT"
        from ..notify import DAEMON_ENDED  # the line notify tells as `stopped`

        runner.log.note(runner.clock.now(), f"{DAEMON_ENDED}{name}; its call in flight was "
                        "stopped, the owed turn starts again with the next `autodev run`")
        raise
    finally:
        closing()


def _open_sharing(
    settings: ShareSettings | None, log: LogSink, clock: Clock, run_dir: Path,
    unshared: tuple[str, ...] = (),
) -> LimitSharing | None:
    """Connect to the shared registry (docs/sharing.md). Redis being down is not an error (the run
    carries on with its own limits and says so); redis-py missing is. `unshared`: the team's
    engine accounts `accounts:` does not name, said in the start line."""
    from ..sharing import LimitSharing

    if settings is None:
        (run_dir / SHARING_FILE).unlink(missing_ok=True)
        return None
    try:
        sharing = LimitSharing(
            settings,
            say=lambda line: log.note(clock.now(), line),
            status_file=run_dir / SHARING_FILE,
        )
    except ImportError:
        raise AutodevError(
            "Sharing limits needs redis-py: pip install 'autodev[redis]'."
        ) from None
    accounts = ", ".join(f"{p} as {a}" for p, a in sorted(settings.accounts.items()))
    if unshared:
        accounts += f"; not shared: {', '.join(unshared)}, not named under accounts:"
    log.note(
        clock.now(),
        f"sharing limits via {settings.shown_url} as {settings.name!r} (accounts: {accounts})",
    )
    return sharing
class Terminated(BaseException):
    """SIGTERM (or SIGHUP) reached the daemon. A BaseException, like KeyboardInterrupt, so no
    handler on the way out swallows it; on the way, the call in flight has its process group
    ended (C1). `signal_name` says which."""

    def __init__(self, signal_name: str = "SIGTERM") -> None:
        super().__init__(signal_name)
        self.signal_name = signal_name


def _raise_on_sigterm() -> Callable[[], None]:
    """Make SIGTERM raise `Terminated` in the daemon (main thread only), and SIGHUP too (the
    terminal the daemon was started from closed: without a handler Python dies at once, the
    checkpoint left behind and no line saying why) unless SIGHUP is ignored (`nohup`, a
    service manager), which is kept. Returns the undo."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def terminated(signum: int, _frame: object) -> None:
        raise Terminated(signal.Signals(signum).name)

    previous = {signal.SIGTERM: signal.signal(signal.SIGTERM, terminated)}
    if signal.getsignal(signal.SIGHUP) == signal.SIG_DFL:
        previous[signal.SIGHUP] = signal.signal(signal.SIGHUP, terminated)

    def undo() -> None:
        for signum, handler in previous.items():
            signal.signal(signum, handler)

    return undo


# --- commands -----------------------------------------------------------------------------------


def cmd_run(args: argparse.Namespace) -> int:
    from ..clock import ScaledClock, SystemClock
    from ..runner import RunFolderGone
    from ..team import load_team

    team = load_team(args.team)
    for warning in team.warnings:  # once, as the run starts (C5)
        print(f"autodev: warning: {warning}", file=sys.stderr)
    run_dir = Path(args.run)
    run_id = args.thread or Path(args.team).resolve().name
    if args.fast and (args.share or team.share.url):  # docs/sharing.md "Clocks"
        raise AutodevError(
            "--fast runs a virtual clock, and a shared limit is a real instant: run with "
            "--fast or with sharing (--share, share: in autodev.yaml), not both")
    clock: Clock = ScaledClock(args.fast) if args.fast else SystemClock()
    try:
        summary = start_run(
            team, run_dir, run_id=run_id, clock=clock, json_lines=args.json, share=args.share
        )
    except RunFolderGone as exc:
        print(f"autodev: run {run_id} stopped: {exc}", file=sys.stderr)
        return EXIT_FOLDER_GONE
    except Terminated as ended:
        print(
            f"autodev: run {run_id} ended by {ended.signal_name}; its call in flight was "
            f"stopped. `autodev run` again goes on with the owed turn.",
            file=sys.stderr,
        )
        return EXIT_HANGUP if ended.signal_name == "SIGHUP" else EXIT_TERMINATED
    print(
        f"run {run_id}: {summary.status} after {summary.calls} calls and "
        f"{len(summary.posts)} posts; {summary.persistence}"
    )
    return 0


def cmd_control(args: argparse.Namespace) -> int:
    """`autodev stop|pause|resume|say`: queue a command for the run's daemon."""
    command = args.command
    arg = " ".join(args.message) if command == "say" else ""
    if command == "say" and args.message == ["-"]:
        arg = _message_from_stdin()
    if command == "say" and not arg.strip():
        raise AutodevError('`autodev say` needs a message, e.g. autodev say "please review".')
    store = open_existing(Path(args.run))
    try:
        store.enqueue_control(command, arg, now=datetime.now(UTC))
    finally:
        store.close()
    print(f"{command}: queued for the run at {args.run}")
    return 0


def _message_from_stdin() -> str:
    """`autodev say -`: the message is standard input, whole (a message too long for a command
    line: the system refuses an argument over 128 KiB), queued as it is; the post, as for an
    argument, is the message without the white space around it. Bytes that are not UTF-8 are
    kept as the store keeps an undecodable argument (U+FFFD)."""
    return _read_stdin().decode("utf-8", "surrogateescape")


def _read_stdin() -> bytes:
    """Standard input to its end, read from its descriptor. A descriptor another program left
    non-blocking (the flag belongs to the open file, shared by every process holding it) is
    waited on until more comes or it ends: a buffered read would return the part that has
    arrived, or None, and the message would be queued cut short. A descriptor that cannot be read
    is one sentence (a mistake, exit 2; nothing is queued)."""
    import errno
    import select

    fd = sys.stdin.fileno()
    chunks: list[bytes] = []
    while True:
        try:
            chunk = os.read(fd, 1 << 20)
        except BlockingIOError:
            select.select([fd], [], [])
            continue
        except OSError as exc:
            why = ("it is not open for reading" if exc.errno == errno.EBADF
                   else exc.strerror or str(exc))
            raise AutodevError(
                f"`autodev say -` cannot read the message from standard input: {why}."
            ) from None
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def cmd_status(args: argparse.Namespace | SimpleNamespace) -> int:
    from ..status.report import format_status, status_json, status_report

    facts, zone, now = status_report(Path(args.run))
    text = (status_json(facts) if getattr(args, "json", False)
            else "\n".join(format_status(facts, now, zone)))
    print(text)
    return 0


def cmd_team_edit(args: argparse.Namespace) -> int:
    """A14: print the path of the participant's file."""
    from ..team import load_team

    team = load_team(args.team)
    print(team.file_of(args.id).resolve())
    return 0


def cmd_lane(args: argparse.Namespace) -> int:
    """C8: print a participant's lane (the raw output of its CLI calls)."""
    from ..calls.lanes import Lanes

    try:
        text = Lanes(Path(args.run) / LANES_DIR).read(args.id)
    except ValueError as exc:  # a malformed id: a user mistake, said in one sentence
        raise AutodevError(str(exc)) from None
    sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")
    return 0


def cmd_panel(args: argparse.Namespace) -> int:
    """`autodev panel`: serve the run's panel in a browser (docs/panel.md)."""
    try:
        import jinja2  # noqa: F401
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        from ..panel import MISSING_EXTRA

        print(f"autodev: {MISSING_EXTRA}", file=sys.stderr)
        return 2
    from ..panel import serve
    from ..team import recorded_team

    team_dir = args.team if args.team is not None else recorded_team(Path(args.run))
    return serve(Path(args.run), team_dir=team_dir, host=args.host, port=args.port,
                 read_only=args.read_only)


def restore_hint(error: StoreError) -> str:
    """For a corrupt store: what the checkpoint can do about it, as the core's audit allows
    (B14). Empty when there is nothing to offer."""
    from ..durability.checkpoint import offer_restore

    if error.kind != "corrupt":
        return ""
    try:
        offer = offer_restore(error.path)
    except AutodevError:
        return ""
    if not offer.allowed:
        return offer.message
    run_dir = Path(error.path).parent
    return f"{offer.message} Run `autodev restore --run {run_dir}` to restore it."


def cmd_restore(args: argparse.Namespace) -> int:
    """Restore the run store from its checkpoint, only when the audit allows it (B14)."""
    from ..durability.checkpoint import restore_from_checkpoint

    db = run_db(Path(args.run))
    result = restore_from_checkpoint(db, now=datetime.now(UTC))
    print(result.offer.message)
    if not result.restored:
        return 1
    kept = (f"the old store was kept as {result.replaced}" if result.replaced
            else "there was no old store to keep")
    print(f"restored revision {result.revision}; {kept}")
    return 0


#: The fastest `--fast` clock: 100 000 times real time already runs a day of virtual time in
#: under a second; far beyond it the clock's arithmetic passes the calendar's end within a
#: run (a factor of 1e308 or inf overflowed at once).
MAX_SPEED: Final = 100_000.0


def _speed(text: str) -> float:
    import argparse

    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not math.isfinite(value) or not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, not {text!r}")
    if value > MAX_SPEED:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_SPEED:g}, not {text!r}")
    return value


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register every command but `simulate` and `demo` on the CLI's parser."""
    _add_run(commands)
    _add_controls(commands)
    _add_team_and_store(commands)
    _add_panel(commands)
    from .limits import add_limits

    add_limits(commands)
    _add_timeline(commands)


def _with_run(parser: argparse.ArgumentParser) -> None:
    """`--run DIR`: the run folder a command acts on."""
    parser.add_argument(
        "--run",
        default=DEFAULT_RUN_DIR,
        metavar="DIR",
        help=f"the run's directory (default {DEFAULT_RUN_DIR})",
    )


def _add_run(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = commands.add_parser("run", help="run a team of participant files on a thread")
    run.add_argument("team", metavar="TEAM_DIR", help="directory of participant .md files")
    _with_run(run)
    run.add_argument("--thread", default="", help="the run id (default: the team's folder name)")
    run.add_argument("--json", action="store_true", help="log JSON lines")
    run.add_argument(
        "--share",
        default=None,
        metavar="URL",
        help="share limits with other runs on the same accounts through this Redis "
        "(redis://… or rediss://…; overrides `share:` in autodev.yaml; docs/sharing.md)",
    )
    run.add_argument(
        "--fast",
        type=_speed,
        default=0.0,
        metavar="FACTOR",
        help="run the clock FACTOR times faster (for trying things out)",
    )
    run.set_defaults(handler=cmd_run)


def _add_controls(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    status = commands.add_parser("status", help="show status, limits, outages, persistence")
    _with_run(status)
    status.add_argument("--json", action="store_true", help="the same facts as one JSON object")
    status.set_defaults(handler=cmd_status)

    for name, text in (
        ("stop", "stop the run"),
        ("pause", "pause the run"),
        ("resume", "resume a paused run"),
    ):
        sub = commands.add_parser(name, help=text)
        _with_run(sub)
        sub.set_defaults(handler=cmd_control)
    say = commands.add_parser("say", help="post a user message to the thread")
    say.add_argument("message", nargs="+", help="the message; - reads it from standard input")
    _with_run(say)
    say.set_defaults(handler=cmd_control)


def _add_team_and_store(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    team = commands.add_parser("team", help="team commands")
    team_commands = team.add_subparsers(dest="team_command", metavar="SUBCOMMAND", required=True)
    edit = team_commands.add_parser("edit", help="print the path of a participant's file")
    edit.add_argument("id", help="participant id")
    edit.add_argument(
        "--team",
        default=".",
        metavar="TEAM_DIR",
        help="the team directory (default: the current directory)",
    )
    edit.set_defaults(handler=cmd_team_edit)

    restore = commands.add_parser(
        "restore", help="restore the run store from its checkpoint, when the audit allows"
    )
    _with_run(restore)
    restore.set_defaults(handler=cmd_restore)

    lane = commands.add_parser("lane", help="print a participant's lane")
    lane.add_argument("id", help="participant id")
    _with_run(lane)
    lane.set_defaults(handler=cmd_lane)


def _add_panel(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    panel = commands.add_parser(
        "panel", help="watch and steer the run in a browser (needs autodev[panel])",
        description="Serve one run's panel: status, participants, limits, the thread, lanes, "
        "controls and prompt editing. Prints one URL with a one-time token and runs until "
        "Ctrl-C. docs/panel.md.")
    _with_run(panel)
    panel.add_argument("--team", default=None, metavar="TEAM_DIR",
                       help="the team folder, for editing prompts (default: the one the run "
                       "was started on)")
    panel.add_argument("--host", default="127.0.0.1",
                       help="the address to listen on (default 127.0.0.1; any other prints a "
                       "warning)")
    panel.add_argument("--port", type=int, default=0,
                       help="the port (default 0: a free one)")
    panel.add_argument("--read-only", action="store_true",
                       help="watch only: no controls, no prompt editing, no POST route")
    panel.set_defaults(handler=cmd_panel)


def _add_timeline(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    timeline = commands.add_parser(
        "timeline", help="the run's story: an SVG timeline and figures per participant",
        description="Draw the run's timeline (limits and resets, outages, hops, handovers, "
        "failures, waits, calls) as an SVG for reports, and print calls, posts, failures, time "
        "in calls and cost or tokens per participant. docs/timeline.md.")
    _with_run(timeline)
    timeline.add_argument("--svg", default=None, metavar="FILE", help="write the SVG here")
    window = timeline.add_mutually_exclusive_group()
    window.add_argument("--hours", type=float, default=None, metavar="H",
                        help="the last H hours (1 to 168; default 24)")
    window.add_argument("--since", default=None, metavar="WHEN",
                        help="from WHEN (ISO 8601; without an offset, in the machine's zone)")
    timeline.set_defaults(handler=cmd_timeline)


def cmd_timeline(args: argparse.Namespace) -> int:
    from ..clock import local_zone
    from ..story.report import timeline_report

    lines = timeline_report(Path(args.run), svg=Path(args.svg) if args.svg else None,
                            hours=args.hours, since=args.since, zone=local_zone())
    sys.stdout.write("".join(f"{line}\n" for line in lines))
    return 0
