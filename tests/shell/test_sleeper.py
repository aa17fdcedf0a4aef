"""The sleeper (SPEC C2, A19, A20), the clocks, and the C7 countdown text."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from helpers.clock import T0
from hypothesis import given
from hypothesis import strategies as st

from autodev_shell.clock import FakeClock, ScaledClock, SystemClock, local_zone
from autodev_shell.loop.sleeper import (
    DEFAULT_SLICE_SECONDS,
    countdown_text,
    format_left,
    sleep_until,
)


def test_C2_sleeps_in_slices_to_the_target_with_a_heartbeat_per_slice() -> None:
    clock = FakeClock(T0)
    beats: list[datetime] = []
    target = T0 + timedelta(seconds=100)
    wake = sleep_until(target, clock=clock, heartbeat=lambda now, _t: beats.append(now))
    assert wake.reason == "target"
    assert wake.at == target
    assert clock.waits == [30.0, 30.0, 30.0, 10.0]  # default slice, last one cut to the target
    assert wake.slices == 4
    assert beats == [T0 + timedelta(seconds=s) for s in (0, 30, 60, 90)]
    assert DEFAULT_SLICE_SECONDS == 30.0


def test_C2_target_already_passed_returns_at_once() -> None:
    clock = FakeClock(T0)
    wake = sleep_until(T0 - timedelta(seconds=1), clock=clock)
    assert (wake.reason, wake.slices, clock.waits) == ("target", 0, [])


def test_A20_suspended_machine_wakes_at_the_target_not_after_its_remaining_sleep() -> None:
    clock = FakeClock(T0)
    target = T0 + timedelta(hours=2)
    # The machine is suspended for three hours during the first slice.
    clock.on_wait(0, lambda c, _s: c.advance(3 * 3600))
    wake = sleep_until(target, clock=clock, slice_seconds=30)
    assert wake.reason == "target"
    assert wake.slices == 1, "the first wall-clock check after the resume wakes it"
    assert wake.at == T0 + timedelta(hours=3, seconds=30)  # resume + the rest of that slice
    assert len(clock.waits) == 1


def test_A20_clock_set_backward_never_wakes_early() -> None:
    clock = FakeClock(T0)
    target = T0 + timedelta(seconds=90)
    clock.on_wait(1, lambda c, _s: c.advance(-600))  # NTP pulls the clock back ten minutes
    wake = sleep_until(target, clock=clock, slice_seconds=30)
    assert wake.reason == "target"
    assert wake.at >= target
    assert wake.at == target  # and it still reaches the target exactly, later in real terms
    assert sum(clock.waits) == pytest.approx(90 + 600)


@given(
    slice_seconds=st.floats(min_value=0.5, max_value=120),
    wait_seconds=st.floats(min_value=0, max_value=20_000),
    jumps=st.dictionaries(
        st.integers(min_value=0, max_value=30), st.floats(min_value=-5_000, max_value=50_000)
    ),
)
def test_A20_never_early_and_never_more_than_one_slice_late(
    slice_seconds: float, wait_seconds: float, jumps: dict[int, float]
) -> None:
    clock = FakeClock(T0)
    starts: list[datetime] = []
    for index, jump in jumps.items():

        def hook(c: FakeClock, _s: float, jump: float = jump) -> None:
            c.advance(jump)

        clock.on_wait(index, hook)
    clock.on_every_wait(lambda c, _s: starts.append(c.now()))
    target = T0 + timedelta(seconds=wait_seconds)
    wake = sleep_until(target, clock=clock, slice_seconds=slice_seconds)
    assert wake.reason == "target"
    assert wake.at >= target
    if starts:
        # The last slice started before the target (as then measured) and ended at the wake:
        # it reached past max(target, its start) by at most one slice.
        late = (wake.at - max(target, starts[-1])).total_seconds()
        assert late <= slice_seconds + 1e-6
    assert all(w <= slice_seconds + 1e-9 for w in clock.waits)


@pytest.mark.parametrize("which", ["stop", "pause"])
def test_A19_stop_or_pause_interrupts_the_sleep(which: str) -> None:
    clock = FakeClock(T0)
    flag = threading.Event()
    clock.on_wait(2, lambda _c, _s: flag.set())
    kwargs = {which: flag}
    wake = sleep_until(T0 + timedelta(hours=5), clock=clock, **kwargs)  # type: ignore[arg-type]
    assert wake.reason == which
    assert wake.at == T0 + timedelta(seconds=60)
    assert wake.slices == 3


def test_A19_stop_wins_over_pause_and_message() -> None:
    wake = sleep_until(
        T0 + timedelta(hours=1),
        clock=FakeClock(T0),
        stop=lambda: True,
        pause=lambda: True,
        message=lambda: True,
        wakes_on_message=True,
    )
    assert wake.reason == "stop"


def test_A19_a_user_message_does_not_wake_a_limit_wait() -> None:
    clock = FakeClock(T0)
    target = T0 + timedelta(minutes=5)
    wake = sleep_until(target, clock=clock, message=lambda: True, wakes_on_message=False)
    assert (wake.reason, wake.at) == ("target", target)


def test_A30_a_user_message_wakes_a_failure_wait_when_the_core_says_so() -> None:
    clock = FakeClock(T0)
    arrived = threading.Event()
    clock.on_wait(1, lambda _c, _s: arrived.set())
    wake = sleep_until(
        T0 + timedelta(minutes=30), clock=clock, message=arrived, wakes_on_message=True
    )
    assert wake.reason == "message"
    assert wake.at == T0 + timedelta(seconds=30)


def _sleep_in_thread(**kwargs: object) -> tuple[threading.Thread, list[object]]:
    out: list[object] = []

    def run() -> None:
        out.append(sleep_until(**kwargs))  # type: ignore[arg-type]

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


@pytest.mark.parametrize("kind", ["event", "callable"])
def test_A19_real_clock_stop_wakes_a_long_slice(kind: str) -> None:
    clock = SystemClock()
    flag = threading.Event()
    stop = flag if kind == "event" else flag.is_set
    thread, out = _sleep_in_thread(
        target=clock.now() + timedelta(hours=1), clock=clock, slice_seconds=3600, stop=stop
    )
    flag.set()
    thread.join(20)  # a safety bound so a broken sleeper fails instead of hanging the suite
    assert not thread.is_alive()
    assert out[0].reason == "stop"  # type: ignore[attr-defined]


def test_C6_scaled_clock_runs_virtual_time_faster() -> None:
    clock = ScaledClock(3600.0, start=T0)
    target = T0 + timedelta(minutes=20)  # a third of a real second
    wake = sleep_until(target, clock=clock, slice_seconds=60)
    assert wake.reason == "target"
    assert wake.at >= target
    assert clock.now() >= T0


def test_C2_clocks_refuse_naive_times() -> None:
    naive = datetime(2026, 12, 1, 9, 0)
    with pytest.raises(ValueError):
        FakeClock(naive)
    with pytest.raises(ValueError):
        ScaledClock(10, start=naive)
    with pytest.raises(ValueError):
        sleep_until(naive, clock=FakeClock(T0))
    with pytest.raises(ValueError):
        ScaledClock(0)
    assert SystemClock().now().utcoffset() is not None


def test_C7_countdown_text_as_in_the_spec() -> None:
    zone = ZoneInfo("Europe/Lisbon")
    now = datetime(2026, 12, 1, 13, 18, tzinfo=zone)
    back = datetime(2026, 12, 1, 14, 30, tzinfo=zone)
    assert countdown_text("claude", back, now, zone) == (
        "waiting for claude, back first at 14:30 — 1h12m left"
    )


def test_C7_countdown_on_another_day_names_the_date() -> None:
    zone = ZoneInfo("Europe/Lisbon")
    now = datetime(2026, 12, 1, 23, 0, tzinfo=zone)
    back = datetime(2026, 12, 2, 1, 5, tzinfo=zone)
    assert countdown_text("codex", back, now, zone) == (
        "waiting for codex, back first at 2026-12-02 01:05 — 2h05m left"
    )


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (0.2, "1s"), (59, "59s"), (60, "1m"), (61, "2m"), (3600, "1h00m"),
     (4320, "1h12m"), (90_000, "25h00m"), (-5, "0s")],
)
def test_C7_time_left_rounds_up_to_the_minute(seconds: float, text: str) -> None:
    assert format_left(seconds) == text


def test_A3_local_zone_is_named_from_TZ(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "Europe/Lisbon")
    assert local_zone() == ZoneInfo("Europe/Lisbon")
    monkeypatch.setenv("TZ", "Not/AZone")
    zone = local_zone()  # falls back to /etc/localtime or the current offset
    assert datetime(2026, 12, 1, tzinfo=zone).utcoffset() is not None


def test_news_from_another_run_wakes_a_sleep_with_its_own_reason() -> None:
    """A limit reported by another run wakes the sleeper so the core hears of it."""
    from datetime import datetime, timedelta

    from autodev_shell.clock import FakeClock
    from autodev_shell.loop.sleeper import sleep_until

    start = datetime(2026, 12, 1, 9, tzinfo=UTC)
    clock = FakeClock(start)
    news = [False, False, True]
    wake = sleep_until(start + timedelta(hours=1), clock=clock, slice_seconds=60,
                       news=lambda: news.pop(0) if len(news) > 1 else news[0])
    assert wake.reason == "news" and wake.at < start + timedelta(hours=1)
