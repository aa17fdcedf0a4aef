"""The demo's story does not depend on the machine's speed (SPEC C6; A18, A23, A38).

The demo runs real stand-in subprocesses through the real loop, store and sleeper. Its clock
must let virtual time pass only by waiting and by each call's scripted duration: on a fast
clock that scaled real time, each real second of a stand-in call was many virtual minutes, and
whether claude's reset came before the team ran out of free engines (the A18 wait) depended on
how loaded the machine was.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from helpers.clock import T0
from hypothesis import given
from hypothesis import strategies as st

from autodev_shell.calls import build_argv, run_call
from autodev_shell.clock import VirtualClock
from autodev_shell.standins import install_standins, standin_env, write_script

# --- the clock ------------------------------------------------------------------------------


def test_C6_real_time_alone_passes_no_virtual_time() -> None:
    clock = VirtualClock(1_000_000.0, start=T0)
    time.sleep(0.05)  # 50 real ms: 14 virtual hours on a clock that scaled real time
    assert clock.now() == T0


@given(
    steps=st.lists(
        st.tuples(st.sampled_from(["wait", "charge"]), st.integers(min_value=0, max_value=7200)),
        max_size=12,
    )
)
def test_C6_virtual_time_is_exactly_the_waits_and_the_charges(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, int]]
) -> None:
    ledger = tmp_path_factory.mktemp("clock") / "ledger"
    clock = VirtualClock(10_000_000.0, start=T0, ledger=ledger)
    expected = T0
    for kind, seconds in steps:
        if kind == "wait":
            assert clock.wait(seconds) is False
        else:
            with open(ledger, "a", encoding="ascii") as out:
                out.write(f"{seconds}\n")
        expected += timedelta(seconds=seconds)
        assert clock.now() == expected


def test_C6_a_charge_counts_once_its_line_is_whole(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    clock = VirtualClock(600.0, start=T0, ledger=ledger)
    assert clock.now() == T0  # no ledger yet: nothing charged
    ledger.write_bytes(b"90\n3")
    assert clock.now() == T0 + timedelta(seconds=90)
    with open(ledger, "ab") as out:
        out.write(b"0\nnot a number\n-5\n")
    assert clock.now() == T0 + timedelta(seconds=120)  # 90 + 30; garbage charges nothing


def test_C6_an_interrupted_wait_passes_at_most_what_was_asked() -> None:
    clock = VirtualClock(600.0, start=T0)
    assert clock.wait(3600.0, lambda: True) is True
    assert T0 <= clock.now() <= T0 + timedelta(seconds=3600)


def test_C6_a_virtual_clock_refuses_bad_arguments() -> None:
    with pytest.raises(ValueError):
        VirtualClock(600.0, start=datetime(2026, 12, 1, 9, 0))
    for factor in (0.0, -1.0, float("inf"), float("nan")):
        with pytest.raises(ValueError):
            VirtualClock(factor, start=T0)


# --- a stand-in call charges its scripted duration ------------------------------------------


def test_A38_a_stand_in_call_takes_its_scripted_duration_and_a_reset_counts_from_its_end(
    tmp_path: Path,
) -> None:
    bin_dir = install_standins(tmp_path / "bin")
    ledger = tmp_path / "ledger"
    script = write_script(
        tmp_path / "script.json",
        {"agy": [{"kind": "limit", "notice": "Individual quota reached. Resets in 30m.",
                  "duration": 120, "sleep": 0.3}]},
    )
    env = standin_env(bin_dir, script, clock=ledger)
    clock = VirtualClock(1200.0, start=T0, ledger=ledger)
    result = run_call(build_argv("agy", "do it"), provider="agy", env=env, clock=clock,
                      timeout=60)
    assert result.started_at == T0
    # 0.3 real seconds of sleep and the process's start are not charged: the call took 2 min.
    assert result.ended_at == T0 + timedelta(minutes=2)
    assert result.classification.kind == "limit"
    assert result.classification.limit is not None
    assert result.classification.limit.reset_at == T0 + timedelta(minutes=32)


# --- the demo -------------------------------------------------------------------------------


def _slow(script: dict[str, Any], seconds: float) -> dict[str, Any]:
    """The same answers, each given `seconds` of real time late (a loaded machine)."""
    out: dict[str, Any] = {}
    for cli, entry in script.items():
        if isinstance(entry, dict) and "answers" in entry:
            out[cli] = {
                "answers": [{**answer, "sleep": seconds} for answer in entry["answers"]],
                "default": {**entry.get("default", {}), "sleep": seconds},
            }
        elif isinstance(entry, list):
            out[cli] = [{**answer, "sleep": seconds} for answer in entry]
        else:
            out[cli] = {**entry, "sleep": seconds}
    return out


def _story(root: Path, lines: list[str]) -> tuple[list[str], list[str]]:
    """The run's log, and the summary up to where it names the run's folder."""
    log = (root / "run" / "autodev.log").read_text(encoding="utf-8").splitlines()
    summary: list[str] = []
    for line in lines:
        if line.startswith("the run is kept in"):
            break
        summary.append(line)
    return log, summary


def test_C6_the_demo_tells_the_same_story_on_a_slow_machine(tmp_path: Path) -> None:
    from autodev_shell.cli.demo import demo_script, run_demo

    start = datetime.now(UTC).replace(microsecond=0)
    span = timedelta(hours=2)
    fast_summary, fast_lines = run_demo(tmp_path / "fast", speed=1200.0, span=span, start=start)
    slow_summary, slow_lines = run_demo(
        tmp_path / "slow",
        speed=300.0,  # waits four times slower too
        span=span,
        start=start,
        script=lambda at: _slow(demo_script(at), 0.2),  # every call 0.2 real seconds late
    )
    fast_log, fast_text = _story(tmp_path / "fast", fast_lines)
    slow_log, slow_text = _story(tmp_path / "slow", slow_lines)
    assert fast_summary.status == slow_summary.status == "stopped"
    # The same lines at the same virtual instants, and the same summary.
    assert slow_log == fast_log
    assert slow_text == fast_text
    assert fast_summary.calls == slow_summary.calls
    # And it is the story the demo is for: a wait with nothing able to run (A18), then the
    # limit that started it all lifting (A23).
    messages = [line.partition(" ")[2] for line in fast_log]
    waits = [i for i, m in enumerate(messages) if m.startswith("every participant limited")]
    lifted = [i for i, m in enumerate(messages) if m == "ana: limit lifted — back on its "
              "primary provider"]
    assert waits and lifted and waits[0] < lifted[0]
