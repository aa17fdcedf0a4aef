"""`autodev demo`: a bundled team of stand-in CLIs run through the real shell (SPEC C6).

Three participants — ana on claude (chain: codex), rui on codex, eva on agy — take turns on a
thread. The stand-ins are real subprocesses that print the real
CLIs' formats: a claude `rate_limit_event` (rejected), a codex outage, an agy crash, codex and agy
usage notices. The real loop, the real SQLite store, checkpoint and sleeper run on a virtual
clock (`clock.VirtualClock`): each call takes the virtual time its scripted answer gives it, and
waits pass `DEMO_SPEED` times faster than real time, so three hours of a run pass in seconds and
a newcomer sees hops, handovers, an outage with its retries, backoff, a wait with every
participant limited, limits lifting, and the persistence state at the end — with no account.
The real time a call takes (a loaded machine, a slow disk) passes no virtual time: the story is
the same, to the second, on any machine.
"""

from __future__ import annotations

import shlex
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final, TextIO

from autodev_core.names import PROVIDERS
from autodev_core.scheduler import SchedulerState
from autodev_core.serialization import from_json
from autodev_core.times import clock as clock_text

from ..clock import VirtualClock, local_zone
from ..runner import RunSummary
from ..standins import install_standins, standin_env, write_script
from ..status.report import status_lines
from ..store.folder import LOG_FILE, run_db
from ..store.run_store import RunStore
from ..team import load_team
from .commands import start_run, zone_name

#: How much faster than real time the demo's waits pass (calls take their scripted time).
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


# Long as a script is: the demo's story, one answer per line, read best in one piece.
def demo_script(start: datetime) -> dict[str, Any]:
    """The stand-ins' answers: per CLI a queue, then posts (see `standins._standin`).

    Each answer's `duration` is the virtual time its call takes: the story below is fixed by
    these numbers alone, never by how fast the machine runs the stand-ins. From `start`:
    claude is limited for an hour (0:00:30) and ana hops to codex, which cannot be reached
    (0:02:30, retried at 0:03:30); eva takes ana's turn and crashes (0:03:30, backed off a
    second); ana's turn again, on codex, which is reachable again (0:07:30); rui and eva post;
    codex is limited (0:15) and agy too (0:15:30): every participant is limited and the run
    waits for codex (0:40); turns go round until claude's limit lifts (1:00) and ana is back on
    it.
    """
    minute = 60
    claude_reset = int((start + timedelta(hours=1)).timestamp())
    return {
        "claude": {
            "answers": [
                # A2: a rejected rate_limit_event
                {"kind": "limit", "resets_at": claude_reset, "duration": minute // 2},
            ],
            "default": {
                "kind": "post",
                "post": "Review: the patch reads well; one nit on naming.",
                "duration": 5 * minute,
            },
        },
        "codex": {
            "answers": [
                {"kind": "network", "duration": 2 * minute},  # A26: its servers are out of reach
                {
                    "kind": "post",
                    "post": "Patch: retry the flaky upload with a bounded backoff.",
                    "duration": 4 * minute,
                },
                {
                    "kind": "post",
                    "post": "Patch: rename the helper as the review asked.",
                    "duration": 4 * minute,
                },
                {
                    "kind": "limit",
                    "notice": "You've hit your usage limit. Upgrade to Pro or try again in 25 "
                    "minutes.",
                    "duration": minute // 2,
                },  # A3: a relative reset
            ],
            "default": {
                "kind": "post",
                "post": "Patch: the next small step is in.",
                "duration": 4 * minute,
            },
        },
        "agy": {
            "answers": [
                {"kind": "crash", "duration": minute},  # A28: a failed call backs off
                {
                    "kind": "post",
                    "post": "Tests: three cases for the upload retry, all green.",
                    "duration": 3 * minute,
                },
                # A4
                {"kind": "limit", "notice": "Individual quota reached. Resets in 30m.",
                 "duration": minute // 2},
            ],
            "default": {
                "kind": "post",
                "post": "Tests: the new case passes.",
                "duration": 3 * minute,
            },
        },
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
    start: datetime | None = None,
    script: Callable[[datetime], dict[str, Any]] = demo_script,
) -> tuple[RunSummary, list[str]]:
    """Run the demo in `directory` (a new temporary one by default); return the summary and
    the lines to print. `speed` is how much faster than real time waits pass; the run begins
    at `start` (now, by default) with the stand-ins answering `script(start)`."""
    root = Path(directory) if directory is not None else Path(tempfile.mkdtemp(prefix="autodev-"))
    root.mkdir(parents=True, exist_ok=True)
    team_dir, run_dir = root / "team", root / "run"
    _write_team(team_dir)
    bin_dir = install_standins(root / "bin")
    zone = local_zone()
    if start is None:
        start = datetime.now(UTC).replace(microsecond=0)
    ledger = root / "clock.ledger"
    ledger.unlink(missing_ok=True)  # a --dir used before: its calls are not this run's time
    answers = write_script(root / "standins.json", script(start))
    env = standin_env(bin_dir, answers, clock=ledger)
    clock = VirtualClock(speed, start=start, ledger=ledger)
    team = load_team(team_dir)
    if stream is not None:
        stream.write(
            f"autodev demo: {len(team.members)} participants on stand-in CLIs, "
            f"{int(span.total_seconds() // 3600)} hours of run time (until "
            f"{clock_text(start + span, start, zone)}): each call takes the time its stand-in's "
            f"script says, waits pass {int(speed)}× faster.\n"
        )
    summary = start_run(
        team,
        run_dir,
        run_id="demo",
        clock=clock,
        installed=frozenset(PROVIDERS),
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
