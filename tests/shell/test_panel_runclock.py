"""The run's clock as the panel learns it from heartbeats (docs/panel.md, "Whose clock";
issue 41 item 1): a run on the machine's clock is never taken for a fast one, a fast run's rate
is measured within what the panel's polling lets it see, and with no daemon a fast run's clock
stands still."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from autodev_shell.panel.runclock import RunClock

T0 = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)


def _seconds(value: float) -> timedelta:
    return timedelta(seconds=value)


def test_a_real_time_run_is_on_the_machines_clock() -> None:
    clock = RunClock()
    for i in range(6):
        beat = T0 + _seconds(2 * i)
        clock.observe(beat, beat + _seconds(0.8), running=True, pid=7)
    machine = T0 + _seconds(30)
    assert not clock.fast()
    assert clock.now(machine, running=True) == (machine, 1.0)
    assert clock.now(machine, running=False) == (machine, 1.0)  # real limits lift in real time


def test_a_fast_run_is_counted_on_its_own_clock_and_stands_still_without_its_daemon() -> None:
    clock = RunClock()
    for i in range(5):  # --fast 600: a heartbeat every real second, seen 0.5 s late
        clock.observe(T0 + _seconds(600 * i), T0 + _seconds(i + 0.5), running=True, pid=7)
    assert clock.fast()
    assert clock.rate() == 600.0
    now, rate = clock.now(T0 + _seconds(5.5), running=True)
    assert rate == 600.0 and now == T0 + _seconds(600 * 5)
    assert clock.now(T0 + _seconds(99), running=False) == (T0 + _seconds(2400), 0.0)


def test_the_heartbeat_found_at_start_is_a_position_never_a_rates_first_point() -> None:
    """A heartbeat written an hour before the panel started, then a live one: the hour is the
    panel's absence, not a clock running 1200 times faster."""
    clock = RunClock()
    clock.observe(T0 - timedelta(hours=1), T0, running=True, pid=7)
    for i in range(1, 6):
        clock.observe(T0 + _seconds(i), T0 + _seconds(i + 0.2), running=True, pid=7)
    assert not clock.fast() and 0.9 < clock.rate() < 1.1


def test_another_daemon_starts_the_measure_again() -> None:
    clock = RunClock()
    for i in range(4):
        clock.observe(T0 + _seconds(600 * i), T0 + _seconds(i), running=True, pid=7)
    assert clock.fast()
    # Started again on the machine's clock: the old daemon's readings and speed are forgotten.
    clock.observe(T0 + _seconds(5), T0 + _seconds(5), running=True, pid=8)
    assert clock.readings == [(T0 + _seconds(5), T0 + _seconds(5))]
    assert not clock.fast()


@given(gaps=st.lists(st.floats(0.2, 5.0), min_size=2, max_size=30),
       lags=st.lists(st.floats(0.0, 1.25), min_size=31, max_size=31))
def test_a_real_clock_seen_by_polling_is_never_called_fast(gaps: list[float],
                                                          lags: list[float]) -> None:
    """Heartbeats stamped on the machine's clock, every 0.2-5 s, each seen up to 1.25 s late
    (the panel reads the status every second, its poll every 0.25 s): never a fast clock."""
    clock = RunClock()
    at = 0.0
    for gap, lag in zip(gaps, lags, strict=False):
        at += gap
        clock.observe(T0 + _seconds(at), T0 + _seconds(at + lag), running=True, pid=1)
        assert not clock.fast(), (clock.readings, clock.rate())


@given(factor=st.floats(10.0, 5000.0), gaps=st.lists(st.floats(0.2, 3.0), min_size=12,
                                                     max_size=30),
       lags=st.lists(st.floats(0.0, 1.25), min_size=30, max_size=30))
def test_a_fast_clocks_rate_is_measured_within_the_polls_blur(
        factor: float, gaps: list[float], lags: list[float]) -> None:
    """A `--fast F` clock (virtual = start + F × real) seen late by up to 1.25 s: called fast,
    and once 10 s of readings are in, its rate within 1.25 s / span of F (the blur of the
    first and last readings), its now never ahead of the true one by more than that."""
    clock = RunClock()
    at = 0.0
    for gap, lag in zip(gaps, lags, strict=False):
        at += gap
        clock.observe(T0 + _seconds(factor * at), T0 + _seconds(at + lag), running=True, pid=1)
    assert clock.fast()
    (seen0, _b0), (seen1, _b1) = clock.readings[0], clock.readings[-1]
    span = (seen1 - seen0).total_seconds()
    if span >= 10:
        blur = 1.25 / (span - 1.25)
        assert abs(clock.rate() / factor - 1) <= blur + 1e-9, (clock.rate(), factor, span)
