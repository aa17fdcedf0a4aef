"""docs/sharing.md, shown with real processes: two daemons with stand-in CLIs on one shared account,
one real redis-server (started by the test on a free loopback port), a fast clock both daemons
agree on (helpers/share_daemon.py).

Nothing here asserts on timings: the daemons' own log stamps (virtual time) and the stand-ins'
call logs say what happened, and every wait for a process polls with a generous timeout.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from helpers.daemons import all_finish
from helpers.daemons import wait_for as shared_wait_for
from helpers.redis_server import RedisServer, needs_redis

from autodev_shell.standins import install_standins, standin_env, write_script

pytestmark = needs_redis
pytest.importorskip("redis", reason="the redis extra is not installed: pip install "
                    "'autodev[redis]'")

HELPERS = Path(__file__).resolve().parents[1] / "helpers"
LINE = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}) (.*)$")
WAIT = 120.0  # seconds: a loaded machine is slow, never this slow


class Daemon:
    """One daemon: its team, its stand-ins (with their own call log), its run directory."""

    def __init__(self, root: Path, run_id: str, members: dict[str, str],
                 accounts: dict[str, str], script: dict[str, object],
                 settings: str = "") -> None:
        self.run_id = run_id
        self.team = root / f"team-{run_id}"
        self.team.mkdir(parents=True)
        for member, provider in members.items():
            (self.team / f"{member}.md").write_text(
                f"---\nprovider: {provider}\n---\nWork.\n", encoding="utf-8"
            )
        (self.team / "autodev.yaml").write_text(
            "accounts: " + json.dumps(accounts) + "\n" + settings, encoding="utf-8"
        )
        self.bin = install_standins(root / f"bin-{run_id}")
        self.script = write_script(root / f"script-{run_id}.json", script)
        self.calls_log = root / f"calls-{run_id}.jsonl"
        self.run_dir = root / f"run-{run_id}"
        self.env = standin_env(self.bin, self.script, log=self.calls_log)
        self.env["PYTHONPATH"] = os.pathsep.join(
            [str(HELPERS.parent), str(HELPERS.parent.parent), self.env.get("PYTHONPATH", "")]
        )
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, url: str, factor: float, virtual: datetime, real: float,
              seconds: float) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(HELPERS / "share_daemon.py"), str(self.team),
             str(self.run_dir), self.run_id, url, str(factor), virtual.isoformat(), str(real),
             str(seconds)],
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

    def lines(self) -> list[tuple[datetime, str]]:
        path = self.run_dir / "autodev.log"
        if not path.exists():
            return []
        out = []
        for raw in path.read_text(encoding="utf-8").splitlines():
            match = LINE.match(raw)
            if match:
                out.append((datetime.fromisoformat(match[1]).replace(tzinfo=UTC), match[2]))
        return out

    def messages(self) -> list[str]:
        return [message for _at, message in self.lines()]

    def calls(self, cli: str | None = None) -> int:
        if not self.calls_log.exists():
            return 0
        entries = [json.loads(line) for line in
                   self.calls_log.read_text(encoding="utf-8").splitlines() if line.strip()]
        return sum(1 for e in entries if cli is None or e.get("cli") == cli)

    def finish(self) -> None:
        if self.process is None:
            return
        try:
            self.process.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)
            raise AssertionError(f"daemon {self.run_id} did not stop by itself") from None

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)


def wait_for(predicate: Callable[[], bool], what: str, seconds: float = WAIT) -> None:
    """`helpers.daemons.wait_for`, with this file's longer wait (two daemons and a server)."""
    shared_wait_for(predicate, what, seconds)


