"""What `autodev status` shows (SPEC C6, B1-B9, A19, A23): the facts of a run folder as plain
values with stable keys (`status --json`), and the lines they are written as. `autodev status` and
the panel's `/api/status` (docs/panel.md) both call `status_report`, so the two cannot differ.

What a run normally holds is read with sqlite3 and json alone (`read.py`, no attrs, no planner:
docs/performance.md); anything else through a `RunStore` and the core, which decide.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..store.folder import SHARING_FILE, open_existing, run_db

if TYPE_CHECKING:
    from autodev_core.control.identity import RunIdentity

    from ..store.run_store import RunStore
    from .read import StatusReading
    from .stored import StoredStatus


#: What `autodev status` says after `paused`, for each reason (`SchedulerState.paused_for`;
#: docs/cli.md). A state saved before reasons were kept says plain `paused`.
PAUSE_LINES: dict[str, str] = {
    "login": "claude needs a login (`claude /login`), then `autodev resume`",  # A32
    "empty": "turns ended without a post (the log names who); `autodev resume` to try "
             "again",  # A31
    "failures": "gave up after failed attempts in a row (the log says what failed); "
                "`autodev resume` to try again",  # A29
    "operator": "by `autodev pause` (or the panel); `autodev resume` to go on",
}


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
    scheduler or cattrs (cold start); restored in full only when that reading fails, so that the
    restore decides what an older or damaged state shows. None when nothing is stored yet;
    raises when the state cannot be restored."""
    from .stored import read_stored_status

    if not text or text == "{}":
        return None
    try:
        return read_stored_status(text)
    except ValueError:
        from autodev_core.scheduler.state import SchedulerState
        from autodev_core.serialization import from_json

        from .stored import status_of

        return status_of(from_json(text, SchedulerState))


def _status(store: RunStore, now: datetime) -> tuple[dict[str, Any], tzinfo]:
    """`status_facts`, and the zone status writes its times in (UTC when it has none)."""
    from .read import StatusReading

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


# Long as the `--json` object is: one key after another, in the order documented.
def _facts(read: StatusReading, now: datetime) -> tuple[dict[str, Any], tzinfo]:
    """`_status` from what was read of the store (by a `RunStore`, or by `status_read` alone),
    with the lock and the sharing file beside it."""
    from ..store.runlock import daemon_holding
    from .replica_status import replica_facts
    from .sharing import sharing_facts

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
        # Why it is paused (A29, A31, A32, or the operator's pause); None otherwise.
        "paused_for": state.paused_for if state is not None else None,
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
        "usage_windows": [],
        "headroom": None,
        "persistence": {
            "summary": read.persistence,
            "revision": read.revision,
        },
        "posts": read.posts,
        "sharing": sharing_facts(Path(read.store).parent / SHARING_FILE, running=held),
        "team_edit": _refused_edit(Path(read.store).parent),  # docs/participants.md
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
        if state.series:  # docs/limits.md "Forecast" (issue 37): a display, never a decision
            from .usage_forecast import forecast_lines

            facts["usage_windows"] = forecast_lines(state.series, now, zone,
                                                    state.hand_over_at)
    return facts, zone


def usage_facts(state: StoredStatus, now: datetime, zone: tzinfo) -> list[dict[str, Any]]:
    """The forecast (docs/limits.md): each engine window's last usage reading whose window has not
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


# Long as the status page is: one line of output after another, in the order printed.
def format_status(facts: dict[str, Any], now: datetime, zone: tzinfo) -> list[str]:
    """The lines of `autodev status`, from `status_facts`."""
    from autodev_core.times import clock as clock_text
    from autodev_core.times import format_left

    from .replica_status import replica_line
    from .sharing import sharing_line

    def at(text: str) -> str:
        return clock_text(datetime.fromisoformat(text), now, zone)

    lines = [f"run: {facts['run_id']} ({facts['store']})"]
    if facts["scheduler_state"] == "unreadable":
        lines.append("scheduler state: unreadable (the daemon rewrites it on its next step)")
    daemon = facts["daemon"]
    status = str(facts["status"])
    said = PAUSE_LINES.get(str(facts.get("paused_for")))
    if status == "paused" and said:
        status += f" — {said}"
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
        lines.append(f"usage: {reading['forecast']}")  # docs/limits.md
    for window in facts.get("usage_windows") or ():
        lines.append(f"forecast: {window['line']}")  # docs/limits.md "Forecast"
    for outage in facts["outages"]:
        lines.append(
            f"outage: {outage['provider']} unreachable ({outage['attempts']} tries); "
            f"next try at {at(outage['retry_at'])}"
        )
    if facts["failure_streak"] is not None:
        lines.append(f"failure streak: {facts['failure_streak']}")
        lines.append(f"calls: {facts['calls']}")
    lines.append(sharing_line(facts.get("sharing")))
    if facts.get("team_edit"):
        lines.append(f"team edit refused: {facts['team_edit']}; the run goes on with the last "
                     "good team")
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


def _refused_edit(run_dir: Path) -> str | None:
    """The team edit the daemon refused (docs/participants.md, Editing a running team)."""
    from ..store.folder import TEAM_EDIT_FILE

    try:
        text = (run_dir / TEAM_EDIT_FILE).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text or None


def _lock_time(db: str) -> datetime | None:
    from ..store.runlock import lock_path

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

    from ..durability.on_disk import read_on_disk

    try:
        disk = read_on_disk(store, store_identity(store))
    except Exception as exc:
        # Only a shadow copy on disk loads the checkpoint module: its errors are known then.
        from ..durability.files import ReplicaFileError

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
    (docs/panel.md) both call this, so the two cannot differ. `open_store` opens the store for the
    full path (default `open_existing`); `read_only` reads the fast path through a
    `mode=ro` connection (the panel never opens the store for writing)."""
    from .read import read_status

    db = run_db(run_dir)
    try:
        # What a run normally holds is read with sqlite3 and json alone (no attrs, no planner:
        # docs/performance.md); anything else through a `RunStore` and the core, which decide.
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
        from ..store.diagnose import first_unreadable
        from ..store.run_store import StoreError

        where = first_unreadable(db)
        what = f"{where} ({exc})" if where else f"a value status cannot read ({exc})"
        raise StoreError(f"{db}: {what}; status changed nothing", path=db,
                         kind="read-failed") from None
    return facts, zone, now


def status_json(facts: dict[str, Any]) -> str:
    """`autodev status --json`'s text (without the newline `print` adds)."""
    return json.dumps(facts, indent=2, sort_keys=True)
