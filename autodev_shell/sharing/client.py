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
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import unquote, urlsplit

from autodev_core.engine import Engine

from .mirror import PING_SECONDS, Liveness, Mirror, Where
from .records import Shared, SharedUsage, _parse, _parse_usage, _text, millis
from .scripts import MERGE_SCRIPT, USAGE_SCRIPT
from .settings import ShareSettings, connection_options, lost_reason

if TYPE_CHECKING:  # the scheduler is loaded only by a run that shares (cold start)
    from autodev_core.scheduler import EngineLimit, EngineUsage, LimitObserved, UsageObserved

#: Real seconds between attempts to reach Redis again once sharing is lost.
RETRY_SECONDS: Final = 2.0


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
    ) -> None:
        self.settings = settings
        self.status_file = status_file
        self.say = say or (lambda _line: None)
        self.retry_seconds = retry_seconds
        self._redis = importlib.import_module("redis")
        retry_mod = importlib.import_module("redis.retry")
        backoff = importlib.import_module("redis.backoff")
        self._client = self._redis.Redis.from_url(
            settings.url,
            socket_timeout=settings.timeout,
            socket_connect_timeout=settings.timeout,
            retry_on_timeout=False,
            retry=retry_mod.Retry(backoff.NoBackoff(), 0),
            health_check_interval=0,
            **connection_options(settings),
        )
        self._script = self._client.register_script(MERGE_SCRIPT)
        self._usage_script = self._client.register_script(USAGE_SCRIPT)
        self._up = True  # until an operation fails
        self._next_try = 0.0
        self._inbox: queue.SimpleQueue[Shared | SharedUsage] = queue.SimpleQueue()
        self._news = threading.Event()
        self._delivered: dict[str, Shared] = {}
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

    def _write_status(self) -> None:
        """What `autodev status` shows: on or lost, where (no password), who, which accounts."""
        if self.status_file is None:
            return
        data = {
            "state": "on" if self._up else "lost",
            "url": self.settings.shown_url,
            "prefix": self.settings.prefix,
            "name": self.settings.name,
            "accounts": dict(self.settings.accounts),
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
        self._up = True
        self.say(f"limit sharing is back ({self.settings.shown_url})")
        self._write_status()
        for record in list(self._mine.values()):
            if record.reset > millis(now):
                self._merge(record, now)
        for reading in list(self._mine_usage.values()):
            if reading.reset > millis(now):
                self._merge_usage(reading, now)

    # --- what this run learned ----------------------------------------------------------------

    def publish(self, records: Iterable[EngineLimit], now: datetime) -> None:
        """Offer this run's own limit records (source empty) to the shared registry."""
        for record in records:
            if record.source:
                continue  # another run's: already shared
            key = self.settings.key(record.engine)
            if key is None:
                continue  # only named accounts are shared
            shared = Shared(
                account=self.settings.accounts[record.engine.provider],
                engine=record.engine,
                reset=millis(record.until),
                read=record.read,
                seen=millis(record.seen if record.seen is not None else now),
                who=self.settings.name,
            )
            self._mine[key] = shared
            if self._may_try():
                self._merge(shared, now)

    def _merge(self, shared: Shared, now: datetime) -> bool:
        key = self.settings.key(shared.engine)
        assert key is not None
        return self._run_script(self._script, key, [
            shared.payload(), millis(now), self.settings.channel, shared.account,
            str(shared.engine)], now)

    def _run_script(self, script: Any, key: str, args: list[Any], now: datetime) -> bool:
        """One merge script's round trip: whether it changed the shared record. A lost Redis is
        said (`_lost`) and answers False; a round trip after a loss says sharing is back."""
        try:
            changed = script(keys=[key], args=args)
        except self._errors() as error:
            self._lost(error)
            return False
        self.round_trips += 1
        if not self._up:
            self._back(now)
        return bool(changed)

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
            shared = SharedUsage(
                account=self.settings.accounts[record.engine.provider],
                engine=record.engine,
                window=record.window,
                utilization=record.utilization,
                reset=reset,
                read=record.read,
                seen=millis(record.seen if record.seen is not None else now),
                who=self.settings.name,
                threshold=record.threshold,
            )
            self._mine_usage[(key, record.window)] = shared
            if self._may_try():
                self._merge_usage(shared, now)

    def _merge_usage(self, shared: SharedUsage, now: datetime) -> bool:
        key = self.settings.usage_key(shared.engine)
        assert key is not None
        return self._run_script(self._usage_script, key, [
            shared.payload(), millis(now), self.settings.usage_channel, shared.account,
            str(shared.engine), shared.window], now)

    # --- what other runs learned ------------------------------------------------------------

    def has_news(self) -> bool:
        """A pub/sub message arrived, or it is time to try a lost Redis again (polled by the
        sleeper, so a sleeping daemon wakes at once)."""
        return self._news.is_set() or (not self._up and time.monotonic() >= self._next_try)

    def sync(
        self, engines: Iterable[Engine], now: datetime
    ) -> list[LimitObserved | UsageObserved]:
        """At a turn start: the team's engines' limits and usage readings (docs/sharing.md),
        plus the messages received meanwhile; the records other runs wrote that this run has not
        been told of yet — limits first, then readings whose window has not reset at `now`.

        Read from the mirror when it can be trusted (`Mirror.trusted`, docs/sharing.md "The
        local mirror"), else in one round trip (which also rebuilds the mirror)."""
        self._news.clear()
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
        places: list[Where] = [(self.settings.accounts[e.provider], e) for e, _k in keyed]
        if keyed and self._up and self._mirror.trusted(
            places, generation=generation, confirmed=confirmed, clock=time.monotonic()
        ):
            held, heard = self._mirror.read(places, millis(now))
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
        try:
            pipe = self._client.pipeline(transaction=False)
            pipe.mget([k for _e, k in keyed])
            for engine, _key in keyed:
                pipe.hgetall(self.settings.usage_key(engine))
            values, *hashes = pipe.execute(raise_on_error=False)
            if isinstance(values, Exception):
                raise values
        except self._errors() as error:
            self._lost(error)
            return []
        self.round_trips += 1
        self._back(now)
        found: list[Shared | SharedUsage] = []
        snapshot: dict[Where, Shared | None] = {}
        windows: dict[Where, list[SharedUsage]] = {}
        for place, raw in zip(places, values, strict=True):
            shared = None if raw is None else _parse(place[0], place[1], raw)
            snapshot[place] = shared
            if shared is not None:
                found.append(shared)
        for place, fields in zip(places, hashes, strict=True):
            if not isinstance(fields, dict):
                continue  # a key this version cannot read (the mirror is not trusted)
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
            if isinstance(item, SharedUsage):
                observed = self._heard_usage(item, now)
                if observed is not None:
                    readings.append(observed)
                continue
            where = self.settings.key(item.engine)
            if where is None or item.who == self.settings.name:
                continue  # not an account of this run, or this run's own record
            if self._delivered.get(where) == item:
                continue
            self._delivered[where] = item
            limits.append(item.observed(now))
        return limits + readings

    def forget_told(self) -> None:
        """Forget which records the core was told of (the next turn start tells them all again,
        as a first one does): for benchmarks and tests."""
        self._delivered.clear()
        self._heard.clear()
        self._quiet = None

    def _heard_usage(self, shared: SharedUsage, now: datetime) -> UsageObserved | None:
        """A reading of another run not delivered yet, whose window has not reset (else None)."""
        where = self.settings.usage_key(shared.engine)
        if where is None or shared.who == self.settings.name:
            return None  # not an account of this run, or this run's own reading
        if shared.reset <= millis(now):
            return None  # its window has reset: dropped
        if self._heard.get((where, shared.window)) == shared:
            return None
        self._heard[(where, shared.window)] = shared
        return shared.observed(now)

    def _listen(self) -> None:
        """The subscriber: its own connection, reconnecting quietly (the loop says lost/back).

        It also says how far it can be trusted. Once both channels are confirmed it
        starts a new generation (the mirror must be rebuilt under it); it sends a PING every
        PING_SECONDS and, when the PONG comes back (after every message published before the
        PING), records when that PING was sent. An error ends the generation."""
        while not self._stop.is_set():
            pubsub = None
            try:
                client = self._redis.Redis.from_url(
                    self.settings.url,
                    socket_timeout=None,
                    socket_connect_timeout=self.settings.timeout,
                    health_check_interval=0,
                    **connection_options(self.settings),
                )
                pubsub = client.pubsub()
                self._read_channels(pubsub)
            except self._errors():
                self._end_generation()
                self._stop.wait(min(self.retry_seconds, 1.0))
            finally:
                self._end_generation()
                if pubsub is not None:
                    try:
                        pubsub.close()
                    except self._errors():
                        pass

    def _read_channels(self, pubsub: Any) -> None:
        """One subscription's messages, until the run stops or the connection fails."""
        channels = {self.settings.channel, self.settings.usage_channel}
        subscribed_at = time.monotonic()
        pubsub.subscribe(*channels)
        usage = self.settings.usage_channel.encode("utf-8")
        pending: set[str] = set(channels)
        pings: dict[str, float] = {}
        count = 0
        next_ping = subscribed_at + PING_SECONDS
        while not self._stop.is_set():
            clock = time.monotonic()
            if not pending and clock >= next_ping:
                count += 1
                pings[f"autodev-{count}"] = clock
                pubsub.ping(f"autodev-{count}")
                next_ping = clock + PING_SECONDS
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
                continue
            if kind == "pong":
                sent = pings.pop(_text(message.get("data")), None)
                if sent is not None:
                    with self._live_lock:
                        self._liveness.answered(sent)
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
        if self.settings.accounts.get(engine.provider) != account:
            return  # another account: never mixed
        shared = _parse(account, engine, raw)
        if shared is None:
            return
        self._inbox.put(shared)  # this run's own too: the mirror holds what Redis holds
        if shared.who != self.settings.name:
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
        if self.settings.accounts.get(engine.provider) != account:
            return  # another account: never mixed
        shared = _parse_usage(account, engine, window, record)
        if shared is None:
            return
        self._inbox.put(shared)  # this run's own too: the mirror holds what Redis holds
        if shared.who != self.settings.name:
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
