"""The commands of the reference CLI (SPEC C4, C6, C7, C8, A14).

Each function takes the parsed arguments and returns an exit code. A mistake a user can make (a
bad participant file, a missing CLI, a locked run, a corrupt database, an unknown run) raises an
`AutodevError` whose message is one clear sentence; `cli.main` prints it without a traceback.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TextIO

from autodev_core.errors import AutodevError, ConfigError

# Each command imports what it uses when it runs: `autodev --help` builds the parser alone, and
# `autodev status` does not load the loop, the CLIs' adapters or YAML (issue 13).
if TYPE_CHECKING:
    import argparse
    from types import SimpleNamespace

    from autodev_core.control.identity import RunIdentity
    from autodev_core.scheduler import SchedulerConfig

    from .clock import Clock
    from .runner import RunSummary, StreamLog
    from .sharing import LimitSharing, ShareSettings
    from .status_read import StatusReading
    from .store import RunStore, StoreError
    from .stored_status import StoredStatus
    from .team import Team

#: Where a run lives when `--run` is not given: beside the team, in the current directory.
DEFAULT_RUN_DIR: Final = ".autodev/run"
DB_FILE: Final = "run.db"
LOG_FILE: Final = "autodev.log"
LANES_DIR: Final = "lanes"
#: Whether the run shares its limits, and where (no password): written by the daemon (issue 14).
SHARING_FILE: Final = "sharing.json"
#: `autodev run`'s exit code after SIGTERM (128 + 15, as a shell reports it).
EXIT_TERMINATED: Final = 143
#: `autodev run`'s exit code after SIGHUP, its terminal closed (128 + 1).
EXIT_HANGUP: Final = 129
#: `autodev run`'s exit code when its run store was removed under it (issue 9.6).
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


def run_db(run_dir: Path) -> Path:
    return run_dir / DB_FILE


def open_existing(run_dir: Path) -> RunStore:
    """Open a run's store for a command other than `run` (no integrity scan, no lock)."""
    from .store import RunStore

    path = run_db(run_dir)
    if not path.exists():
        raise AutodevError(
            f"There is no run at {run_dir} (no {DB_FILE}); start one with `autodev run TEAM_DIR "
            f"--run {run_dir}`."
        )
    return RunStore.open(path, check=False)


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

    `share`: a redis:// URL to share limits on (issue 14), overriding the team's `share:`
    setting; only the accounts named under `accounts:` are shared (docs/sharing.md)."""
    import socket

    from autodev_core.control.identity import resolve_active_identity

    from .calls.argv import installed_providers
    from .clock import local_zone
    from .durability import Durability
    from .lanes import Lanes
    from .private import make_private, private_dir
    from .runlock import RunLock
    from .runner import Runner, StreamLog, default_countdown
    from .sharing import share_settings
    from .store import RunStore
    from .team import SETTINGS_FILE

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
    private_dir(run_dir)  # folders made here are 0700 (issue 9 item 8)
    db = run_db(run_dir)
    lock = RunLock.acquire(db, run=run_id)
    restore_sigterm = _raise_on_sigterm()
    try:
        make_private(run_dir)  # run files an older autodev (or another umask) left readable
        from autodev_core.control.mutation import MutationContext, mutation_block_reason

        from .checkpoint import restore_in_progress

        if restore_in_progress(db):  # B10-B11: a restore died half-way; nothing writes now
            blocked = mutation_block_reason("start the run", MutationContext(
                resolve_active_identity(run_id=run_id), restore_lock=True))
            raise AutodevError(f"{blocked} Run `autodev restore --run {run_dir}` again to "
                               "finish it.")
        store = RunStore.open(db, create=True, run_id=run_id, now=clock.now())
        try:
            identity = resolve_active_identity(run_id=store.run_id)
            if not identity.names(run_id):
                raise AutodevError(
                    f"The run store at {db} belongs to run {store.run_id!r}, not {run_id!r}; "
                    "use another --run directory."
                )
            durability = Durability.open(store, identity)
            try:
                log = StreamLog(
                    config.zone,
                    stream=stream if stream is not None else sys.stderr,
                    file=run_dir / LOG_FILE,
                    json_lines=json_lines,
                )
                kwargs = {} if slice_seconds is None else {"slice_seconds": slice_seconds}
                sharing = _open_sharing(sharing_settings, log, clock, run_dir)
                runner = Runner(
                    config=config,
                    store=store,
                    durability=durability,
                    identity=identity,
                    clock=clock,
                    log=log,
                    templates=team.templates,
                    env=env,
                    countdown=None if json_lines else default_countdown(),
                    lanes=Lanes(run_dir / LANES_DIR),
                    prompt_dir=run_dir,
                    sharing=sharing,
                    **kwargs,  # type: ignore[arg-type]
                )
            except (Terminated, KeyboardInterrupt):
                # A signal while the daemon starts, its store open: as clean an end as one
                # in the loop (below); the backup catches up first (B14).
                durability.sync_replicas(now=clock.now(), flush=True)
                raise
            try:
                return runner.run(stop_at=stop_at)
            except (Terminated, KeyboardInterrupt):
                # A shutdown asked for by a signal is a clean one: the backup catches up first
                # (B14; a kill -9 leaves it at most a cadence behind, the store holds it all).
                runner.flush_replicas()
                raise
            finally:
                if sharing is not None:
                    sharing.close()
                log.close()
        finally:
            store.close()
    finally:
        restore_sigterm()
        lock.release()


def _open_sharing(
    settings: ShareSettings | None, log: StreamLog, clock: Clock, run_dir: Path
) -> LimitSharing | None:
    """Connect to the shared registry (issue 14). Redis being down is not an error (the run
    carries on with its own limits and says so); redis-py missing is."""
    from .sharing import LimitSharing

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
    from .clock import ScaledClock, SystemClock
    from .runner import RunFolderGone
    from .team import load_team

    team = load_team(args.team)
    for warning in team.warnings:  # once, as the run starts (C5)
        print(f"autodev: warning: {warning}", file=sys.stderr)
    run_dir = Path(args.run)
    run_id = args.thread or Path(args.team).resolve().name
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


def _ago(then: datetime, now: datetime) -> str:
    from autodev_core.times import format_left

    seconds = (now - then).total_seconds()
    if -1 < seconds < 1:
        return "just now"
    # How long ago, in the units `format_left` writes, rounded down: it rounds time left up
    # (never "0m" while waiting), which would make a heartbeat 61 s old "2m ago".
    whole = int(abs(seconds))
    whole = whole if whole < 60 else whole // 60 * 60
    if seconds < 0:
        # Stamped ahead of this machine's clock: a run on a fast or virtual clock (the demo's)
        # stamps its own time; saying "just now" would hide how far apart the two are.
        return f"{format_left(whole)} ahead of this machine's clock (a fast clock's time)"
    return f"{format_left(whole)} ago"


def status_facts(store: RunStore, now: datetime) -> dict[str, Any]:
    """What `autodev status` knows (C6), as plain values with stable keys (`status --json`):
    the run's status, whether its daemon is alive (its lock, not the heartbeat alone), limits,
    outages, the failure streak, calls, persistence, posts and the heartbeat."""
    return _status(store, now)[0]


def _stored_status(text: str) -> StoredStatus | None:
    """The fields status shows of the stored scheduler state: read from its JSON, without the
    scheduler or cattrs (issue 13); restored in full only when that reading fails, so that the
    restore decides what an older or damaged state shows. None when nothing is stored yet;
    raises when the state cannot be restored."""
    from .stored_status import read_stored_status

    if not text or text == "{}":
        return None
    try:
        return read_stored_status(text)
    except ValueError:
        from autodev_core.scheduler.state import SchedulerState
        from autodev_core.serialization import from_json

        from .stored_status import status_of

        return status_of(from_json(text, SchedulerState))


def _status(store: RunStore, now: datetime) -> tuple[dict[str, Any], tzinfo]:
    """`status_facts`, and the zone status writes its times in (UTC when it has none)."""
    from .status_read import StatusReading

    committed = store.committed_state()
    state: StoredStatus | None = None
    readable = True
    try:
        state = _stored_status(committed.scheduler_state_json)
    except Exception:
        readable = False
    beat = store.last_heartbeat()
    return _facts(StatusReading(
        run_id=store.run_id,
        store=str(store.path),
        state=state,
        readable=readable,
        beat_at=beat.at if beat is not None else None,
        beat_pid=beat.pid if beat is not None else None,
        revision=committed.revision,
        persistence=persistence_text(store),
        posts=store.post_count(),
    ), now)


def _facts(read: StatusReading, now: datetime) -> tuple[dict[str, Any], tzinfo]:
    """`_status` from what was read of the store (by a `RunStore`, or by `status_read` alone),
    with the lock and the sharing file beside it."""
    from .replica_status import replica_facts
    from .runlock import daemon_holding
    from .sharing_status import sharing_facts

    state = read.state
    beat_at = read.beat_at
    stand_in = _lock_time(read.store)
    if beat_at is not None and stand_in is not None and stand_in <= beat_at + timedelta(seconds=2):
        stand_in = None  # only a lock touched after the heartbeat stands in for it
    held, lock_pid = daemon_holding(read.store)
    facts: dict[str, Any] = {
        "run_id": read.run_id,
        "store": read.store,
        "status": state.status if state is not None else "not started",
        "scheduler_state": "unreadable" if not read.readable else ("ok" if state else "none"),
        "daemon": {
            "running": held,
            "pid": lock_pid if held and lock_pid is not None else (
                read.beat_pid if beat_at is not None else lock_pid),
            "last_heartbeat": beat_at.isoformat() if beat_at is not None else None,
            "heartbeat_age_seconds": (
                max((now - beat_at).total_seconds(), 0.0) if beat_at is not None else None),
            "lock_file_time": stand_in.isoformat() if stand_in is not None else None,
        },
        "wait_until": None,
        "due": None,
        "limits": [],
        "outages": [],
        "failure_streak": None,
        "calls": None,
        "usage": [],
        "headroom": None,
        "persistence": {
            "summary": read.persistence,
            "revision": read.revision,
        },
        "posts": read.posts,
        "sharing": sharing_facts(Path(read.store).parent / SHARING_FILE),
        "replicas": replica_facts(read.store, read.revision),
    }
    zone: tzinfo = UTC
    if state is not None:
        from zoneinfo import ZoneInfo

        zone = ZoneInfo(state.timezone)
        facts["wait_until"] = state.wait_until
        facts["due"] = state.due
        facts["limits"] = [
            {"engine": r.engine, "until": r.until, "reported_by": r.source or None}
            for r in state.limits
        ]
        facts["outages"] = [
            {"provider": o.provider, "attempts": o.attempts, "retry_at": o.retry_at}
            for o in state.outages
        ]
        facts["failure_streak"] = state.failures
        facts["calls"] = state.iterations
        facts["headroom"] = (
            {"hand_over_at": state.hand_over_at} if state.hand_over_at is not None else None)
        facts["usage"] = usage_facts(state, now, zone)
    return facts, zone


def usage_facts(state: StoredStatus, now: datetime, zone: tzinfo) -> list[dict[str, Any]]:
    """Issue 25, the forecast: each engine window's last usage reading whose window has not
    reset at `now` (A38), highest first, with the line status prints for it."""
    if not state.readings:
        return []  # (and the scheduler's modules stay unloaded: status starts fast)
    from autodev_core.scheduler.logs import percent, window_name
    from autodev_core.times import clock as clock_text
    from autodev_core.times import format_left

    out = []
    for r in sorted(state.readings, key=lambda r: (-r.utilization, r.engine, r.window)):
        until = datetime.fromisoformat(r.until)
        if now >= until:
            continue
        when = clock_text(until, now, zone)
        left = format_left((until - now).total_seconds())
        said = f"resets {when} (in {left})" if r.read else (
            f"reset not said; counted until {when} (in {left})")
        text = (f"{r.engine} at {percent(r.utilization)}% of its {window_name(r.window)} "
                f"window, {said}")
        near = state.hand_over_at is not None and r.utilization >= state.hand_over_at
        if near:
            text += " — new turns hand over (policy.headroom)"
        if r.source:
            text += f" (reported by {r.source})"
        out.append({
            "engine": r.engine, "window": r.window or None, "utilization": r.utilization,
            "percent": percent(r.utilization), "resets_at": r.until, "reset_read": r.read,
            "in_seconds": int((until - now).total_seconds()), "hands_over": near,
            "reported_by": r.source or None, "forecast": text,
        })
    return out


def status_lines(store: RunStore, now: datetime) -> list[str]:
    """What `autodev status` prints (C6): status, daemon, limits, outages, streak, persistence."""
    facts, zone = _status(store, now)
    return format_status(facts, now, zone)


def format_status(facts: dict[str, Any], now: datetime, zone: tzinfo) -> list[str]:
    """The lines of `autodev status`, from `status_facts`."""
    from autodev_core.times import clock as clock_text
    from autodev_core.times import format_left

    from .replica_status import replica_line
    from .sharing_status import sharing_line

    def at(text: str) -> str:
        return clock_text(datetime.fromisoformat(text), now, zone)

    lines = [f"run: {facts['run_id']} ({facts['store']})"]
    if facts["scheduler_state"] == "unreadable":
        lines.append("scheduler state: unreadable (the daemon rewrites it on its next step)")
    daemon = facts["daemon"]
    status = str(facts["status"])
    if facts["wait_until"] is not None:
        wait = datetime.fromisoformat(facts["wait_until"])
        left = format_left(max((wait - now).total_seconds(), 0))
        status += f" — until {at(facts['wait_until'])} ({left} left)"
    beat = daemon["last_heartbeat"]
    ago = _ago(datetime.fromisoformat(beat), now) if beat is not None else "never"
    if not daemon["running"] and facts["status"] not in ("stopped", "not started"):
        pid = f"daemon pid {daemon['pid']} is gone" if daemon["pid"] else "no daemon"
        status = f"not running ({pid}; last heartbeat {ago}); last status: {status}"
    lines.append(f"status: {status}")
    if daemon["running"]:
        lines.append(f"daemon: running (pid {daemon['pid']})")
    else:
        lines.append("daemon: not running")
    if facts["due"] is not None:
        lines.append(f"due: {facts['due']}")
    for record in facts["limits"]:
        peer = f" (reported by {record['reported_by']})" if record.get("reported_by") else ""
        lines.append(f"limit: {record['engine']} until {at(record['until'])}{peer}")
    for reading in facts.get("usage") or ():
        lines.append(f"usage: {reading['forecast']}")  # issue 25
    for outage in facts["outages"]:
        lines.append(
            f"outage: {outage['provider']} unreachable ({outage['attempts']} tries); "
            f"next try at {at(outage['retry_at'])}"
        )
    if facts["failure_streak"] is not None:
        lines.append(f"failure streak: {facts['failure_streak']}")
        lines.append(f"calls: {facts['calls']}")
    lines.append(sharing_line(facts.get("sharing")))
    persistence = facts["persistence"]
    lines.append(
        f"persistence: {persistence['summary']}; store at revision {persistence['revision']}"
    )
    replicas = facts.get("replicas")
    if replicas is not None:
        written = replicas["checkpoint"]["written_at"]
        lines.append(replica_line(replicas, _ago(datetime.fromisoformat(written), now)
                                  if written is not None else None, running=daemon["running"]))
    lines.append(f"posts: {facts['posts']}")
    stand_in = daemon.get("lock_file_time")
    gone = "" if daemon["running"] else ", not running"
    if beat is not None and stand_in is not None:
        # The daemon could not write its heartbeat (a full disk) and touched its lock instead.
        lines.append(f"heartbeat: {_ago(datetime.fromisoformat(stand_in), now)} (pid "
                     f"{daemon['pid']}{gone}; the store could not take it, the lock file's time "
                     "stands in)")
    elif beat is None:
        lines.append("heartbeat: none yet")
    else:
        lines.append(f"heartbeat: {ago} (pid {daemon['pid']}{gone})")
    return lines


def _lock_time(db: str) -> datetime | None:
    from .runlock import lock_path

    try:
        return datetime.fromtimestamp(lock_path(db).stat().st_mtime, UTC)
    except OSError:
        return None


def store_identity(store: RunStore) -> RunIdentity:
    """The run a store belongs to, with every id it knows the run by (B1, B3)."""
    from autodev_core.control.identity import resolve_active_identity

    return resolve_active_identity(run_id=store.run_id, integrity_id=store.integrity_id,
                                   aliases=store.aliases())


def persistence_text(store: RunStore) -> str:
    """The persistence line of `autodev status` (C6), from the same facts and the same core
    planner the daemon starts from (`read_on_disk`: the committed state settled by B8 with the
    marker, under B3 equivalence, and the shadow copy's revisions)."""
    from autodev_core.control.persistence import describe_persistence

    from .on_disk import read_on_disk

    try:
        disk = read_on_disk(store, store_identity(store))
    except Exception as exc:
        # Only a shadow copy on disk loads the checkpoint module: its errors are known then.
        from .checkpoint import ReplicaFileError

        if isinstance(exc, ReplicaFileError):
            return f"{exc} (the store alone: revision {store.revision})"
        # An unreadable committed state: the daemon rewrites it on its next step.
        return "the committed persistence state is unreadable"
    text = describe_persistence(disk.state)
    if disk.pending:
        text += (f"; revisions {_span([p.revision for p in disk.pending])} only in the shadow "
                 "copy, not yet in the store")
    if disk.foreign:
        runs = ", ".join(sorted({repr(p.run_id) for p in disk.foreign}))
        text += f"; the shadow copy keeps {len(disk.foreign)} revisions of other runs ({runs})"
    if disk.dropped:
        text += f"; the shadow copy was full and left out {len(disk.dropped)} revisions"
    return text


def _span(revisions: list[int]) -> str:
    return str(revisions[0]) if len(revisions) == 1 else f"{revisions[0]}-{revisions[-1]}"


def status_report(run_dir: Path, *, now: datetime | None = None,
                  open_store: Callable[[Path], RunStore] | None = None,
                  read_only: bool = False) -> tuple[dict[str, Any], tzinfo, datetime]:
    """What `autodev status` shows of the run in `run_dir` (C6): its facts, the zone it writes
    times in and the instant it read them at. `autodev status` and the panel's `/api/status`
    (issue 23) both call this, so the two cannot differ. `open_store` opens the store for the
    full path (default `open_existing`); `read_only` reads the fast path through a
    `mode=ro` connection (the panel never opens the store for writing)."""
    from .status_read import read_status

    db = run_db(run_dir)
    try:
        # What a run normally holds is read with sqlite3 and json alone (no attrs, no planner:
        # issue 13); anything else through a `RunStore` and the core, which decide.
        read = read_status(db, read_only=True) if read_only else read_status(db)
        if read is not None:
            now = now or datetime.now(UTC)
            facts, zone = _facts(read, now)
        else:
            store = (open_store or open_existing)(run_dir)
            try:
                now = now or datetime.now(UTC)
                facts, zone = _status(store, now)
            finally:
                store.close()
    except (ValueError, TypeError) as exc:
        # A value changed by hand in the store (a time without its offset, a garbage date):
        # status only reads, so it says which file holds it, in one line, and changes nothing.
        from .store import StoreError
        from .store_diagnose import first_unreadable

        where = first_unreadable(db)
        what = f"{where} ({exc})" if where else f"a value status cannot read ({exc})"
        raise StoreError(f"{db}: {what}; status changed nothing", path=db,
                         kind="read-failed") from None
    return facts, zone, now


def status_json(facts: dict[str, Any]) -> str:
    """`autodev status --json`'s text (without the newline `print` adds)."""
    return json.dumps(facts, indent=2, sort_keys=True)


def cmd_status(args: argparse.Namespace | SimpleNamespace) -> int:
    facts, zone, now = status_report(Path(args.run))
    text = (status_json(facts) if getattr(args, "json", False)
            else "\n".join(format_status(facts, now, zone)))
    print(text)
    return 0


def cmd_team_edit(args: argparse.Namespace) -> int:
    """A14: print the path of the participant's file."""
    from .team import load_team

    team = load_team(args.team)
    print(team.file_of(args.id).resolve())
    return 0


def cmd_lane(args: argparse.Namespace) -> int:
    """C8: print a participant's lane (the raw output of its CLI calls)."""
    from .lanes import Lanes

    try:
        text = Lanes(Path(args.run) / LANES_DIR).read(args.id)
    except ValueError as exc:  # a malformed id: a user mistake, said in one sentence
        raise AutodevError(str(exc)) from None
    sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")
    return 0


def cmd_panel(args: argparse.Namespace) -> int:
    """`autodev panel`: serve the run's panel in a browser (issue 23, docs/panel.md)."""
    try:
        import jinja2  # noqa: F401
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        from .panel import MISSING_EXTRA

        print(f"autodev: {MISSING_EXTRA}", file=sys.stderr)
        return 2
    from .panel import serve

    return serve(Path(args.run), team_dir=args.team, host=args.host, port=args.port,
                 read_only=args.read_only)


def restore_hint(error: StoreError) -> str:
    """For a corrupt store: what the checkpoint can do about it, as the core's audit allows
    (B14). Empty when there is nothing to offer."""
    from .checkpoint import offer_restore

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
    from .checkpoint import restore_from_checkpoint

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

    def with_run(parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--run",
            default=DEFAULT_RUN_DIR,
            metavar="DIR",
            help=f"the run's directory (default {DEFAULT_RUN_DIR})",
        )

    run = commands.add_parser("run", help="run a team of participant files on a thread")
    run.add_argument("team", metavar="TEAM_DIR", help="directory of participant .md files")
    with_run(run)
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

    status = commands.add_parser("status", help="show status, limits, outages, persistence")
    with_run(status)
    status.add_argument("--json", action="store_true", help="the same facts as one JSON object")
    status.set_defaults(handler=cmd_status)

    for name, text in (
        ("stop", "stop the run"),
        ("pause", "pause the run"),
        ("resume", "resume a paused run"),
    ):
        sub = commands.add_parser(name, help=text)
        with_run(sub)
        sub.set_defaults(handler=cmd_control)
    say = commands.add_parser("say", help="post a user message to the thread")
    say.add_argument("message", nargs="+", help="the message; - reads it from standard input")
    with_run(say)
    say.set_defaults(handler=cmd_control)

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
    with_run(restore)
    restore.set_defaults(handler=cmd_restore)

    lane = commands.add_parser("lane", help="print a participant's lane")
    lane.add_argument("id", help="participant id")
    with_run(lane)
    lane.set_defaults(handler=cmd_lane)

    panel = commands.add_parser(
        "panel", help="watch and steer the run in a browser (needs autodev[panel])",
        description="Serve one run's panel: status, participants, limits, the thread, lanes, "
        "controls and prompt editing. Prints one URL with a one-time token and runs until "
        "Ctrl-C. docs/panel.md.")
    with_run(panel)
    panel.add_argument("--team", default=None, metavar="TEAM_DIR",
                       help="the team folder, for editing prompts (off without it)")
    panel.add_argument("--host", default="127.0.0.1",
                       help="the address to listen on (default 127.0.0.1; any other prints a "
                       "warning)")
    panel.add_argument("--port", type=int, default=0,
                       help="the port (default 0: a free one)")
    panel.add_argument("--read-only", action="store_true",
                       help="watch only: no controls, no prompt editing, no POST route")
    panel.set_defaults(handler=cmd_panel)
