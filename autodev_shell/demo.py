"""`autodev demo`: a bundled team of stand-in CLIs run through the real shell (SPEC C6).

Three participants — ana on claude (chain: codex), rui on codex, eva on agy — take turns on a
thread. The stand-ins are real subprocesses that print the real
CLIs' formats: a claude `rate_limit_event` (rejected), a codex outage, an agy crash, codex and agy
usage notices. The real loop, the real SQLite store, checkpoint and sleeper run on a clock going
`DEMO_SPEED` times faster than real time, so three hours of a run pass in well under a minute
and a newcomer sees hops, handovers, an outage with its retries, backoff, a wait with every
participant limited, limits lifting, and the persistence state at the end — with no account.
"""

from __future__ import annotations

import shlex
import sys
import tempfile
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final, TextIO

from autodev_core.scheduler import SchedulerState
from autodev_core.scheduler.logs import clock as clock_text
from autodev_core.serialization import from_json

from .clock import ScaledClock, local_zone
from .commands import LOG_FILE, run_db, start_run, status_lines, zone_name
from .runner import RunSummary
from .standins import install_standins, standin_env, write_script
from .store import RunStore
from .team import load_team

#: Virtual seconds per real second: three virtual hours take about 18 real seconds.
DEMO_SPEED: Final = 600.0
#: How much virtual time the demo runs.
DEMO_SPAN: Final = timedelta(hours=3)

TEAM: Final = {
    "ana.md": "---\nprovider: claude\nmodel: opus\nfailover: [codex]\n---\n"
    "You are Ana, the reviewer. Read the latest change and review it.\n",
    "rui.md": "---\nprovider: codex\n---\nYou are Rui, the implementer. Write the next patch.\n",
    "eva.md": "---\nprovider: agy\n---\n"
    "You are Eva, the tester. Write tests for the latest patch.\n",
}
#: Turn order (A33): the team's `autodev.yaml` names it.
ORDER: Final = ("ana", "rui", "eva")


def demo_script(start: datetime) -> dict[str, Any]:
    """The stand-ins' answers: per CLI a queue, then posts (see `standins._standin`)."""
    # Far enough out that codex and agy are limited before claude comes back, however long
    # the stand-ins take on a loaded machine (each real second is many virtual minutes): the
    # run then waits with nothing able to run (A18). At 50 minutes that wait was a race.
    claude_reset = int((start + timedelta(minutes=75)).timestamp())
    return {
        "claude": [
            {"kind": "limit", "resets_at": claude_reset},  # A2: a rejected rate_limit_event
            {"kind": "post", "post": "Review: the patch reads well; one nit on naming."},
        ],
        "codex": [
            {"kind": "network"},  # A26: codex cannot reach its servers
            {"kind": "post", "post": "Patch: retry the flaky upload with a bounded backoff."},
            {"kind": "post", "post": "Patch: rename the helper as the review asked."},
            {
                "kind": "limit",
                "notice": "You've hit your usage limit. Upgrade to Pro or try again in 25 minutes.",
            },  # A3: a relative reset
        ],
        "agy": [
            {"kind": "crash"},  # A28: a failed call backs off
            {"kind": "post", "post": "Tests: three cases for the upload retry, all green."},
            {"kind": "limit", "notice": "Individual quota reached. Resets in 30m."},  # A4
        ],
        "default": {"kind": "post", "post": "Done: the next small step is in."},
    }


def _write_team(team_dir: Path) -> None:
    team_dir.mkdir(parents=True, exist_ok=True)
    for name, text in TEAM.items():
        (team_dir / name).write_text(text, encoding="utf-8")
    (team_dir / "autodev.yaml").write_text(
        "# The demo's run settings: the stand-ins answer at once, so calls time out quickly.\n"
        f"order: [{', '.join(ORDER)}]\n"
        "commands:\n  claude: {timeout: 20}\n  codex: {timeout: 20}\n  agy: {timeout: 20}\n",
        encoding="utf-8",
    )


def _command_name() -> str:
    """How the user called autodev (`.venv/bin/autodev` after the README's first command), so
    the commands the demo suggests work as printed."""
    called = sys.argv[0] if sys.argv else ""
    if Path(called).name == "autodev":
        return shlex.quote(called)
    return "autodev"


