"""A real daemon for the sharing tests: `start_run` in its own process, on stand-in CLIs, on a
fast clock shared by every daemon of a test (docs/sharing.md).

    python share_daemon.py TEAM RUN_DIR RUN_ID URL FACTOR VIRTUAL_START REAL_START SECONDS [SKEW]

The clock runs FACTOR times faster than real time and reads VIRTUAL_START at the real instant
REAL_START (epoch seconds): two daemons started apart still agree on the time, as two machines
with synchronised clocks do. The run stops after SECONDS of real time (or `autodev stop`).

SKEW (seconds, default 0) puts the daemon on a machine whose clock is off (docs/sharing.md
"Clocks"): its run's clock reads VIRTUAL_START + SKEW at REAL_START, and what `LimitSharing`
measures against Redis's `TIME` is the real time plus SKEW, so the daemon's clock and its
machine's are both SKEW seconds ahead of every other daemon's and of Redis's.
"""

from __future__ import annotations

import sys
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from autodev_shell.cli.commands import start_run
from autodev_shell.clock import ScaledClock
from autodev_shell.sharing import client as sharing_client
from autodev_shell.team import load_team


def main(argv: list[str]) -> int:
    team_dir, run_dir, run_id, url, factor_text, virtual_text, real_text, seconds_text = argv[:8]
    skew = float(argv[8]) if len(argv) > 8 else 0.0
    factor = float(factor_text)
    virtual_start = datetime.fromisoformat(virtual_text) + timedelta(seconds=skew)
    now = virtual_start + timedelta(seconds=(time.time() - float(real_text)) * factor)
    clock = ScaledClock(factor, start=now)
    stop_at = now + timedelta(seconds=float(seconds_text) * factor)
    if skew:
        original = sharing_client.LimitSharing.__init__

        def skewed(self: Any, *args: Any, **kwargs: Any) -> None:
            kwargs.setdefault("wall", lambda: time.time() + skew)
            original(self, *args, **kwargs)

        sharing_client.LimitSharing.__init__ = skewed  # type: ignore[method-assign]
    summary = start_run(
        load_team(team_dir),
        Path(run_dir),
        run_id=run_id,
        clock=clock,
        stop_at=stop_at,
        slice_seconds=30.0,
        share=url,
        timezone="UTC",
    )
    print(f"{run_id}: {summary.status} after {summary.calls} calls", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
