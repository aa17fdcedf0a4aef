"""`autodev limits`: see every limit and outage a run holds, and lift one by hand
(docs/cli.md, "See and undo a limit").

`autodev limits --run DIR` lists them: the engine (or provider), until when and in how long,
where the time came from (read from the notice, or the A6 default standing in for a notice that
named none), when the notice was seen, and whose it is (this run's own, or reported by another
run sharing the account, docs/sharing.md). `autodev limits clear ENGINE --run DIR` queues a
`clear` for the daemon through the control queue, as `autodev say` queues a message; the daemon
writes `<engine> limit cleared by hand — …` and decides afresh (`LimitCleared`).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autodev_core.errors import AutodevError

from ..store.folder import open_existing, queue_clear

if TYPE_CHECKING:
    import argparse

    from autodev_core.scheduler import SchedulerState


def limit_facts(state: SchedulerState, now: datetime) -> list[dict[str, Any]]:
    """Every limit and outage of `state`, as plain values (`autodev limits --json`): limits by
    engine, then outages by provider, each with `until` as ISO 8601 and whether it has passed
    (A23: a passed limit leaves the registry at the next turn start)."""
    facts: list[dict[str, Any]] = []
    for record in state.limits:
        facts.append({
            "kind": "limit",
            "engine": str(record.engine),
            "until": record.until.isoformat(),
            "passed": record.until <= now,
            "read": record.read,
            "seen": record.seen.isoformat() if record.seen is not None else None,
            "shared": bool(record.source),
            "reported_by": record.source or None,
        })
    for outage in state.outages:
        facts.append({
            "kind": "outage",
            "engine": outage.provider,
            "until": outage.retry_at.isoformat(),
            "passed": outage.retry_at <= now,
            "read": None,
            "seen": None,
            "shared": False,
            "reported_by": None,
            "attempts": outage.attempts,
        })
    return facts


def limit_lines(facts: list[dict[str, Any]], now: datetime, zone: tzinfo) -> list[str]:
    """The lines `autodev limits` prints, one per limit or outage, in the run's zone."""
    from autodev_core.times import clock, format_left

    if not facts:
        return ["no limits and no outages: every engine of the run is free"]
    width = max(len(fact["engine"]) for fact in facts)
    lines = []
    for fact in facts:
        until = datetime.fromisoformat(fact["until"])
        left = (until - now).total_seconds()
        when = (f"{clock(until, now, zone)} (in {format_left(left)})" if left > 0
                else f"{clock(until, now, zone)} (passed: lifted at the next turn start)")
        name = fact["engine"].ljust(width)
        if fact["kind"] == "outage":
            tries = fact["attempts"]
            lines.append(f"{name}  unreachable, next try at {when}; after {tries} "
                         f"failed {'try' if tries == 1 else 'tries'}; this run's own")
            continue
        seen = fact["seen"]
        at = f" seen at {clock(datetime.fromisoformat(seen), now, zone)}" if seen else ""
        source = (f"from the notice{at}" if fact["read"]
                  else f"the default wait: the notice{at} named no reset (A6)")
        whose = (f"shared, reported by {fact['reported_by']}" if fact["shared"]
                 else "this run's own")
        lines.append(f"{name}  limited until {when}; {source}; {whose}")
    return lines


def _state(run_dir: Path) -> tuple[SchedulerState | None, tzinfo]:
    """The run's committed scheduler state and its zone (None: not started yet)."""
    from autodev_core.scheduler import SchedulerState
    from autodev_core.serialization import from_json

    store = open_existing(run_dir)
    try:
        text = store.committed_state().scheduler_state_json
    finally:
        store.close()
    if not text or text == "{}":
        return None, UTC
    try:
        state = from_json(text, SchedulerState)
    except Exception as exc:  # a state edited by hand: one line, never a traceback
        raise AutodevError(f"{run_dir}: the run's scheduler state cannot be read ({exc})") from None
    return state, state.config.zone


def cmd_limits(args: argparse.Namespace) -> int:
    """`autodev limits [clear ENGINE] --run DIR`."""
    words = list(args.words)
    run_dir = Path(args.run)
    if words and words[0] == "clear":
        if len(words) != 2:
            raise AutodevError("`autodev limits clear` needs one engine, e.g. "
                               "autodev limits clear codex --run DIR.")
        queue_clear(run_dir, words[1])
        print(f"clear {words[1].strip()}: queued for the run at {args.run}")
        return 0
    if words:
        raise AutodevError(f"autodev limits: unknown word {words[0]!r}; `autodev limits` lists, "
                           "`autodev limits clear ENGINE` lifts one.")
    state, zone = _state(run_dir)
    now = datetime.now(UTC)
    facts = limit_facts(state, now) if state is not None else []
    if args.json:
        print(json.dumps(facts, indent=2, sort_keys=True))
    elif state is None:
        print("the run has not started: no limits and no outages")
    else:
        print("\n".join(limit_lines(facts, now, zone)))
    return 0


def add_limits(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `autodev limits` on the CLI's parser."""
    from ..store.folder import DEFAULT_RUN_DIR

    limits = commands.add_parser(
        "limits", help="list limits and outages; `limits clear ENGINE` lifts one by hand",
        description="List every limit and outage the run holds (engine, until, read from "
        "which notice, this run's or shared), or lift one by hand: `autodev limits clear "
        "ENGINE` queues it for the daemon, as `autodev say` does. docs/cli.md.")
    limits.add_argument("words", nargs="*", metavar="clear ENGINE",
                        help="`clear ENGINE`: lift ENGINE's limit (a provider alone: its "
                        "outage too)")
    limits.add_argument("--run", default=DEFAULT_RUN_DIR, metavar="DIR",
                        help=f"the run's directory (default {DEFAULT_RUN_DIR})")
    limits.add_argument("--json", action="store_true", help="the list as JSON")
    limits.set_defaults(handler=cmd_limits)
