"""The real daemon on stand-in CLIs writes a call ledger line per call (docs/timeline.md, Where it
is read from), and `autodev timeline`'s figures are the ledger's though the lanes were trimmed
(C8: each call here writes 0.7 MB of chatter, a lane keeps 3 MB)."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

from helpers.daemons import Daemon, wait_for

from autodev_shell.calls.ledger import LEDGER_FILE, read_ledger
from autodev_shell.story import read_calls
from autodev_shell.story.report import duration

CHATTER = 700_000
CLAUDE_OUT = "".join(json.dumps(line) + "\n" for line in (
    {"type": "system", "subtype": "init", "session_id": "s", "model": "claude-opus-4-5"},
    {"type": "assistant", "session_id": "s",
     "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}},
    {"type": "result", "subtype": "success", "is_error": False, "result": "ok",
     "session_id": "s", "total_cost_usd": 0.0125},
))
SCRIPT = {
    "claude": {"default": {"stdout": CLAUDE_OUT, "flood_bytes": CHATTER}},
    "codex": {"default": {"stdout": "ok\n", "stderr": "codex\nok\ntokens used\n1,234\n",
                          "flood_bytes": CHATTER}},
}


def test_autodev_timeline_counts_every_call_of_the_ledger_past_the_lanes_trim(
        tmp_path: Path) -> None:
    run = Daemon(tmp_path, {"ana": "claude", "rui": "codex"}, SCRIPT)
    ledger = run.run_dir / LEDGER_FILE
    run.start()
    try:
        wait_for(lambda: len(read_ledger(ledger) or []) >= 14, "14 calls in the ledger")
        run.control("stop")
        assert run.wait_exit() == 0
    finally:
        run.stop()
    assert stat.S_IMODE(ledger.stat().st_mode) == 0o600
    entries = read_ledger(ledger) or []
    lanes = read_calls(run.run_dir / "lanes")
    assert len([c for c in lanes if c.end is not None]) < len(entries)  # the lanes were trimmed
    done = subprocess.run(
        [sys.executable, "-m", "autodev_shell.cli", "timeline", "--run", str(run.run_dir),
         "--hours", "1"], capture_output=True, text=True, timeout=60, env=run.env)
    assert done.returncode == 0, done.stderr
    rows = {line.split()[0]: line.split() for line in done.stdout.splitlines()[2:]}
    for who, cost, tokens in (("ana", 0.0125, None), ("rui", None, 1234)):
        mine = [e for e in entries if e.participant == who]
        posted = [e for e in mine if e.outcome == "posted"]
        # Every call posted but the one `stop` cut short (docs/loop.md), cancelled.
        assert len(posted) >= 5 and len(mine) - len(posted) <= 1, mine
        assert {e.outcome for e in mine} <= {"posted", "cancelled"}
        assert [(e.cost_usd, e.tokens) for e in posted] == [(cost, tokens)] * len(posted)
        costs = [e.cost_usd for e in mine if e.cost_usd is not None]
        counts = [e.tokens for e in mine if e.tokens is not None]
        seconds = sum((e.end - e.start).total_seconds() for e in mine)
        assert rows[who][1] == str(len(mine)), done.stdout
        assert rows[who][4] == duration(seconds), done.stdout
        assert rows[who][5] == (f"${sum(costs):.4f}" if costs else "-"), done.stdout
        assert rows[who][6] == (f"{sum(counts):,}" if counts else "-"), done.stdout
