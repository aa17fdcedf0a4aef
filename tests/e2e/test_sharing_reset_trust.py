"""docs/sharing.md "Clocks" (issue 40 item 6): a shared reset is not trusted blindly, on a real
redis-server.

- A writer whose clock is more than A6's grace (10 minutes) off Redis's shares a reset it read
  from a clock time or a date as unread: the A6 default after it saw it, said once; an epoch or a
  duration it shares as read (moved onto Redis's clock, as every instant).
- A record in Redis whose read reset lies more than a week and ten minutes after its sighting (an
  older version's writer, a misreading) is taken by a reader as claude's default hour after the
  sighting, said once with who claimed what; the merge script takes it so too, so a right reading
  replaces it.
- Two real daemons: one 20 minutes fast misreads `resets 9:05am` as tomorrow's (A6 rolls a clock
  time more than the grace past); the other is not benched for a day.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from helpers.daemons import RunCommands
from helpers.redis_server import RedisServer, needs_redis
from helpers.sharing_redis import CLAUDE, TEAM, settings_for

from autodev_core.scheduler import EngineLimit, LimitObserved

pytestmark = needs_redis

redis = pytest.importorskip("redis", reason="the redis extra is not installed: pip install "
                            "'autodev[redis]'")

from autodev_shell.sharing import LimitSharing, millis  # noqa: E402

_counter = iter(range(10**9))
HOUR = timedelta(hours=1)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    with RedisServer(tmp_path_factory.mktemp("redis")) as srv:
        yield srv


@pytest.fixture
def raw(server: RedisServer) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(server.url)
    yield client
    client.close()


def prefix() -> str:
    return f"trust{next(_counter)}"


def test_a_clock_20_minutes_fast_shares_a_clock_time_reset_unread_and_an_epoch_one_read(
    server: RedisServer, raw: redis.Redis,
) -> None:
    p = prefix()
    said: list[str] = []
    fast = LimitSharing(settings_for(server, "fast", p), subscribe=False, say=said.append,
                        wall=lambda: time.time() + 1200)
    real = datetime.now(UTC).replace(microsecond=0)
    local = real + timedelta(minutes=20)  # what the fast machine's clock says
    fast.sync(TEAM, local)  # the round trip measures Redis's TIME: 20 min ahead
    said.clear()
    # `resets 9:05am` read 15 minutes after it by this clock: tomorrow's, by A6.
    misread = EngineLimit(CLAUDE, local + timedelta(hours=23, minutes=45), True, local)
    fast.publish([misread], local, {CLAUDE: "clock"})
    stored = json.loads(raw.get(fast.settings.key(CLAUDE)))
    # Unread, claude's default hour after it was seen, on Redis's clock (the real timeline).
    assert stored["read"] is False
    assert abs(stored["reset"] - millis(real + HOUR)) <= 2_000
    assert abs(raw.pttl(fast.settings.key(CLAUDE)) - 3_600_000) <= 5_000
    assert said == [
        f"limit sharing: claude's reset {misread.until:%Y-%m-%d %H:%M} UTC was read from a clock "
        "time on this machine's clock, 20 min 0 s ahead of the Redis server's; not vouched for: "
        f"shared as unread, until {local + HOUR:%Y-%m-%d %H:%M} UTC (the A6 default after it "
        "was seen)"]
    # The same clock reading an epoch: vouched for, nothing said, and shared as the instant it
    # names (an epoch is on the real timeline whatever this clock says: moving it onto Redis's
    # clock as if this clock had made it would share it 20 minutes early).
    said.clear()
    codex = EngineLimit(TEAM[2], real + timedelta(hours=3), True, local)
    fast.publish([codex], local, {TEAM[2]: "epoch"})
    stored = json.loads(raw.get(fast.settings.key(TEAM[2])))
    assert stored["read"] is True
    assert abs(stored["reset"] - millis(real + timedelta(hours=3))) <= 2_000
    assert said == []
    fast.close()


def test_a_clock_within_the_grace_vouches_for_its_clock_time_reset(
    server: RedisServer, raw: redis.Redis,
) -> None:
    p = prefix()
    said: list[str] = []
    near = LimitSharing(settings_for(server, "near", p), subscribe=False, say=said.append,
                        wall=lambda: time.time() + 300)
    real = datetime.now(UTC).replace(microsecond=0)
    local = real + timedelta(minutes=5)
    near.sync(TEAM, local)
    said.clear()
    # A clock time names an instant of the real timeline (the CLI wrote the provider's reset in
    # its zone): shared as read, as it is.
    near.publish([EngineLimit(CLAUDE, real + 2 * HOUR, True, local)], local, {CLAUDE: "clock"})
    stored = json.loads(raw.get(near.settings.key(CLAUDE)))
    assert stored["read"] is True
    assert abs(stored["reset"] - millis(real + 2 * HOUR)) <= 2_000
    assert said == []
    near.close()


def test_a_reset_beyond_any_window_in_redis_is_doubted_by_reader_and_script_alike(
    server: RedisServer, raw: redis.Redis,
) -> None:
    """An older version's writer left claude limited for a year; a reader takes it as the
    default hour after its sighting (the core does: the event carries the claim as read) and
    says so once; a right reading then replaces it in Redis (read beats defaulted)."""
    p = prefix()
    said: list[str] = []
    reader = LimitSharing(settings_for(server, "reader", p), subscribe=False, say=said.append)
    key = reader.settings.key(CLAUDE)
    assert key is not None
    seen = datetime.now(UTC).replace(microsecond=0)
    claimed = seen + timedelta(days=365)
    raw.set(key, json.dumps({"reset": millis(claimed), "read": True, "seen": millis(seen),
                             "who": "old"}), px=millis(claimed) - millis(seen))
    got = reader.sync(TEAM, seen)
    assert got == [LimitObserved(now=seen, engine=CLAUDE, until=claimed, read=True, seen=seen,
                                 source="old")]
    line = (f"limit sharing: old reported claude limited until {claimed:%Y-%m-%d %H:%M} UTC, "
            "beyond any window of claude (7 days); taken as unread, until "
            f"{seen + HOUR:%Y-%m-%d %H:%M} UTC (the A6 default after it was seen)")
    assert said == [line]
    reader.forget_told()
    reader.sync(TEAM, seen)  # told again: said no more
    assert said == [line]
    right = LimitSharing(settings_for(server, "right", p), subscribe=False)
    right.publish([EngineLimit(CLAUDE, seen + timedelta(minutes=20), True, seen)], seen)
    stored = json.loads(raw.get(key))
    assert (stored["reset"], stored["read"], stored["who"]) == (
        millis(seen + timedelta(minutes=20)), True, "right")
    for sharer in (reader, right):
        sharer.close()


# -- two real daemons ----------------------------------------------------------------------------


HELPERS = Path(__file__).resolve().parents[1] / "helpers"
NAMES = {"a": "ana", "b": "bob"}
WAIT = 120.0  # seconds: a loaded machine is slow, never this slow


@pytest.mark.slow
def test_a_daemon_20_minutes_fast_does_not_bench_the_other_for_a_day(tmp_path: Path) -> None:
    """Issue 40 item 6, past A6's grace. Both daemons run a fast clock (300x) starting at 09:00;
    A's reads 09:20 at that instant (its machine 20 minutes fast, measured against Redis's
    TIME). claude answers A `resets 9:05am (UTC)`, which A's clock reads 15 minutes past: A6
    makes it tomorrow's 09:05, and A keeps that reading itself. Before, A shared it as read and
    B (right clock) waited until tomorrow; now A shares claude's default hour, unread, and B
    posts on claude within that hour."""
    from helpers.daemons import all_finish

    from autodev_shell.standins import install_standins, standin_env, write_script

    with RedisServer(tmp_path / "redis") as server:
        real = time.time()
        virtual = datetime.now(UTC).replace(hour=9, minute=0, second=0, microsecond=0)
        daemons = {}
        for run_id, skew, script in (
            ("a", 1200, {"claude": [{"kind": "limit",
                                     "notice": "You've hit your limit · resets 9:05am (UTC)"}],
                         "default": {"post": "ok", "sleep": 0.05}}),
            ("b", 0, {"default": {"post": "ok", "sleep": 0.05}}),
        ):
            team = tmp_path / f"team-{run_id}"
            team.mkdir()
            (team / f"{NAMES[run_id]}.md").write_text("---\nprovider: claude\n---\nWork.\n",
                                                  encoding="utf-8")
            (team / "autodev.yaml").write_text('accounts: {"claude": "work-max"}\n',
                                               encoding="utf-8")
            env = standin_env(install_standins(tmp_path / f"bin-{run_id}"),
                              write_script(tmp_path / f"script-{run_id}.json", script),
                              log=tmp_path / f"calls-{run_id}.jsonl")
            env["PYTHONPATH"] = os.pathsep.join(
                [str(HELPERS.parent), str(HELPERS.parent.parent), env.get("PYTHONPATH", "")])
            daemons[run_id] = _SkewedDaemon(team, tmp_path / f"run-{run_id}", run_id, env, skew)
        a, b = daemons["a"], daemons["b"]
        with all_finish(a, b):
            a.start(server.url, virtual, real, seconds=60)
            shared_wait_for(lambda: any(m.startswith("claude limited until ")
                                        for m in a.messages()),
                            "A's limit", WAIT, lambda: a.messages())
            b.start(server.url, virtual, real, seconds=50)
            # B posts on claude, or (benched) runs to its end without a post.
            shared_wait_for(lambda: any("bob posted via claude" in m for m in b.messages())
                            or (b.process is not None and b.process.poll() is not None),
                            "B's post on claude or its end", WAIT, lambda: b.messages())
            for daemon in (b, a):  # done: no need to wait for their ends (room for a load)
                if daemon.process is not None and daemon.process.poll() is None:
                    daemon.cli("stop")
    own = [m for m in a.messages() if m.startswith("claude limited until ")]
    assert own and "-" in own[0].split("until ", 1)[1], own  # A's own: tomorrow (a date)
    heard = [(at, m) for at, m in b.lines() if "(reported by " in m]
    assert heard, b.messages()
    at, line = heard[0]
    until = line.split("until ", 1)[1].split(" (", 1)[0]
    assert len(until) == 5, b.messages()  # today's time, not tomorrow's date
    hour, minute = map(int, until.split(":"))
    reset = at.replace(hour=hour, minute=minute)
    assert reset - at <= HOUR  # claude's default hour after A saw it, at most
    posted = [t for t, m in b.lines() if "bob posted via claude" in m]
    assert posted and posted[0] >= reset and posted[0] - virtual < timedelta(hours=3)
    assert any("not vouched for: shared as unread" in m for m in a.messages()), a.messages()


def shared_wait_for(predicate: Callable[[], bool], what: str, seconds: float,
                    shown: Callable[[], list[str]]) -> None:
    """Until `predicate()`; else fail saying `what` was awaited and what the daemon wrote."""
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}: {shown()}")
        time.sleep(0.05)


class _SkewedDaemon(RunCommands):
    """A daemon of helpers/share_daemon.py with a SKEW: its clock and its machine `skew` s fast."""

    def __init__(self, team: Path, run_dir: Path, run_id: str, env: dict[str, str],
                 skew: int) -> None:
        self.team, self.run_dir, self.run_id, self.env, self.skew = (
            team, run_dir, run_id, env, skew)
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, url: str, virtual: datetime, real: float, seconds: float) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(HELPERS / "share_daemon.py"), str(self.team),
             str(self.run_dir), self.run_id, url, "300", virtual.isoformat(), str(real),
             str(seconds), str(self.skew)],
            env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

    def lines(self) -> list[tuple[datetime, str]]:
        path = self.run_dir / "autodev.log"
        if not path.exists():
            return []
        out = []
        for line in path.read_text(encoding="utf-8").splitlines():
            stamp, _, message = line.partition(" ")
            try:
                out.append((datetime.fromisoformat(stamp).replace(tzinfo=UTC), message))
            except ValueError:
                continue
        return out

    def messages(self) -> list[str]:
        return [message for _at, message in self.lines()]

    def finish(self) -> None:
        if self.process is None:
            return
        try:
            self.process.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"daemon {self.run_id} did not stop by itself") from None

    def kill(self) -> None:
        import signal

        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)