def clock_time(text: str, day: datetime) -> datetime:
    """`<time>` of SPEC A (UTC here): HH:MM on the line's day, else YYYY-MM-DD HH:MM."""
    if len(text) == 5:
        hour, minute = map(int, text.split(":"))
        return day.replace(hour=hour, minute=minute, second=0, microsecond=0)
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def first(lines: list[tuple[datetime, str]], needle: str) -> tuple[datetime, str]:
    for at, message in lines:
        if needle in message:
            return at, message
    raise AssertionError(f"no line with {needle!r} in {[m for _a, m in lines]}")


PASSWORD = "h7-not-for-logs"


@pytest.fixture
def locked_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A server with a password: the URL carries it, nothing the run writes may."""
    with RedisServer(tmp_path / "redis", password=PASSWORD) as server:
        yield server


def status(run_dir: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "autodev_shell.cli", "status", "--run", str(run_dir)],
        capture_output=True, text=True, timeout=WAIT, check=True,
    )
    return done.stdout


def written(root: Path) -> str:
    """Everything the runs wrote: logs, lanes, status files, stand-in call logs."""
    texts = []
    for path in root.rglob("*"):
        if path.is_file() and "redis" not in path.parts and path.suffix != ".db":
            texts.append(path.read_text(encoding="utf-8", errors="replace"))
    return "\n".join(texts)


def _start_clock() -> tuple[datetime, float]:
    real = time.time()
    virtual = datetime.now(UTC).replace(hour=9, minute=0, second=0, microsecond=0)
    return virtual, real


def test_after_A_meets_a_limit_B_makes_no_call_on_it_and_lifts_at_the_reset_without_a_probe(
    tmp_path: Path, locked_server: RedisServer
) -> None:
    accounts = {"claude": "work-max"}
    a = Daemon(tmp_path, "a", {"ana": "claude"}, accounts, {
        "claude": [{"kind": "limit", "notice": "Usage limit reached. Try again in 40 minutes."}],
        "default": {"post": "ok", "sleep": 0.05},
    })
    b = Daemon(tmp_path, "b", {"bob": "claude"}, accounts, {
        "default": {"post": "ok", "sleep": 0.05},
    })
    # 40 virtual minutes pass in 16 real seconds: B must start and read A's limit within them,
    # which takes a few seconds on a loaded machine (six test workers on two cores).
    factor = 150.0
    virtual, real = _start_clock()
    with all_finish(a, b):
        a.start(locked_server.url, factor, virtual, real, seconds=35)
        wait_for(lambda: any("claude limited until" in m for m in a.messages()), "A's limit")
        b.start(locked_server.url, factor, virtual, real, seconds=30)
        wait_for(lambda: any("every participant limited" in m for m in b.messages()),
                 "B's wait")
        # B learned the limit from A before making any call at all (A8, A18).
        assert b.calls() == 0
        shown = status(b.run_dir)
        assert f"sharing: on — redis://***@127.0.0.1:{locked_server.port}/0" in shown
        assert re.search(r"^limit: claude until \S+ \(reported by .+/a\)$", shown, re.M), shown
        wait_for(lambda: any("bob posted via claude" in m for m in b.messages()), "B's post")
    lines = b.lines()
    at, reported = first(lines, "(reported by ")
    match = re.match(r"claude limited until (.+) \(reported by (.+)\)$", reported)
    assert match and match[2].endswith("/a"), reported
    reset = clock_time(match[1], at)
    assert first(lines, "every participant limited")[1] == (
        f"every participant limited — waiting for claude, back first at {match[1]}"
    )
    posted_at, _ = first(lines, "bob posted via claude")
    # B's first call came at the reset (A23), not before; and it was no probe: every call B
    # made posted (the stand-in answers each with a post), none met the limit again.
    assert posted_at >= reset
    assert b.calls() == sum(1 for m in b.messages() if "bob posted via claude" in m)
    assert not any(m.startswith("claude limited until ") and "reported" not in m
                   for m in b.messages())
    # The URL's password is in no log, lane or status the runs wrote.
    assert PASSWORD not in written(tmp_path) and PASSWORD not in shown
    assert "sharing: off" in status(b.run_dir)  # the daemon has stopped


def test_two_daemons_with_one_share_name_still_share_a_limit(
    tmp_path: Path, locked_server: RedisServer
) -> None:
    """Issue 40 item 1: both runs are `laptop` (a copied `share.name`; the default
    `<host>/<team folder>` collides the same way). Before run ids, B took A's record for its own,
    dropped it, and called claude inside A's limit; now B makes no call until the reset."""
    accounts = {"claude": "work-max"}
    same = "share: {url: 'redis://127.0.0.1:1/0', name: laptop}\n"  # --share sets the URL
    a = Daemon(tmp_path, "a", {"ana": "claude"}, accounts, {
        "claude": [{"kind": "limit", "notice": "Usage limit reached. Try again in 40 minutes."}],
        "default": {"post": "ok", "sleep": 0.05},
    }, settings=same)
    b = Daemon(tmp_path, "b", {"bob": "claude"}, accounts, {
        "default": {"post": "ok", "sleep": 0.05},
    }, settings=same)
    factor = 150.0
    virtual, real = _start_clock()
    with all_finish(a, b):
        a.start(locked_server.url, factor, virtual, real, seconds=20)
        wait_for(lambda: any("claude limited until" in m for m in a.messages()), "A's limit")
        b.start(locked_server.url, factor, virtual, real, seconds=15)
        wait_for(lambda: any("every participant limited" in m for m in b.messages()),
                 "B's wait")
        assert b.calls() == 0
        assert "this run is 'laptop'" in status(b.run_dir)
    _at, reported = first(b.lines(), "(reported by ")
    assert reported.endswith("(reported by laptop)"), reported
    posted = [at for at, m in b.lines() if "bob posted via claude" in m]
    reset = clock_time(re.match(r"claude limited until (\S+)", reported)[1], _at)
    assert all(at >= reset for at in posted)
    assert not any(m.startswith("claude limited until ") and "reported" not in m
                   for m in b.messages())  # no call of B met the limit


