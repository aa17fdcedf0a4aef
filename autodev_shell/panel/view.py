"""What the page shows of a run's state (docs/panel.md), as one JSON value: the `status` event.

Every value is the core's or the shell's as `autodev status` reads it: `facts` is exactly
`status --json`'s object (`status.report.status_report`); the participants, limits and outages come
from the committed scheduler state restored by the core's converter; the persistence line and
the turn gate are the core's words. This module only arranges them and writes instants as
`clock` text in the run's zone (A: `HH:MM`, the zone's abbreviation beside it); the page ticks
the time left from the UTC instants.
"""

from __future__ import annotations

from datetime import datetime, tzinfo
from typing import TYPE_CHECKING, Any

from autodev_core.names import PAUSE_NEEDS
from autodev_core.scheduler import next_entries
from autodev_core.times import clock as clock_text

if TYPE_CHECKING:
    from autodev_core.scheduler.state import SchedulerState


def at_text(when: datetime, now: datetime, zone: tzinfo) -> str:
    """`14:30 WEST` (or `2026-12-06 14:30 WEST` on another day), as status writes times."""
    local = when.astimezone(zone)
    return f"{clock_text(when, now, zone)} {local.tzname() or ''}".rstrip()


def _utc(when: datetime) -> str:
    from datetime import UTC

    return when.astimezone(UTC).isoformat().replace("+00:00", "Z")


def participants(state: SchedulerState, now: datetime) -> list[dict[str, Any]]:
    """Each participant: the engine it runs on now (its seat), its failover chain with each
    entry's limit or outage and the next candidate (the core's `next_entries`: A23/A24, the
    first entry neither limited nor unreachable now), its place, its empty turns (A31)."""
    config = state.config
    limited = {str(r.engine) for r in state.limits if r.until > now}
    out = {o.provider for o in state.outages if o.retry_at > now}
    people = []
    in_call = state.call.participant if state.call is not None else None
    for index, (member, next_entry) in enumerate(zip(config.team, next_entries(state, now),
                                                     strict=True)):
        lane = config.lanes[index]
        seat = state.seats[index] if index < len(state.seats) else 0
        chain: list[dict[str, Any]] = [
            {"engine": str(engine), "position": position, "limited": str(engine) in limited,
             "unreachable": engine.provider in out}
            for position, engine in enumerate(lane)
        ]
        if next_entry is not None:
            chain[next_entry]["next"] = True
        people.append({
            "id": member.id,
            "engine": str(lane[seat]) if seat < len(lane) else str(member.primary),
            "seat": seat,
            "lane_entries": len(lane),
            "chain": chain,
            "next": next_entry,
            "due": state.due == index,
            "in_call": in_call == member.id,
            "empty_turns": state.empties[index] if index < len(state.empties) else 0,
            "gate": member.id in state.gates,
        })
    return people


def _notice(lines: list[str], engine: str) -> str | None:
    """The run log's last line saying `engine` is limited (the core's own words, A8/A11)."""
    needle = f"{engine} limited"
    for line in reversed(lines):
        if needle in line:
            return line
    return None


def limits(state: SchedulerState, now: datetime, zone: tzinfo,
           log_lines: list[str]) -> list[dict[str, Any]]:
    """Each limit of the registry in force at `now`: its reset as a UTC instant and as clock
    text, where the reset came from (the CLI's notice, the default wait of A6, or another run
    sharing the account), the log line that set it and the participants whose lanes hold the
    call."""
    found = []
    for record in state.limits:
        if record.until <= now:
            continue
        engine = str(record.engine)
        if record.source:
            origin = f"reported by {record.source} (limits shared with --share)"
        elif record.read:
            origin = "read from the CLI's notice"
        else:
            origin = "not said by the CLI: the default wait (A6)"
        lanes = [m.id for i, m in enumerate(state.config.team)
                 if record.engine in state.config.lanes[i]]
        found.append({
            "engine": engine,
            "until": _utc(record.until),
            "back_at": f"back at {at_text(record.until, now, zone)}",
            "origin": origin,
            "shared": bool(record.source),
            "reported_by": record.source or None,
            "notice": _notice(log_lines, engine),
            "lanes": lanes,
        })
    return found