def summary_lines(
    summary: RunSummary,
    lines: list[tuple[datetime, str]],
    run_dir: Path,
    store_status: list[str],
    calls: int | None = None,
) -> list[str]:
    """What the demo prints at the end: posts per participant and engine, hops, waits.

    `calls` is the count `autodev status` shows (the stored state's, as A30 counts calls: one
    cut short by the end of the demo counts); the loop's own count when it is not given."""
    out = ["", "=== autodev demo: what happened ==="]
    per = Counter(summary.posts)
    out.append("posts per participant and engine:")
    for (participant, engine), count in sorted(per.items()):
        out.append(f"  {participant:<5} via {engine:<14} {count}")
    kinds = {
        "hops along a failover chain": (" limited → ", " unreachable → "),
        "handovers to a colleague": ("takes the turn",),
        "waits with nothing able to run": (
            "every participant limited",
            "No provider can be reached",
        ),
        "failed calls backed off": ("next attempt at",),
        "limits lifted": ("limit lifted",),
        "outages recovered": ("is reachable again",),
    }
    for label, needles in kinds.items():
        count = sum(1 for _, message in lines if any(n in message for n in needles))
        out.append(f"{label}: {count}")
    shown = summary.calls if calls is None else calls
    out.append(f"calls: {shown}; final status: {summary.status}")
    out.append(f"persistence: {summary.persistence}")
    out.append("")
    out.append(f"the run is kept in {run_dir}; look at it with:")
    command = _command_name()
    out.append(f"  {command} status --run {run_dir}")
    out.append(f"  {command} lane ana --run {run_dir}")
    out.append("")
    out.extend(store_status)
    return out


def run_demo(
    directory: Path | None = None,
    *,
    stream: TextIO | None = None,
    speed: float = DEMO_SPEED,
    span: timedelta = DEMO_SPAN,
) -> tuple[RunSummary, list[str]]:
    """Run the demo in `directory` (a new temporary one by default); return the summary and
    the lines to print."""
    root = Path(directory) if directory is not None else Path(tempfile.mkdtemp(prefix="autodev-"))
    root.mkdir(parents=True, exist_ok=True)
    team_dir, run_dir = root / "team", root / "run"
    _write_team(team_dir)
    bin_dir = install_standins(root / "bin")
    zone = local_zone()
    start = datetime.now(UTC).replace(microsecond=0)
    script = write_script(root / "standins.json", demo_script(start))
    env = standin_env(bin_dir, script)
    clock = ScaledClock(speed, start=start)
    team = load_team(team_dir)
    if stream is not None:
        stream.write(
            f"autodev demo: {len(team.members)} participants on stand-in CLIs, "
            f"{int(span.total_seconds() // 3600)} hours of run time at {int(speed)}× "
            f"speed (until {clock_text(start + span, start, zone)}).\n"
        )
    summary = start_run(
        team,
        run_dir,
        run_id="demo",
        clock=clock,
        installed=frozenset({"claude", "codex", "agy"}),
        stream=stream,
        env=env,
        slice_seconds=30.0,
        stop_at=start + span,
        timezone=zone_name(zone),
    )
    store = RunStore.open(run_db(run_dir))
    try:
        status = status_lines(store, clock.now())
        saved = store.snapshot().scheduler_state_json
        calls = from_json(saved, SchedulerState).iterations if saved else None
        status.append(f"integrity check: {', '.join(store.integrity_check()) or 'ok'}")
    finally:
        store.close()
    log_lines = _read_log(run_dir / LOG_FILE, zone)
    return summary, summary_lines(summary, log_lines, run_dir, status, calls)


def _read_log(path: Path, zone: Any) -> list[tuple[datetime, str]]:
    lines: list[tuple[datetime, str]] = []
    if not path.exists():
        return lines
    for raw in path.read_text(encoding="utf-8").splitlines():
        stamp, _, message = raw.partition(" ")
        try:
            at = datetime.fromisoformat(stamp).replace(tzinfo=zone)
        except ValueError:
            continue
        lines.append((at, message))
    return lines