def test_a_reset_read_by_A_wakes_Bs_defaulted_wait_early(
    tmp_path: Path, own_redis: RedisServer
) -> None:
    accounts = {"claude": "work-max"}
    # A's first call is slow, and reads a real reset; B's first call meets a notice with no
    # readable reset, so B waits claude's default hour (A6) — until A's read reset wakes it.
    a = Daemon(tmp_path, "a", {"ana": "claude"}, accounts, {
        "claude": [{"kind": "limit", "sleep": 10.0,
                    "notice": "Usage limit reached. Try again in 20 minutes."}],
        "default": {"post": "ok", "sleep": 0.05},
    })
    b = Daemon(tmp_path, "b", {"bob": "claude"}, accounts, {
        "claude": [{"kind": "limit", "notice": "Claude AI usage limit reached"}],
        "default": {"post": "ok", "sleep": 0.05},
    })
    # 150x: A's slow call lasts 25 virtual minutes and reads a reset 20 minutes after its end,
    # so the read reset comes at least 15 minutes before B's default hour, wherever B starts.
    factor = 150.0
    virtual, real = _start_clock()
    with all_finish(a, b):
        a.start(own_redis.url, factor, virtual, real, seconds=60)
        wait_for(lambda: a.calls() >= 1, "A's slow call to begin")
        b.start(own_redis.url, factor, virtual, real, seconds=55)
        wait_for(lambda: any("bob posted via claude" in m for m in b.messages()), "B's post")
    lines = b.lines()
    own_at, own = first(lines, "claude limited until")
    assert "reported" not in own  # B's own notice, defaulted: an hour from its call's end
    defaulted = clock_time(own.rsplit(" ", 1)[1], own_at)
    assert defaulted - own_at <= timedelta(hours=1)
    at, reported = first(lines, "(reported by ")
    read = clock_time(re.match(r"claude limited until (.+) \(", reported)[1], at)  # type: ignore[index]
    assert read < defaulted  # a read reset replaced a defaulted one, earlier
    posted_at, _ = first(lines, "bob posted via claude")
    assert read <= posted_at < defaulted  # B woke at the read reset, not at its default


