"""What `autodev status` says of ages an operator judges a run by (C6): the heartbeat's and the
checkpoint's age are how long ago, rounded down to the unit shown — a heartbeat 61 seconds old
is "1m ago", never "2m ago" (a daemon that looks older than it is looks stuck)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from autodev_shell.status.report import status_lines
from autodev_shell.store.run_store import RunStore

BEAT = datetime(2026, 12, 2, 5, 0, tzinfo=UTC)


def _said(seconds: float) -> str:
    """The age a person reads `seconds` as, rounded down: 59 s, 1m, 59m, 1h00m, 1h01m."""
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    hours, minutes = divmod(whole // 60, 60)
    return f"{minutes}m" if hours == 0 else f"{hours}h{minutes:02d}m"


@pytest.mark.parametrize("seconds", [1.5, 59.9, 60, 61, 119.9, 120, 3599, 3600, 3661, 7199])
def test_C6_the_heartbeat_s_age_is_rounded_down(tmp_path: Path, seconds: float) -> None:
    with RunStore.open(tmp_path / "run.db", create=True, run_id="t", now=BEAT) as store:
        store.heartbeat(BEAT)
        lines = status_lines(store, BEAT + timedelta(seconds=seconds))
    beat = [line for line in lines if line.startswith("heartbeat:")]
    assert beat and beat[0].startswith(f"heartbeat: {_said(seconds)} ago"), lines


@pytest.mark.parametrize("seconds", [61, 3 * 3600 + 30])
def test_C6_a_heartbeat_stamped_ahead_of_the_clock_says_so(tmp_path: Path, seconds: int) -> None:
    """After the demo (a virtual clock hours ahead), status said `heartbeat: just now` for a
    heartbeat stamped in the future (A20)."""
    with RunStore.open(tmp_path / "run.db", create=True, run_id="t", now=BEAT) as store:
        store.heartbeat(BEAT)
        lines = status_lines(store, BEAT - timedelta(seconds=seconds))
    beat = [line for line in lines if line.startswith("heartbeat:")]
    assert beat and beat[0].startswith(
        f"heartbeat: {_said(seconds)} ahead of this machine's clock (a fast clock's time)"
    ), lines
