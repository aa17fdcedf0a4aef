"""A run's link to the shared registry (docs/sharing.md): `LimitSharing` publishes this run's
limits and readings through the merge scripts, reads the others' at each turn start (from the
subscriber's mirror while it can be trusted, else in one round trip), and carries on with the
run's own registry, saying so once, while Redis is down.
"""

from __future__ import annotations

import importlib
import json
import os
import queue
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import unquote, urlsplit

import attrs

from autodev_core.engine import Engine

from .mirror import LIVE_SECONDS, PING_SECONDS, Liveness, Mirror, Where
from .records import Shared, SharedUsage, _parse, _parse_usage, _text, merge_args, millis
from .scripts import MERGE_SCRIPT, USAGE_SCRIPT
from .settings import (
    ShareSettings,
    account_key,
    connect,
    connection_options,
    lost_reason,
    shared_engine,
    topology,
)

if TYPE_CHECKING:  # the scheduler is loaded only by a run that shares (cold start)
    from autodev_core.scheduler import EngineLimit, EngineUsage, LimitObserved, UsageObserved

#: Real seconds between attempts to reach Redis again once sharing is lost.
RETRY_SECONDS: Final = 2.0
#: Real seconds between round trips of a waiting daemon whose subscriber hears nothing (no
#: pub/sub: an ACL user without channel rights, a subscription being made again).
POLL_SECONDS: Final = 2.0
#: Real seconds between the subscriber's checks that Redis still holds this run's live
#: records (emptied, restarted, evicted: docs/sharing.md "When Redis loses records").
CHECK_SECONDS: Final = 2.0
#: Seconds between the subscriber's PINGs while nothing is live (docs/sharing.md, keepalive).
IDLE_PING_SECONDS: Final = 15.0
#: Seconds after a turn start during which the keepalive stays fast (the mirror is in use).
ACTIVE_SECONDS: Final = 30.0
#: Seconds a clock may be apart from Redis's before it is said and corrected for.
SKEW_SECONDS: Final = 1.0
#: How a notice may write a reset that names an instant of the real timeline, whatever this
#: machine's clock says (`LimitNotice.reset_form`); a relative one is counted on this clock.
ABSOLUTE_FORMS: Final = frozenset({"epoch", "clock", "date"})
#: Seconds before a subscriber refused by an ACL (NOPERM) tries to subscribe again.
DENIED_RETRY_SECONDS: Final = 60.0


#: Called with one line when sharing is lost or back (the runner's note sink).
Say = Callable[[str], None]