def test_redis_stopped_then_killed_mid_run_blocks_no_turn_and_loses_nothing(
    tmp_path: Path, own_redis: RedisServer
) -> None:
    accounts = {"claude": "work-max", "codex": "team"}
    ok = {"post": "ok", "sleep": 0.1}
    a = Daemon(tmp_path, "a", {"ana": "claude", "cid": "codex"}, accounts, {"default": ok})
    b = Daemon(tmp_path, "b", {"bob": "claude", "dan": "codex"}, accounts, {"default": ok})
    factor = 60.0
    virtual, real = _start_clock()

    def posts(d: Daemon) -> int:
        return sum(1 for m in d.messages() if " posted via " in m)

    try:
        a.start(own_redis.url, factor, virtual, real, seconds=90)
        b.start(own_redis.url, factor, virtual, real, seconds=90)
        wait_for(lambda: posts(a) >= 2 and posts(b) >= 2, "both daemons posting")
        own_redis.pause()  # SIGSTOP: connections hang; every operation meets its timeout
        before = posts(a)
        # For up to 2 s (real) the mirror vouches for what Redis holds and no turn
        # start asks it; then each daemon's next one makes the round trip, meets the timeout and
        # says lost (before the kill: a daemon that never tried while Redis was down finds its
        # restarted server at once and has nothing to say).
        for d in (a, b):
            wait_for(lambda d=d: any(m.startswith("limit sharing lost") for m in d.messages()),
                     f"{d.run_id} saying sharing is lost")
        wait_for(lambda: posts(a) >= before + 4, "A posting on while Redis is stopped")
        # A meets a codex limit while Redis cannot hear of it.
        write_script(a.script, {"codex": {"default": {
            "kind": "limit", "notice": "You've hit your usage limit. Try again in 3 hours."}},
            "default": ok})
        wait_for(lambda: any(m.startswith("codex limited until") for m in a.messages()),
                 "A's codex limit")
        own_redis.kill()  # gone, with everything it held
        own_redis.start()  # back on the same port, empty
        wait_for(lambda: any(m.startswith("codex limited until") and "(reported by" in m
                             for m in b.messages()), "B hearing of A's limit")
        learned = len(b.messages())
        wait_for(lambda: any("dan is rate limited — @bob takes the turn" in m
                             for m in b.messages()[learned - 1:]), "B routing around it")
        # B may hear A's limit by pub/sub before its own next round trip, the one that says
        # sharing is back (tried `retry_seconds` after the loss): wait for each to say it.
        for d in (a, b):
            wait_for(lambda d=d: any(m.startswith("limit sharing is back") for m in d.messages()),
                     f"{d.run_id} saying sharing is back")
    finally:
        a.kill()
        b.kill()
    for d in (a, b):
        messages = d.messages()
        lost = [m for m in messages if m.startswith("limit sharing lost")]
        back = [m for m in messages if m.startswith("limit sharing is back")]
        assert len(lost) == 1 and len(back) == 1, (d.run_id, lost, back)
        assert messages.index(lost[0]) < messages.index(back[0])
        # The URL is shown, never a password (this server has none; see test_sharing_redis).
        assert f"127.0.0.1:{own_redis.port}" in lost[0]
    # Outages are never shared: only limits reach the other run.
    assert not any("could not be reached" in m for m in b.messages())