def outages(state: SchedulerState, now: datetime, zone: tzinfo) -> list[dict[str, Any]]:
    return [{
        "provider": o.provider,
        "attempts": o.attempts,
        "retry_at": _utc(o.retry_at),
        "back_at": f"next try at {at_text(o.retry_at, now, zone)}",
    } for o in state.outages]


def engines(state: SchedulerState, now: datetime, zone: tzinfo, limit_view: list[dict[str, Any]],
            people: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The engines view (issue 41 item 2): one row per engine of the team's lanes, in lane
    order: its state (`limited` until when, `unreachable` while its provider is out, else
    `free`), where a limit's reset came from, its notice, who runs on it now (their seat) and
    whose chains hold it, shared or this run's own. A limit belongs to an engine: it is said
    here once, and the participants' cards point here."""
    seen: list[str] = []
    for lane in state.config.lanes:
        for engine in lane:
            if str(engine) not in seen:
                seen.append(str(engine))
    by_engine = {lim["engine"]: lim for lim in limit_view}
    out = {o.provider: o for o in state.outages if o.retry_at > now}
    rows = []
    for name in seen:
        limit = by_engine.get(name)
        provider = name.split(":", 1)[0].split("@", 1)[0]
        outage = out.get(provider)
        row: dict[str, Any] = {
            "engine": name,
            "state": "limited" if limit else ("unreachable" if outage else "free"),
            "runs_on_it": [p["id"] for p in people if p["engine"] == name],
            "in_chains_of": [p["id"] for p in people
                             if any(c["engine"] == name for c in p["chain"])],
            "limit": limit,
            "outage": None,
        }
        if outage is not None:
            row["outage"] = {"until": _utc(outage.retry_at), "attempts": outage.attempts,
                             "back_at": f"next try at {at_text(outage.retry_at, now, zone)}"}
        rows.append(row)
    return rows


def first_line(view: dict[str, Any], state: SchedulerState | None) -> dict[str, Any]:
    """What the run does now and what it waits for, in one line (issue 41 item 2): `text`, and
    `until`/`back_at` when there is a time to count down to (the page ticks it)."""
    status = view["status"]
    if status == "not running":
        return {"text": f"Not running: {view['status_note']}.", "until": None}
    if status in ("stopped", "not started"):
        return {"text": "Stopped: autodev run starts it again." if status == "stopped"
                else "Not started yet.", "until": None}
    if status == "paused":
        reason = view.get("paused_for")
        if reason == "login":  # A32
            return {"text": "Paused — login needed: run claude /login, then Resume (or "
                    "autodev resume).", "until": None}
        said = f" — {PAUSE_NEEDS[reason]}" if reason in PAUSE_NEEDS else ""
        return {"text": f"Paused{said}: Resume (or autodev resume) lets it go on.",
                "until": None}
    if state is not None and state.call is not None:
        return {"text": f"{state.call.participant} is in a call on {state.call.engine}.",
                "until": None}
    wait = view.get("wait_until")
    limited = [e for e in view.get("engines") or () if e["state"] == "limited"]
    if status == "rate_limited" and limited:
        first = min(limited, key=lambda e: e["limit"]["until"])
        return {"text": f"Waiting for {first['engine']} — every engine a turn can take is "
                f"limited;", "until": first["limit"]["until"],
                "back_at": first["limit"]["back_at"]}
    if status == "unreachable":
        down = [e for e in view.get("engines") or () if e["outage"]]
        if down:
            return {"text": f"Waiting for {down[0]['engine']}'s servers;",
                    "until": down[0]["outage"]["until"], "back_at": down[0]["outage"]["back_at"]}
    if status == "backing_off" and wait:
        return {"text": f"Backing off after {view.get('failure_streak')} failed calls;",
                "until": wait["until"], "back_at": wait["back_at"].replace("until", "next try at")}
    if wait:
        return {"text": "Waiting;", "until": wait["until"], "back_at": wait["back_at"]}
    due = [p for p in view.get("participants") or () if p["due"]]
    if due:
        return {"text": f"Running: {due[0]['id']}'s turn is due, on {due[0]['engine']}.",
                "until": None}
    return {"text": f"{status.capitalize()}.", "until": None}


def _gone_note(daemon: dict[str, Any], status: str) -> str:
    """`autodev status`'s words for a run whose daemon is gone: "daemon pid 41 is gone; last
    status: running"."""
    who = f"daemon pid {daemon['pid']} is gone" if daemon["pid"] else "no daemon"
    return f"{who}; last status: {status}"


def status_view(facts: dict[str, Any], now: datetime, zone: tzinfo,
                state: SchedulerState | None, gate: str, log_lines: list[str]) -> dict[str, Any]:
    """The `status` event: `facts` as `status --json` prints them, and the page's view."""
    daemon = facts["daemon"]
    gone = not daemon["running"] and facts["status"] not in ("stopped", "not started")
    view: dict[str, Any] = {
        # As `autodev status` says it: a stored "running" with no daemon holding the lock (a
        # kill -9, a crash) is "not running", the stored word kept as the last status.
        "status": "not running" if gone else facts["status"],
        "last_status": facts["status"] if gone else None,
        "status_note": _gone_note(daemon, str(facts["status"])) if gone else "",
        "paused_for": facts.get("paused_for"),  # why it is paused (status --json's)
        "daemon_running": bool(daemon["running"]),
        "daemon": "daemon running" if daemon["running"] else "daemon not running",
        "pid": daemon["pid"],
        "heartbeat": daemon["last_heartbeat"],
        "revision": facts["persistence"]["revision"],
        "persistence": facts["persistence"]["summary"],
        "gate": gate,
        "posts": facts["posts"],
        "zone": getattr(zone, "key", "UTC"),
        "wait_until": None,
        "participants": [],
        "limits": [],
        "outages": [],
        "engines": [],
        "usage": [u["forecast"] for u in facts.get("usage") or ()],
        "failure_streak": facts["failure_streak"],
        "calls": facts["calls"],
        "now": _utc(now),
    }
    if facts["wait_until"] and not gone:
        until = datetime.fromisoformat(facts["wait_until"])
        view["wait_until"] = {"until": _utc(until),
                              "back_at": f"until {at_text(until, now, zone)}"}
    if state is not None:
        view["participants"] = participants(state, now)
        if not daemon["running"]:
            for person in view["participants"]:
                person["in_call"] = False  # the call ended with its daemon
        view["limits"] = limits(state, now, zone, log_lines)
        view["outages"] = outages(state, now, zone)
        view["engines"] = engines(state, now, zone, view["limits"], view["participants"])
    view["usage_windows"] = [str(w.get("line", "")) for w in facts.get("usage_windows") or ()
                             if isinstance(w, dict)]
    view["first_line"] = first_line(view, state)
    view["needs_you"] = needs_you(view, facts)
    return {"facts": facts, "view": view}


def needs_you(view: dict[str, Any], facts: dict[str, Any]) -> str:
    """Why the run needs its operator now, in a few words ("" when it does not): what the tab's
    title badge and the optional browser notification say (issue 41 item 4)."""
    status = view["status"]
    if status == "not running":
        return "the daemon is gone"
    if status == "stopped":
        return "the run stopped"
    if status == "paused":  # with its reason: "paused — login needed" (A32)
        reason = facts.get("paused_for")
        return f"paused — {PAUSE_NEEDS[reason]}" if reason in PAUSE_NEEDS else "the run is paused"
    if status == "rate_limited":
        return "every participant is limited"
    sharing = facts.get("sharing")
    if isinstance(sharing, dict) and sharing.get("state") not in (None, "on"):
        return "limit sharing is lost"
    return ""