class LimitSharing:
    """A run's link to the shared registry. Thread-safe where it must be: a background thread
    receives pub/sub messages; everything else runs on the daemon's loop."""

    def __init__(
        self,
        settings: ShareSettings,
        *,
        say: Say | None = None,
        retry_seconds: float = RETRY_SECONDS,
        subscribe: bool = True,
        status_file: Path | None = None,
        run_id: str | None = None,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        #: This process's run id, in every record it writes (docs/sharing.md "Names").
        self.run_id = run_id or uuid.uuid4().hex[:12]
        self._wall = wall  # this machine's clock (epoch seconds), against Redis's TIME
        self._started_ms = int(wall() * 1000)
        self.status_file = status_file
        self.say = say or (lambda _line: None)
        self.retry_seconds = retry_seconds
        self._redis = importlib.import_module("redis")
        retry_mod = importlib.import_module("redis.retry")
        backoff = importlib.import_module("redis.backoff")
        self._client = connect(
            self._redis, settings, socket_timeout=settings.timeout,
            retry_on_timeout=False, retry=retry_mod.Retry(backoff.NoBackoff(), 0),
            **self._connection_kwargs(),
        )
        self._script = self._client.register_script(MERGE_SCRIPT)
        self._usage_script = self._client.register_script(USAGE_SCRIPT)
        self._up = True  # until an operation fails
        self._next_try = 0.0
        self._inbox: queue.SimpleQueue[Shared | SharedUsage] = queue.SimpleQueue()
        self._news = threading.Event()
        self._delivered: dict[str, Shared] = {}
        # Records whose reset was beyond any window, said once each (docs/sharing.md "Clocks").
        self._doubted: set[tuple[str, int, int, str]] = set()
        self._mine: dict[str, Shared] = {}  # this run's latest record per key (re-published)
        # The same for usage readings, per (hash key, window).
        self._heard: dict[tuple[str, str], SharedUsage] = {}
        self._mine_usage: dict[tuple[str, str], SharedUsage] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # The mirror (touched by the daemon's loop only) and what the subscriber
        # vouches for: the live subscription's generation (None: none) and the monotonic time
        # of the last PING it saw answered (or of its SUBSCRIBE).
        self._mirror = Mirror()
        self._live_lock = threading.Lock()
        self._liveness = Liveness()  # written by the subscriber, read by sync, under the lock
        # The engines and mirror version of the last read from the mirror, when everything it
        # read has been told (the next turn start with nothing new returns at once).
        self._quiet: tuple[Iterable[Engine], int, datetime] | None = None
        self.lost_count = 0
        self.round_trips = 0
        self.mirror_reads = 0
        # Said from the subscriber's thread, written to the log by the daemon's loop (sync).
        self._lines: queue.SimpleQueue[str] = queue.SimpleQueue()
        self._status_lock = threading.Lock()
        self._mine_lock = threading.Lock()
        self._republish_lock = threading.Lock()
        self._sub_down = False  # the subscriber lost its subscription (it says so)
        self._denied: str | None = None  # why SUBSCRIBE was refused (NOPERM), else None
        self._next_poll = 0.0
        self._active_until = 0.0  # monotonic: the keepalive is fast until then
        self._live_limit_ms = 0  # epoch ms (Redis's clock): a limit is live until then
        self._problems: dict[str, str] = {}  # what cannot be written or read, said once each
        self._repaired: set[str] = set()
        # This run's records Redis was seen to hold (key, usage window or None): only those
        # can be lost (one never written is not said lost, `_missing`).
        self._written: set[tuple[str, str | None]] = set()
        self._collision: str | None = None  # the run id of another run with this name
        self._offset_ms = 0  # this clock minus Redis's, in ms, when over SKEW_SECONDS
        self._skew_ms: int | None = None  # the last measured difference
        self._write_status()
        if subscribe:
            self._thread = threading.Thread(
                target=self._listen, name="autodev-share", daemon=True
            )
            self._thread.start()

    # --- state ------------------------------------------------------------------------------

    @property
    def up(self) -> bool:
        return self._up

    @property
    def subscription(self) -> int | None:
        """The live subscription's generation (None: the subscriber is not
        subscribed now)."""
        with self._live_lock:
            return self._liveness.generation

    def describe(self) -> str:
        state = "on" if self._up else "lost (carrying on with this run's own limits)"
        return f"{state} via {self.settings.shown_url}"

    def _connection_kwargs(self) -> dict[str, Any]:
        """redis-py's options beside the URL: TLS, and a client name that tells the daemons
        apart in `CLIENT LIST` (unless the URL names one)."""
        options = connection_options(self.settings)
        if "client_name" not in urlsplit(self.settings.url).query:
            who = "".join(c if c.isalnum() or c in "-_.:/@" else "_" for c in self.settings.name)
            options["client_name"] = f"autodev:{who}:{self.run_id}"
        return options

    @property
    def state(self) -> str:
        """`on`, or `lost` while a round trip failed or the subscriber lost its connection."""
        return "on" if self._up and (not self._sub_down or self._denied) else "lost"

    def problems(self) -> list[str]:
        """What is wrong beside on/lost, as `autodev status` says it (docs/sharing.md)."""
        found = list(self._problems.values())
        if self._denied:
            found.append(f"no pub/sub ({self._denied}): polling every {POLL_SECONDS:g} s")
        if self._collision:
            found.append(f"another run is also named {self.settings.name!r} "
                         f"(run {self._collision})")
        if self._offset_ms:
            found.append(f"this clock is {_seconds(self._offset_ms)} Redis's")
        return found

    def _write_status(self) -> None:
        """What `autodev status` shows: on or lost, where (no password), who, which accounts,
        and what is wrong. Written by either thread, whenever any of it changes."""
        if self.status_file is None:
            return
        with self._status_lock:
            data = {
                "state": self.state,
                "url": self.settings.shown_url,
                "prefix": self.settings.prefix,
                "name": self.settings.name,
                "run": self.run_id,
                "pid": os.getpid(),
                "accounts": dict(self.settings.accounts),
                "problems": self.problems(),
                "clock_offset_seconds": self._offset_ms / 1000,
                "since": datetime.now(UTC).isoformat(),
            }
            temp = self.status_file.with_name(self.status_file.name + ".tmp")
            try:
                fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # private
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    handle.write(json.dumps(data, ensure_ascii=False))
                temp.replace(self.status_file)
            except OSError:
                pass  # status is a courtesy; the run goes on

    def _server_ms(self, now: datetime) -> int:
        """`now` on Redis's clock (docs/sharing.md "Clocks")."""
        return millis(now) - self._offset_ms

    def _measured(self, server: tuple[int, int] | Any, before: float, after: float) -> None:
        """Redis's `TIME` against this clock (the midpoint of the round trip): a difference over
        SKEW_SECONDS is said once, shown in status, and every shared instant is moved by it."""
        if not isinstance(server, (tuple, list)) or len(server) != 2:
            return
        server_ms = int(server[0]) * 1000 + int(server[1]) // 1000
        skew = int((before + after) / 2 * 1000) - server_ms
        self._skew_ms = skew
        held = self._offset_ms
        if abs(skew) >= SKEW_SECONDS * 1000:
            if held and abs(skew - held) < SKEW_SECONDS * 500:
                return  # the same skew: keep the instants stable
            self._offset_ms = skew
            self.say(
                f"limit sharing: this machine's clock is {_seconds(skew)} the Redis server's "
                f"({self.settings.shown_url}); shared instants are moved onto Redis's clock"
            )
            self._write_status()
        elif held and abs(skew) < SKEW_SECONDS * 500:
            self._offset_ms = 0
            self.say(f"limit sharing: this machine's clock agrees with the Redis server's again "
                     f"({self.settings.shown_url})")
            self._write_status()

    def _local(self, item: Shared | SharedUsage) -> Shared | SharedUsage:
        """A record on Redis's clock, on this one's."""
        if not self._offset_ms:
            return item
        return attrs.evolve(item, reset=item.reset + self._offset_ms,
                            seen=item.seen + self._offset_ms)

    def _own(self, item: Shared | SharedUsage) -> bool:
        """Whether this process wrote `item` (by its run id; by name for an older version's)."""
        if item.run:
            return item.run == self.run_id
        return item.who == self.settings.name

    def _check_name(self, item: Shared | SharedUsage) -> None:
        """Another process wrote a record under this run's name since this one started: say it
        once (two runs with one name would otherwise look like one to everyone else)."""
        if (item.who != self.settings.name or not item.run or item.run == self.run_id
                or item.seen < self._started_ms - self._offset_ms
                or self._collision == item.run):
            return
        self._collision = item.run
        self.say(
            f"limit sharing: another run also calls itself {self.settings.name!r} (run "
            f"{item.run}); each takes the other's records as another run's — give each run "
            "its own share.name"
        )
        self._write_status()

    def _errors(self) -> tuple[type[BaseException], ...]:
        return (self._redis.RedisError, OSError)

    def _lost(self, error: BaseException) -> None:
        self._next_try = time.monotonic() + self.retry_seconds
        self._mirror.invalidate()  # docs/sharing.md: rebuilt by the next round trip that works
        if self._up:
            self._up = False
            self.lost_count += 1
            reason = self._scrub(lost_reason(error, self.settings.url))
            self.say(
                f"limit sharing lost ({self.settings.shown_url}: {reason}); "
                "carrying on with this run's own limits"
            )
            self._write_status()

    def _scrub(self, text: str) -> str:
        password = urlsplit(self.settings.url).password
        if password:
            text = text.replace(password, "***").replace(unquote(password), "***")
        return text.replace(self.settings.url, self.settings.shown_url)

    def _may_try(self) -> bool:
        return self._up or time.monotonic() >= self._next_try

    def _back(self, now: datetime) -> None:
        """Sharing works again: say so once, then re-publish what this run learned meanwhile."""
        if self._up:
            return
        with self._republish_lock:  # the subscriber's check waits for this re-publish
            self._up = True
            self.say(f"limit sharing is back ({self.settings.shown_url})")
            self._write_status()
            self._republish(now)

    def _republish(self, now: datetime) -> None:
        """Offer again every record of this run whose reset is still to come."""
        with self._mine_lock:
            limits, readings = list(self._mine.values()), list(self._mine_usage.values())
        server = self._server_ms(now)
        for record in limits:
            if record.reset > server:
                self._merge(record, now)
        for reading in readings:
            if reading.reset > server:
                self._merge_usage(reading, now)

    # --- what this run learned ----------------------------------------------------------------

    def publish(self, records: Iterable[EngineLimit], now: datetime,
                forms: Mapping[Engine, str | None] | None = None) -> None:
        """Offer this run's own limit records (source empty) to the shared registry. `forms`:
        how the notice of an engine's new record wrote its reset (`LimitNotice.reset_form`); a
        reset this clock cannot vouch for is shared as the core's `vouched` has it (said)."""
        from autodev_core.scheduler.registry import vouched

        skew = None if self._skew_ms is None else timedelta(milliseconds=self._skew_ms)
        for record in records:
            if record.source:
                continue  # another run's: already shared
            key = self.settings.key(record.engine)
            if key is None:
                continue  # only named accounts are shared
            form = (forms or {}).get(record.engine)
            read = record
            record = vouched(record, form, skew, now)
            if record is not read:
                self.say(_not_vouched(read, form or "", self._skew_ms or 0, record))
            # An instant this clock made (a relative reset, a default wait) is moved onto
            # Redis's clock; a reset the provider named absolutely (an epoch, a clock time, a
            # date) is an instant of the real timeline already and is shared as it is.
            absolute = record.read and form in ABSOLUTE_FORMS
            shared = Shared(
                account=self.settings.accounts[account_key(record.engine)],
                engine=shared_engine(record.engine),
                reset=millis(record.until) - (0 if absolute else self._offset_ms),
                read=record.read,
                seen=millis(record.seen if record.seen is not None else now) - self._offset_ms,
                who=self.settings.name,
                run=self.run_id,
            )
            with self._mine_lock:
                self._mine[key] = shared
            self._live_limit_ms = max(self._live_limit_ms, shared.reset)
            if self._may_try():
                self._merge(shared, now)

    def _merge(self, shared: Shared, now: datetime) -> bool:
        key = self.settings.limit_key(shared.account, shared.engine)
        return self._run_script(self._script, (key, None), merge_args(
            shared, self._server_ms(now), self.settings.channel), now)

    def _run_script(self, script: Any, where: tuple[str, str | None], args: list[Any],
                    now: datetime) -> bool:
        """One merge script's round trip: whether it changed the shared record. A lost Redis is
        said (`_lost`) and answers False; a round trip after a loss says sharing is back. An
        error the server answered (a wrongly typed key, `maxmemory`, an ACL without scripting)
        is not a loss: said once (`_cannot`), the key repaired where that is safe."""
        key = where[0]
        for attempt in (1, 2):
            try:
                changed = script(keys=[key], args=args)
            except self._redis.ResponseError as error:
                if attempt == 1 and self._repair(self._client, key, error):
                    continue
                self.round_trips += 1
                self._written.discard(where)
                self._cannot("write", key, error)
                return False
            except self._errors() as error:
                self._lost(error)
                return False
            break
        self.round_trips += 1
        self._written.add(where)
        if not self._up:
            self._back(now)
        if self._problems.pop(f"write {key}", None) is not None:
            if not any(k.startswith("write ") for k in self._problems):
                self.say(f"limit sharing can write again ({self.settings.shown_url})")
            self._write_status()
        return bool(changed)

    def _cannot(self, what: str, key: str, error: BaseException) -> None:
        """The server refused to `what` (write, read) `key`: one line the first time, and
        status says it until it works again (never a lost/back pair: Redis answers)."""
        reason = self._scrub(" ".join(str(error).split())[:160])
        problem = f"{what} {key}"
        if problem in self._problems:
            return
        self._problems[problem] = f"cannot {what} {key} ({reason})"
        self.say(
            f"limit sharing cannot {what} {key} ({self.settings.shown_url}: {reason}); "
            + ("this run's records there are not shared" if what == "write"
               else "other runs' records there are not read")
        )
        self._write_status()

    def _repair(self, client: Any, key: str, error: BaseException) -> bool:
        """A key of autodev's whose type autodev never writes (a string for a limit, a hash for
        readings) is deleted, so the scripts can write it again: safe, since nothing of
        autodev's can be in it. Whether it was repaired."""
        if "WRONGTYPE" not in str(error):
            return False
        expected = "hash" if key.startswith(f"{self.settings.key_prefix}:usage:") else "string"
        try:
            held = _text(client.type(key))
            if held in (expected, "none"):
                return False
            client.delete(key)
        except self._errors():
            return False
        if key not in self._repaired:
            self._repaired.add(key)
            self._lines.put(
                f"limit sharing repaired {key}: it held a {held}, not autodev's {expected}; "
                "deleted so that the shared records can be written again"
            )
            self._news.set()
        return True

    def publish_usage(self, records: Iterable[EngineUsage], now: datetime) -> None:
        """Offer this run's own usage readings (source empty) to the shared registry;
        a reading whose window has reset by `now` is dropped."""
        for record in records:
            if record.source:
                continue  # another run's: already shared
            key = self.settings.usage_key(record.engine)
            if key is None:
                continue  # only named accounts are shared
            reset = millis(record.until)
            if reset <= millis(now):
                continue  # its window has reset: it counts no more
            # A window's end the CLI said is an epoch (the real timeline, shared as it is); one
            # this run defaulted is on this clock and moved onto Redis's (as `publish`).
            reset -= 0 if record.read else self._offset_ms
            shared = SharedUsage(
                account=self.settings.accounts[account_key(record.engine)],
                engine=shared_engine(record.engine),
                window=record.window,
                utilization=record.utilization,
                reset=reset,
                read=record.read,
                seen=millis(record.seen if record.seen is not None else now) - self._offset_ms,
                who=self.settings.name,
                threshold=record.threshold,
                run=self.run_id,
            )
            with self._mine_lock:
                self._mine_usage[(key, record.window)] = shared
            if self._may_try():
                self._merge_usage(shared, now)

    def _merge_usage(self, shared: SharedUsage, now: datetime) -> bool:
        key = self.settings.readings_key(shared.account, shared.engine)
        return self._run_script(self._usage_script, (key, shared.window), [
            shared.payload(), self._server_ms(now), self.settings.usage_channel, shared.account,
            str(shared.engine), shared.window], now)

    # --- what other runs learned ------------------------------------------------------------

    def has_news(self) -> bool:
        """A pub/sub message arrived, or it is time to try a lost Redis again (polled by the
        sleeper, so a sleeping daemon wakes at once)."""
        clock = time.monotonic()
        return (
            self._news.is_set()
            or (not self._up and clock >= self._next_try)
            or (self._sub_down and clock >= self._next_poll)  # no pub/sub: poll instead
        )

    def _say_queued(self) -> None:
        """The lines the subscriber's thread left for the log."""
        while True:
            try:
                line = self._lines.get_nowait()
            except queue.Empty:
                return
            self.say(line)

    def sync(
        self, engines: Iterable[Engine], now: datetime
    ) -> list[LimitObserved | UsageObserved]:
        """At a turn start: the team's engines' limits and usage readings (docs/sharing.md),
        plus the messages received meanwhile; the records other runs wrote that this run has not
        been told of yet — limits first, then readings whose window has not reset at `now`.

        Read from the mirror when it can be trusted (`Mirror.trusted`, docs/sharing.md "The
        local mirror"), else in one round trip (which also rebuilds the mirror)."""
        self._news.clear()
        self._say_queued()
        self._active_until = time.monotonic() + ACTIVE_SECONDS
        self._next_poll = time.monotonic() + POLL_SECONDS
        with self._live_lock:  # before the inbox: older messages are all in it by now
            generation, confirmed = self._liveness.generation, self._liveness.confirmed
        if self._still_quiet(engines, now, generation, confirmed):
            # Nothing heard since the last read from the mirror for these engines: it reads
            # what it read then, less what has reset since, all of it told already.
            self.mirror_reads += 1
            return []
        self._quiet = None
        found: list[Shared | SharedUsage] = self._drain_inbox()
        wanted = [(e, self.settings.key(e)) for e in dict.fromkeys(engines)]
        keyed = [(e, k) for e, k in wanted if k is not None]
        places: list[Where] = [
            (self.settings.accounts[account_key(e)], shared_engine(e)) for e, _k in keyed]
        if keyed and self._up and self._mirror.trusted(
            places, generation=generation, confirmed=confirmed, clock=time.monotonic()
        ):
            held, heard = self._mirror.read(places, self._server_ms(now))
            found += held
            found += heard
            self.mirror_reads += 1
            self._quiet = (engines, self._mirror.version, now)  # all told below
        elif keyed and self._may_try():
            found += self._round_trip(keyed, places, generation, now)
        return self._untold(found, now)

    def _still_quiet(self, engines: Iterable[Engine], now: datetime, generation: int | None,
                     confirmed: float | None) -> bool:
        """Whether nothing was heard since the last read from a live mirror for `engines`."""
        quiet = self._quiet
        return (
            quiet is not None
            and quiet[0] is engines
            and quiet[1] == self._mirror.version
            and now >= quiet[2]
            and self._up
            and self._inbox.empty()
            and self._mirror.live(generation=generation, confirmed=confirmed,
                                  clock=time.monotonic())
        )

    def _drain_inbox(self) -> list[Shared | SharedUsage]:
        """The records the subscriber received since the last sync, applied to the mirror."""
        found: list[Shared | SharedUsage] = []
        while True:
            try:
                item = self._inbox.get_nowait()
            except queue.Empty:
                return found
            found.append(item)
            if isinstance(item, SharedUsage):
                self._mirror.apply_usage(item)
            else:
                self._mirror.apply_limit(item)

    def _round_trip(self, keyed: list[tuple[Engine, str]], places: list[Where],
                    generation: int | None, now: datetime) -> list[Shared | SharedUsage]:
        """The engines' records in one round trip, which rebuilds the mirror; none when Redis
        cannot be reached (the run carries on with its own)."""
        with self._mine_lock:
            mine = self._live_mine(self._server_ms(now))
        cluster = topology(self.settings.url) == "cluster"
        try:
            pipe = self._client.pipeline(transaction=False)
            if cluster:  # a cluster pipeline takes keyed commands only: TIME apart
                before = self._wall()
                server = self._client.time()
                after = self._wall()
            else:
                pipe.time()
            if cluster:  # nor MGET: a GET each (one slot, so one node, one round trip)
                for _e, key in keyed:
                    pipe.get(key)
            else:
                pipe.mget([k for _e, k in keyed])
            for engine, _key in keyed:
                pipe.hgetall(self.settings.usage_key(engine))
            _queue_checks(pipe, mine)
            if not cluster:
                before = self._wall()
            results = pipe.execute(raise_on_error=False)
            if not cluster:
                after = self._wall()
                server, *results = results
                values, *rest = results
            else:
                values, rest = results[:len(keyed)], results[len(keyed):]
            for value in values if cluster else [values]:
                if isinstance(value, Exception):
                    raise value
        except self._errors() as error:
            self._lost(error)
            return []
        self.round_trips += 1
        hashes, held = rest[:len(keyed)], rest[len(keyed):]
        self._measured(server, before, after)
        was_up = self._up
        self._back(now)  # after a loss, re-publishes all of this run's live records
        if was_up and _missing(mine, held):
            self.say(self._lost_records_line())
            self._republish(now)
        found: list[Shared | SharedUsage] = []
        snapshot: dict[Where, Shared | None] = {}
        windows: dict[Where, list[SharedUsage]] = {}
        for place, raw in zip(places, values, strict=True):
            shared = None if raw is None else _parse(place[0], place[1], raw)
            snapshot[place] = shared
            if shared is not None:
                found.append(shared)
        for place, fields, (engine, _k) in zip(places, hashes, keyed, strict=True):
            if not isinstance(fields, dict):
                # A key this version cannot read (the mirror is not trusted): said once (a
                # wrongly typed one is repaired when this run writes there, `_run_script`).
                usage_key = self.settings.usage_key(engine)
                if isinstance(fields, BaseException) and usage_key is not None:
                    self._cannot("read", usage_key, fields)
                continue
            if self._problems and self._problems.pop(
                    f"read {self.settings.usage_key(engine)}", None) is not None:
                self._write_status()  # readable again
            kept = windows.setdefault(place, [])
            for window in sorted(fields):
                name = window.decode("utf-8", "replace") if isinstance(
                    window, bytes) else str(window)
                reading = _parse_usage(place[0], place[1], name, fields[window])
                if reading is not None:
                    found.append(reading)
                    kept.append(reading)
        # A read that began while subscription `generation` was live is a rebuild of the
        # mirror (None: no live subscription, so it is not trusted).
        self._mirror.rebuild(generation, snapshot, windows)
        return found

    def _untold(self, found: list[Shared | SharedUsage],
                now: datetime) -> list[LimitObserved | UsageObserved]:
        """What of `found` this run was not told yet, as events: limits first, then readings."""
        limits: list[LimitObserved | UsageObserved] = []
        readings: list[LimitObserved | UsageObserved] = []
        for item in found:
            self._check_name(item)
            if isinstance(item, SharedUsage):
                observed = self._heard_usage(item, now)
                if observed is not None:
                    readings.append(observed)
                continue
            engine = self.settings.local(item.account, item.engine)
            if engine is None or self._own(item):
                continue  # not an account of this run, or this run's own record
            where = self.settings.limit_key(item.account, item.engine)
            self._live_limit_ms = max(self._live_limit_ms, item.reset)
            if self._delivered.get(where) == item:
                continue
            self._delivered[where] = item
            local = self._local(item)
            assert isinstance(local, Shared)
            told = attrs.evolve(local.observed(now), engine=engine)
            self._doubt(where, item, told)
            limits.append(told)
        return limits + readings

    def _doubt(self, where: str, item: Shared, observed: LimitObserved) -> None:
        """docs/sharing.md "Clocks": a read reset beyond any window of its provider is taken by
        the core as its A6 default (`registry.believed`); said once per record."""
        from autodev_core.scheduler import EngineLimit
        from autodev_core.scheduler.registry import believed

        claimed = EngineLimit(observed.engine, observed.until, observed.read, observed.seen,
                              observed.source)
        taken = believed(claimed)
        if taken is claimed or (where, item.reset, item.seen, item.who) in self._doubted:
            return
        self._doubted.add((where, item.reset, item.seen, item.who))
        self.say(_doubted_line(claimed, taken))

    def forget_told(self) -> None:
        """Forget which records the core was told of (the next turn start tells them all again,
        as a first one does): for benchmarks and tests."""
        self._delivered.clear()
        self._heard.clear()
        self._quiet = None

    def _heard_usage(self, shared: SharedUsage, now: datetime) -> UsageObserved | None:
        """A reading of another run not delivered yet, whose window has not reset (else None)."""
        engine = self.settings.local(shared.account, shared.engine)
        if engine is None or self._own(shared):
            return None  # not an account of this run, or this run's own reading
        where = self.settings.readings_key(shared.account, shared.engine)
        if shared.reset <= self._server_ms(now):
            return None  # its window has reset: dropped
        if self._heard.get((where, shared.window)) == shared:
            return None
        self._heard[(where, shared.window)] = shared
        local = self._local(shared)
        assert isinstance(local, SharedUsage)
        return attrs.evolve(local.observed(now), engine=engine)

    def _live_mine(self, server_ms: int) -> list[tuple[str, str | None]]:
        """This run's records whose reset is still to come: (key, usage window or None)."""
        found: list[tuple[str, str | None]] = [
            (k, None) for k, r in self._mine.items() if r.reset > server_ms]
        found += [(k, w) for (k, w), r in self._mine_usage.items() if r.reset > server_ms]
        return [where for where in found if where in self._written]

    def _lost_records_line(self) -> str:
        return (
            f"limit sharing: Redis no longer held this run's live records "
            f"({self.settings.shown_url}: emptied, restarted or evicted); re-published them"
        )

    def _listen(self) -> None:
        """The subscriber: its own connection, reconnecting quietly (the loop says lost/back).

        It also says how far it can be trusted. Once both channels are confirmed it
        starts a new generation (the mirror must be rebuilt under it); it sends a PING every
        PING_SECONDS while something is live (IDLE_PING_SECONDS otherwise) and, when the PONG
        comes back (after every message published before the PING), records when that PING
        was sent. An error ends the generation, and status says lost at once. A SUBSCRIBE
        the ACL refuses is said once; the daemon polls instead (`has_news`)."""
        checker: Any = None
        while not self._stop.is_set():
            pubsub = None
            try:
                client = connect(self._redis, self.settings, socket_timeout=None,
                                 **self._connection_kwargs())
                if checker is None:
                    checker = connect(self._redis, self.settings,
                                      socket_timeout=self.settings.timeout,
                                      **self._connection_kwargs())
                pubsub = client.pubsub()
                self._read_channels(pubsub, checker)
            except self._redis.ResponseError as error:
                self._end_generation()
                self._subscriber(down=True)
                if isinstance(error, self._redis.exceptions.NoPermissionError) or (
                        "NOPERM" in str(error)):
                    self._refused(error)
                    self._stop.wait(DENIED_RETRY_SECONDS)
                else:
                    self._stop.wait(min(self.retry_seconds, 1.0))
            except self._errors():
                self._end_generation()
                self._subscriber(down=True)
                self._stop.wait(min(self.retry_seconds, 1.0))
            finally:
                self._end_generation()
                if pubsub is not None:
                    try:
                        pubsub.close()
                    except self._errors():
                        pass
        if checker is not None:
            try:
                checker.close()
            except self._errors():
                pass

    def _subscriber(self, *, down: bool) -> None:
        """The subscription was lost (a closed connection, a PING unanswered for LIVE_SECONDS)
        or is live again: status says so at once, and a waiting daemon polls meanwhile."""
        if self._sub_down == down:
            return
        self._sub_down = down
        if down:
            self._news.set()  # a sleeping daemon makes the round trip, which says lost
        self._write_status()

    def _refused(self, error: BaseException) -> None:
        """The ACL refused SUBSCRIBE: one line, status says it, the daemon polls instead."""
        reason = self._scrub(" ".join(str(error).split())[:160])
        if self._denied is None:
            self._lines.put(
                f"limit sharing cannot subscribe to {self.settings.channel} "
                f"({self.settings.shown_url}: {reason}); a waiting daemon asks Redis every "
                f"{POLL_SECONDS:g} s instead (grant the user &{self.settings.prefix}:*)"
            )
            self._news.set()
        self._denied = reason
        self._write_status()

    def _active(self) -> bool:
        """Whether the keepalive is fast: a limit is live, or a turn start read lately."""
        now_ms = int(self._wall() * 1000) - self._offset_ms
        return time.monotonic() < self._active_until or now_ms < self._live_limit_ms

    def _check_records(self, checker: Any) -> None:
        """Whether Redis still holds this run's live records; those it lost (a restart empty,
        FLUSHALL, eviction) are offered again through the merge scripts, and said."""
        with self._republish_lock:
            self._check_held(checker)

    def _check_held(self, checker: Any) -> None:
        now_ms = int(self._wall() * 1000) - self._offset_ms
        with self._mine_lock:
            mine = self._live_mine(now_ms)
            limits = {k: r for k, r in self._mine.items() if r.reset > now_ms}
            readings = {kw: r for kw, r in self._mine_usage.items() if r.reset > now_ms}
        if not mine or not self._up:
            return  # nothing to keep, or the loop re-publishes all when sharing is back
        try:
            pipe = checker.pipeline(transaction=False)
            _queue_checks(pipe, mine)
            missing = _missing(mine, pipe.execute(raise_on_error=False))
            if not missing:
                return
            merge = checker.register_script(MERGE_SCRIPT)
            usage = checker.register_script(USAGE_SCRIPT)
            for key, window in missing:
                if window is None:
                    record = limits[key]
                    merge(keys=[key], args=merge_args(record, now_ms, self.settings.channel))
                else:
                    reading = readings[(key, window)]
                    usage(keys=[key], args=[
                        reading.payload(), now_ms, self.settings.usage_channel,
                        reading.account, str(reading.engine), window])
        except self._errors():
            return  # the daemon's loop says lost, and re-publishes when it is back
        self._lines.put(self._lost_records_line())
        self._news.set()

    def _read_channels(self, pubsub: Any, checker: Any = None) -> None:
        """One subscription's messages, until the run stops or the connection fails."""
        channels = {self.settings.channel, self.settings.usage_channel}
        subscribed_at = time.monotonic()
        pubsub.subscribe(*channels)
        usage = self.settings.usage_channel.encode("utf-8")
        pending: set[str] = set(channels)
        pings: dict[str, float] = {}
        count = 0
        last_ping = subscribed_at  # the last PING sent (or the SUBSCRIBE)
        next_ping = subscribed_at + PING_SECONDS
        next_check = subscribed_at
        while not self._stop.is_set():
            clock = time.monotonic()
            # Fast at once when something becomes live, not at the end of an idle interval.
            next_ping = last_ping + (PING_SECONDS if self._active() else IDLE_PING_SECONDS)
            if not pending and clock >= next_ping:
                count += 1
                pings[f"autodev-{count}"] = clock
                pubsub.ping(f"autodev-{count}")
                last_ping = clock
                next_ping = clock + PING_SECONDS
            if not pending and checker is not None and clock >= next_check:
                next_check = clock + CHECK_SECONDS
                self._check_records(checker)
            if pings and clock - min(pings.values()) > LIVE_SECONDS:
                self._subscriber(down=True)  # a PING unanswered: a stopped or silent server
            message = pubsub.get_message(
                timeout=max(0.01, min(PING_SECONDS, next_ping - time.monotonic()))
            )
            if message is None:
                continue
            kind = message.get("type")
            if kind == "subscribe":
                if not pending:
                    # redis-py reconnected and subscribed again by itself: what was
                    # published meanwhile was not heard. A new generation once every
                    # channel is confirmed, vouched for only by a PING sent after it.
                    self._end_generation()
                    pending, pings = set(channels), {}
                    subscribed_at = float("-inf")
                pending.discard(_text(message.get("channel")))
                if not pending:
                    with self._live_lock:
                        self._liveness.subscribed(subscribed_at)
                    if self._denied is not None:
                        self._denied = None
                        self._lines.put(f"limit sharing hears other runs again "
                                        f"({self.settings.channel})")
                    self._subscriber(down=False)
                continue
            if kind == "pong":
                sent = pings.pop(_text(message.get("data")), None)
                if sent is not None:
                    with self._live_lock:
                        self._liveness.answered(sent)
                    if not pending:
                        self._subscriber(down=False)
                continue
            if kind != "message":
                continue
            if message.get("channel") in (usage, self.settings.usage_channel):
                self._receive_usage(message.get("data"))
            else:
                self._receive(message.get("data"))

    def _end_generation(self) -> None:
        """The subscription is gone: the mirror is not trusted until rebuilt under another."""
        with self._live_lock:
            self._liveness.ended()

    def _receive(self, raw: Any) -> None:
        try:
            data = json.loads(raw)
            account = str(data["account"])
            engine = Engine.parse(str(data["engine"]))
        except (ValueError, KeyError, TypeError):
            return
        if self.settings.local(account, engine) is None:
            return  # another account: never mixed
        shared = _parse(account, engine, raw)
        if shared is None:
            return
        self._inbox.put(shared)  # this run's own too: the mirror holds what Redis holds
        if not self._own(shared):
            self._news.set()

    def _receive_usage(self, raw: Any) -> None:
        """A reading published on the usage channel, for an account of this run."""
        try:
            data = json.loads(raw)
            account = str(data["account"])
            engine = Engine.parse(str(data["engine"]))
            window = str(data["window"])
            record = data["record"]
        except (ValueError, KeyError, TypeError):
            return
        if self.settings.local(account, engine) is None:
            return  # another account: never mixed
        shared = _parse_usage(account, engine, window, record)
        if shared is None:
            return
        self._inbox.put(shared)  # this run's own too: the mirror holds what Redis holds
        if not self._own(shared):
            self._news.set()

    def close(self) -> None:
        self._stop.set()
        if self.status_file is not None:
            self.status_file.unlink(missing_ok=True)  # `autodev status`: sharing off
        if self._thread is not None:
            self._thread.join(timeout=2.0)
        try:
            self._client.close()
        except self._errors():
            pass


def _queue_checks(pipe: Any, mine: list[tuple[str, str | None]]) -> None:
    """Whether each of this run's live records is still held: EXISTS, or HEXISTS of a window."""
    for key, window in mine:
        if window is None:
            pipe.exists(key)
        else:
            pipe.hexists(key, window)


def _missing(mine: list[tuple[str, str | None]],
             held: list[Any]) -> list[tuple[str, str | None]]:
    """Those of `mine` that Redis answered it does not hold (an error is no answer)."""
    return [where for where, answer in zip(mine, held, strict=True)
            if not isinstance(answer, BaseException) and not answer]


def _utc(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def _not_vouched(read: EngineLimit, form: str, skew_ms: int, shared: EngineLimit) -> str:
    """The line for a reset this run read but does not vouch for (docs/sharing.md "Clocks")."""
    from autodev_core.scheduler.logs import reset_not_vouched

    return reset_not_vouched(read.engine, _utc(read.until), form, _seconds(skew_ms),
                             _utc(shared.until))


def _doubted_line(claimed: EngineLimit, taken: EngineLimit) -> str:
    """The line for another run's reset beyond any window (docs/sharing.md "Clocks")."""
    from autodev_core.scheduler.logs import reset_beyond_any_window
    from autodev_core.scheduler.registry import LONGEST_WINDOW

    return reset_beyond_any_window(claimed.engine, claimed.source, _utc(claimed.until),
                                   LONGEST_WINDOW[claimed.engine.provider].days,
                                   _utc(taken.until))


def _seconds(ms: int) -> str:
    """`30 s ahead of` / `5 min 0 s behind`: how far this clock is from Redis's."""
    total = round(abs(ms) / 1000)
    text = f"{total // 60} min {total % 60} s" if total >= 60 else f"{total} s"
    return f"{text} {'ahead of' if ms > 0 else 'behind'}"