def _near_the_limit(virtual: datetime, **info: object) -> str:
    """claude's stream-json output of a call at 97% of its five-hour window (`info`: more
    `rate_limit_info` fields). The window resets four hours after the later of the daemons'
    virtual 09:00 and this machine's clock: the daemons read it on their clock, `autodev
    status` on the machine's, and both must see the window still open (a fixed 13:00 UTC
    failed every run started after it)."""
    resets = int(max(virtual.timestamp(), time.time()) + 4 * 3600)
    warning = json.dumps({"type": "rate_limit_event", "rate_limit_info": {
        "status": "allowed_warning", "utilization": 0.97, "rateLimitType": "five_hour",
        **info, "resetsAt": resets}})
    result = json.dumps({"type": "result", "subtype": "success", "is_error": False,
                         "result": "ok"})
    return warning + "\n" + result + "\n"


def test_A_reads_claude_near_its_limit_and_B_hands_over_before_calling_it(
    tmp_path: Path, own_redis: RedisServer
) -> None:
    """A usage reading one daemon's call reported reaches the other through
    Redis; B, with `policy.headroom` on, hands its turns over to its chain's next engine without
    calling claude at all, and its status marks the reading as another run's."""
    accounts = {"claude": "work-max"}
    virtual, real = _start_clock()
    factor = 60.0
    near = _near_the_limit(virtual, surpassedThreshold=0.9)
    a = Daemon(tmp_path, "a", {"ana": "claude"}, accounts, {
        "claude": {"default": {"stdout": near, "sleep": 0.05}},
        "default": {"post": "ok", "sleep": 0.05},
    })
    b = Daemon(tmp_path, "b", {"bob": "claude"}, accounts, {
        "default": {"post": "ok", "sleep": 0.05},
    }, settings="policy:\n  headroom: {hand_over_at: 0.95}\n")
    (b.team / "bob.md").write_text(
        "---\nprovider: claude\nfailover: [codex]\n---\nWork.\n", encoding="utf-8")
    with all_finish(a, b):
        a.start(own_redis.url, factor, virtual, real, seconds=20)
        wait_for(lambda: any("ana posted via claude" in m for m in a.messages()), "A's post")
        b.start(own_redis.url, factor, virtual, real, seconds=15)
        wait_for(lambda: sum("bob posted via codex" in m for m in b.messages()) >= 2,
                 "B's posts on codex")
        shown = status(b.run_dir)
    # B never called claude: the reading came before its first turn (A39: learned first).
    assert b.calls("claude") == 0 and b.calls("codex") >= 2
    messages = b.messages()
    assert "bob: claude near its limit → codex" in messages, messages
    assert not any("limited" in m or "waiting" in m for m in messages)  # a reading is no limit
    # The reset is a time, with its date when it is not today (the test may run at 20:00).
    assert re.search(r"^usage: claude at 97% of its five-hour window, resets "
                     r"(?:\d{4}-\d\d-\d\d )?\d\d:\d\d \(in .+\) "
                     r"— new turns hand over \(policy.headroom\) \(reported by .+/a\)$",
                     shown, re.M), shown
    # A, knob off, kept calling claude: the reading it reported changed nothing for it.
    assert a.calls("claude") >= 2


def test_a_reading_heard_during_a_limit_wait_is_learned_and_the_wait_goes_on(
    tmp_path: Path, own_redis: RedisServer
) -> None:
    """B waits on its own claude limit; A's call reports a reading meanwhile.
    B learns it (its status shows it, marked as A's) and sleeps on until its reset: a reading
    never ends or starts a wait."""
    accounts = {"claude": "work-max"}
    virtual, real = _start_clock()
    factor = 120.0
    near = _near_the_limit(virtual)
    a = Daemon(tmp_path, "a", {"ana": "claude"}, accounts, {
        "claude": {"default": {"stdout": near, "sleep": 0.05}},
        "default": {"post": "ok", "sleep": 0.05},
    })
    # A hops to claude:sonnet, which B's limit (on claude) does not cover (A8, A11): A is free
    # to call while B waits, and its reading reaches B by pub/sub.
    (a.team / "ana.md").write_text(
        "---\nprovider: claude\nfailover: [\"claude:sonnet\"]\n---\nWork.\n", encoding="utf-8")
    b = Daemon(tmp_path, "b", {"bob": "claude"}, accounts, {
        "claude": [{"kind": "limit", "notice": "Usage limit reached. Try again in 40 minutes."}],
        "default": {"post": "ok", "sleep": 0.05},
    })
    try:
        b.start(own_redis.url, factor, virtual, real, seconds=45)
        wait_for(lambda: any("every participant limited" in m for m in b.messages()),
                 "B's wait")
        a.start(own_redis.url, factor, virtual, real, seconds=8)
        wait_for(lambda: any("ana posted via claude:sonnet" in m for m in a.messages()),
                 "A's post")
        a.finish()
        wait_for(lambda: any("bob posted via claude" in m for m in b.messages()), "B's post")
        b.finish()
    finally:
        a.kill()
        b.kill()
    messages = b.messages()
    assert not any(m.startswith("nothing to do") for m in messages), messages
    lines = b.lines()
    own_at, own = first(lines, "claude limited until")
    reset = clock_time(own.rsplit(" ", 1)[1], own_at)
    posted_at, _ = first(lines, "bob posted via claude")
    assert posted_at >= reset  # the wait went on to its end (A18, A23)
    shown = status(b.run_dir)
    assert re.search(r"^usage: claude:sonnet at 97% of its five-hour window, .*"
                     r"\(reported by .+/a\)$", shown, re.M), shown


def test_one_account_under_two_labels_shares_its_limit_and_never_benches_another_account(
    tmp_path: Path, own_redis: RedisServer
) -> None:
    """Issue 42 item 3 (A8; docs/sharing.md "Engine accounts"): A calls the real account
    `acme-max` claude@work, B calls it claude@job. A's limit on it keeps B's claude@job from
    calling until the reset; B's claude@home (another account, me-pro) is never benched."""
    a = Daemon(tmp_path, "a", {"ana": "claude@work"}, {"claude@work": "acme-max"}, {
        "claude": [{"kind": "limit", "notice": "Usage limit reached. Try again in 40 minutes."}],
        "default": {"post": "ok", "sleep": 0.05},
    }, settings=f"env:\n  claude@work: {{CLAUDE_CONFIG_DIR: {tmp_path / 'work'}}}\n")
    b = Daemon(tmp_path, "b", {"bob": "claude@job", "cat": "claude@home"},
               {"claude@job": "acme-max", "claude@home": "me-pro"},
               {"default": {"post": "ok", "sleep": 0.05}},
               settings=(f"env:\n  claude@job: {{CLAUDE_CONFIG_DIR: {tmp_path / 'job'}}}\n"
                         f"  claude@home: {{CLAUDE_CONFIG_DIR: {tmp_path / 'home'}}}\n"))
    factor = 150.0
    virtual, real = _start_clock()
    with all_finish(a, b):
        a.start(own_redis.url, factor, virtual, real, seconds=12)
        wait_for(lambda: any("claude@work limited until" in m for m in a.messages()),
                 "A's limit")
        b.start(own_redis.url, factor, virtual, real, seconds=9)
        wait_for(lambda: any("cat posted via claude@home" in m for m in b.messages()),
                 "B's post on its other account")
    lines = b.lines()
    assert "accounts: claude@home as me-pro, claude@job as acme-max)" in first(
        lines, "sharing limits via")[1]
    at, reported = first(lines, "(reported by ")
    match = re.match(r"claude@job limited until (\S+) \(reported by (.+)\)$", reported)
    assert match and match[2].endswith("/a"), reported
    reset = clock_time(match[1], at)
    # Nothing benched claude@home; bob called claude@job only from the reset on (A23).
    assert not any("claude@home limited" in m for m in b.messages())
    assert all(when >= reset for when, m in lines if "bob posted via claude@job" in m)
    assert not any(m.startswith("claude@job limited until ") and "reported" not in m
                   for m in b.messages())
