"""The mirror against the round-trip reader, on a model Redis (no server).

The model Redis holds what the two merge scripts write (a Python transcription of MERGE_SCRIPT
and USAGE_SCRIPT: limit keys expiring at their reset, usage hashes by window) and publishes what
they change to a subscriber whose messages may be delivered late, or lost when its connection
drops. Other runs write; time passes (resets pass, PONGs grow old); Redis restarts empty; turn
starts happen. At each turn start two readers run, fed the same pub/sub messages:

- the round-trip reader (what `LimitSharing.sync` did before the mirror): Redis, read now;
- the mirror reader (what it does now): `Mirror` + `Liveness`, read from memory when
  `Mirror.trusted`, else the round trip, which rebuilds the mirror under the subscription that
  was live when it began.

The property: whenever the mirror is trusted and no published message is still in flight, it
reads exactly what the round trip reads (nothing whose reset has passed), and the registries
the two readers built through the core's own rules (`merge_limit`, `merge_usage`) decide the
same: the same engines limited until the same time, the same readings counting. When it is not
trusted it is not read.
"""

from __future__ import annotations

from datetime import datetime

import attrs
from hypothesis import currently_in_test_context, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from autodev_core.engine import Engine
from autodev_core.scheduler import EngineLimit, EngineUsage
from autodev_core.scheduler.registry import merge_limit, merge_usage
from autodev_shell.sharing import Shared, SharedUsage, from_millis
from autodev_shell.sharing.mirror import LIVE_SECONDS, Liveness, Mirror, Where
from autodev_shell.sharing.records import merge_args

ME = "me"
PLACES: tuple[Where, ...] = (
    ("work-max", Engine("claude")),
    ("work-max", Engine("claude", "sonnet")),
    ("team", Engine("codex")),
)
WINDOWS = ("five_hour", "seven_day")
T0 = 1_800_000_000_000  # epoch ms
MINUTE = 60_000
#: How far ahead of now a written reset is (ms): passed already, within a PONG's life, later.
AHEAD = (-MINUTE, 0, 700, 1_500, MINUTE, 10 * MINUTE, 30 * MINUTE)

Record = Shared | SharedUsage


def merge_script(held: Shared | None, obs: Shared, now: int) -> Shared | None:
    """MERGE_SCRIPT, transcribed: the new record when it changed (then published), else None.
    `held` is what GET returns (the key expires at its reset: the TTL is reset - now). Both
    are first taken as the script takes them (a read reset past the bound, ARGV[6], is the
    default after its sighting, ARGV[7], unread: docs/sharing.md "Clocks")."""
    args = merge_args(obs, now, "limits")
    bound, default = args[5], args[6]

    def believed(r: Shared) -> Shared:
        if r.read and r.reset - r.seen > bound:
            return attrs.evolve(r, reset=r.seen + default, read=False)
        return r

    obs = believed(obs)
    rec = believed(held) if held is not None and held.reset > now else None
    if rec is not None and obs.seen >= rec.reset:
        rec = None
    if rec is None:
        return obs
    if obs.reset <= rec.seen:
        return None
    if obs.read != rec.read:
        return obs if obs.read else None
    if obs.reset != rec.reset:
        return obs if obs.reset > rec.reset else None
    if obs.who != rec.who:
        return obs if obs.who < rec.who else None
    return obs if obs.seen < rec.seen else None


def usage_script(held: SharedUsage | None, obs: SharedUsage, now: int) -> bool:
    """USAGE_SCRIPT, transcribed: whether `obs` replaces the window's reading (published)."""
    if obs.reset <= now:
        return False
    if held is None or held.reset <= now:
        return True

    def rank(r: SharedUsage) -> tuple[int, float, int, bool]:
        return (r.seen, r.utilization, r.reset, r.read)

    if rank(held) != rank(obs):
        return rank(obs) > rank(held)
    if obs.who != held.who:
        return obs.who < held.who

    def said(r: SharedUsage) -> float:
        return -1.0 if r.threshold is None else r.threshold

    return said(obs) > said(held)


class Registry:
    """A run's registry as the core keeps it: this run's own records as learned locally, the
    others' as delivered, each joined by the core's rule."""

    def __init__(self) -> None:
        self.limits: dict[Engine, EngineLimit] = {}
        self.readings: dict[tuple[Engine, str], EngineUsage] = {}

    def take(self, record: Record, now: int) -> None:
        source = "" if record.who == ME else record.who
        if isinstance(record, SharedUsage):
            reading = EngineUsage(engine=record.engine, utilization=record.utilization,
                                  window=record.window, until=from_millis(record.reset),
                                  read=record.read, seen=from_millis(record.seen), source=source)
            key = (record.engine, record.window)
            self.readings[key] = merge_usage(self.readings.get(key), reading, from_millis(now))
        else:
            limit = EngineLimit(engine=record.engine, until=from_millis(record.reset),
                                read=record.read, seen=from_millis(record.seen), source=source)
            self.limits[record.engine] = merge_limit(self.limits.get(record.engine), limit,
                                                     from_millis(now))

    def decisions(self, now: int) -> tuple[dict[Engine, datetime], dict[tuple[Engine, str], float]]:
        """What the scheduler acts on at `now`: which engines are limited until when (A8-A18),
        which readings still count (their window has not reset)."""
        at = from_millis(now)
        return (
            {e: r.until for e, r in self.limits.items() if r.until > at},
            {k: r.utilization for k, r in self.readings.items() if r.until > at},
        )


class MirrorAgainstRoundTrip(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = T0
        # The model Redis.
        self.keys: dict[Where, Shared] = {}
        self.hashes: dict[Where, dict[str, SharedUsage]] = {}
        # What each run wrote last, per key and window (re-published when Redis comes back).
        self.mine: dict[tuple[str, Where, str | None], Record] = {}
        # Every reading written, per place and window: (seen, reset), as the provider told it.
        self.sightings: dict[tuple[Where, str], list[tuple[int, int]]] = {}
        # The subscriber: its connection, what is published but not received yet, the inbox.
        self.connected = True  # the run starts subscribed (its first turn start rebuilds)
        self.in_flight: list[Record] = []
        self.inbox: list[Record] = []
        self.liveness = Liveness()
        self.liveness.subscribed(self.clock)
        # The two readers.
        self.mirror = Mirror()
        self.trip_registry = Registry()
        self.mirror_registry = Registry()

    @property
    def clock(self) -> float:
        return self.now / 1000  # monotonic seconds, moving with the wall clock here

    def _publish(self, record: Record) -> None:
        if record.who == ME:
            self.trip_registry.take(record, self.now)  # learned locally, before it is shared
            self.mirror_registry.take(record, self.now)
        if self.connected:
            self.in_flight.append(record)  # else nobody hears it: a gap

    # --- other runs (and this one) write ---------------------------------------------------

    @rule(who=st.sampled_from(("a", "b", ME)), place=st.sampled_from(PLACES),
          seen=st.integers(0, 10), ahead=st.sampled_from(AHEAD), read=st.booleans())
    def write_limit(self, who: str, place: Where, seen: int, ahead: int, read: bool) -> None:
        seen_ms = self.now - seen * MINUTE
        obs = Shared(account=place[0], engine=place[1], reset=max(seen_ms + 1, self.now + ahead),
                     read=read, seen=seen_ms, who=who)
        self.mine[(who, place, None)] = obs
        self._merge(obs)

    def _merge(self, obs: Shared) -> None:
        place = (obs.account, obs.engine)
        new = merge_script(self.keys.get(place), obs, self.now)
        if new is None:
            return
        if new.reset > self.now:
            self.keys[place] = new
        else:
            self.keys.pop(place, None)
        self._publish(new)

    @rule(who=st.sampled_from(("a", "b", ME)), place=st.sampled_from(PLACES),
          window=st.sampled_from(WINDOWS), util=st.sampled_from((0.5, 0.9, 0.97)),
          seen=st.integers(0, 5), ahead=st.sampled_from(AHEAD), read=st.booleans())
    def write_reading(self, who: str, place: Where, window: str, util: float, seen: int,
                      ahead: int, read: bool) -> None:
        seen_ms = self.now - seen * MINUTE
        obs = SharedUsage(account=place[0], engine=place[1], window=window, utilization=util,
                          reset=self._window_end(place, window, seen_ms, self.now + ahead),
                          read=read, seen=seen_ms, who=who)
        self.mine[(who, place, window)] = obs
        self._merge_usage(obs)

    def _window_end(self, place: Where, window: str, seen: int, drawn: int) -> int:
        """The reset a reading seen at `seen` reports: `drawn`, kept between the resets of the
        readings of the same window seen before and after it. A provider's window ends where it
        ends, whoever reads it: a reading seen later never ends earlier. Two readings that
        break this (one machine's clock ahead of another's, at a window's end) carry a wrong
        `seen`, and a run that heard one of them late can disagree with one that did not until
        the window's next reading (docs/sharing.md; the test below shows the case the live-first
        rule mends)."""
        sightings = self.sightings.setdefault((place, window), [])
        low = max((reset for at, reset in sightings if at <= seen), default=drawn)
        # With no reading seen after it, nothing bounds it from above: `drawn` is no bound (a
        # default of `drawn` here let a later reading end before an earlier one, seed 2877277202).
        high = min((reset for at, reset in sightings if at >= seen), default=max(drawn, low))
        reset = min(max(drawn, low), high)
        sightings.append((seen, reset))
        return reset

    def _merge_usage(self, obs: SharedUsage) -> None:
        place, window = (obs.account, obs.engine), obs.window
        held = self.hashes.setdefault(place, {})
        if not usage_script(held.get(window), obs, self.now):
            return
        held[window] = obs
        for name in [w for w, r in held.items() if r.reset <= self.now]:
            del held[name]  # the script drops a reset window
        self._publish(obs)

    # --- the subscriber --------------------------------------------------------------------

    @rule(count=st.integers(1, 3))
    def deliver(self, count: int) -> None:
        """Some messages arrive, in the order they were published."""
        self.inbox += self.in_flight[:count]
        del self.in_flight[:count]

    @precondition(lambda self: self.connected)
    @rule()
    def pong(self) -> None:
        """A PING sent now is answered: every message published before it has arrived."""
        self.inbox += self.in_flight
        self.in_flight = []
        self.liveness.answered(self.clock)

    @precondition(lambda self: self.connected)
    @rule(again=st.booleans())
    def disconnect(self, again: bool = False) -> None:
        """The subscriber's connection drops: what was in flight is lost (`again`: it
        subscribes again at once)."""
        self.connected = False
        self.in_flight = []
        self.liveness.ended()
        if again:
            self.subscribe()

    @precondition(lambda self: not self.connected)
    @rule()
    def subscribe(self) -> None:
        self.connected = True
        self.liveness.subscribed(self.clock)

    @precondition(lambda self: self.connected)
    @rule(who=st.sampled_from(("a", "b")), place=st.sampled_from(PLACES),
          ahead=st.sampled_from(AHEAD[3:]), window=st.sampled_from((None, *WINDOWS)))
    def gap(self, who: str, place: Where, ahead: int, window: str | None) -> None:
        """The connection drops, another run writes meanwhile (nobody hears it), and the
        subscriber subscribes again (and sees a PONG): only a rebuild can know of that write."""
        self.disconnect()
        if window is None:
            self.write_limit(who, place, 0, ahead, True)
        else:
            self.write_reading(who, place, window, 0.97, 0, ahead, True)
        self.subscribe()

    @rule(again=st.booleans())
    def restart_empty(self, again: bool) -> None:
        """Redis is killed and started again, empty (no persistence); the subscriber's
        connection drops (`again`: it subscribes again before anything is re-published), and
        each run re-publishes what it wrote (`LimitSharing._back`)."""
        self.keys.clear()
        self.hashes.clear()
        if self.connected:
            self.disconnect(again)
        for record in list(self.mine.values()):
            if record.reset > self.now:
                if isinstance(record, SharedUsage):
                    self._merge_usage(record)
                else:
                    self._merge(record)

    @rule(ms=st.sampled_from((1, 500, 1_000, 2_500, MINUTE, 7 * MINUTE)),
          answered=st.booleans())
    def time_passes(self, ms: int, answered: bool) -> None:
        """Time passes; a live subscriber (`answered`) has its PINGs answered meanwhile, a
        stopped daemon or a silent server does not."""
        self.now += ms
        if answered and self.connected:
            self.pong()

    def _resets(self) -> list[int]:
        held = [*self.keys.values(), *(r for h in self.hashes.values() for r in h.values())]
        return [r.reset for r in held if r.reset > self.now]

    @precondition(lambda self: bool(self._resets()))
    @rule(answered=st.booleans())
    def until_a_reset(self, answered: bool) -> None:
        """Time reaches the next reset exactly (A38: it has come when now >= reset)."""
        self.time_passes(min(self._resets()) - self.now, answered)

    # --- turn starts ---------------------------------------------------------------------

    def _round_trip(self) -> tuple[dict[Where, Shared | None], dict[Where, list[SharedUsage]]]:
        """MGET + HGETALL as Redis answers now (a hash keeps a reset field until it is
        written again or expires with its last window; the delivery drops such a field)."""
        limits = {p: (r if (r := self.keys.get(p)) is not None and r.reset > self.now else None)
                  for p in PLACES}
        hashes = {p: [h[w] for w in sorted(h)] if (h := self.hashes.get(p)) and max(
            r.reset for r in h.values()) > self.now else [] for p in PLACES}
        return limits, hashes

    def _flat(self, limits: dict[Where, Shared | None],
              hashes: dict[Where, list[SharedUsage]]) -> list[Record]:
        out: list[Record] = [r for p in PLACES if (r := limits[p]) is not None]
        out += [r for p in PLACES for r in hashes[p] if r.reset > self.now]
        return out

    @rule(fails=st.booleans(), answered=st.booleans())
    def turn_start(self, fails: bool, answered: bool) -> None:
        """A turn start; `answered`: a PONG came back just before (as on a live subscription),
        `fails`: Redis does not answer a round trip."""
        if answered and self.connected:
            self.pong()
        generation, confirmed = self.liveness.generation, self.liveness.confirmed
        messages, self.inbox = self.inbox, []
        for item in messages:
            if isinstance(item, SharedUsage):
                self.mirror.apply_usage(item)
            else:
                self.mirror.apply_limit(item)
        limits, hashes = self._round_trip()
        truth = self._flat(limits, hashes)
        trusted = self.mirror.trusted(PLACES, generation=generation, confirmed=confirmed,
                                      clock=self.clock)
        if trusted:
            held, heard = self.mirror.read(PLACES, self.now)
            read: list[Record] = [*held, *heard]
            assert all(r.reset > self.now for r in read), "delivered a record whose reset passed"
            if not self.in_flight:
                assert read == truth
                if currently_in_test_context():  # not when a test replays the steps by hand
                    event("compared: trusted, nothing in flight")
        elif fails:
            self.mirror.invalidate()  # Redis did not answer: `_lost`
            read = []
        else:
            self.mirror.rebuild(generation, limits, hashes)
            read = truth
        for item in messages:  # both readers hear the same messages, before what they read
            if item.who != ME:
                self.trip_registry.take(item, self.now)
                self.mirror_registry.take(item, self.now)
        if not (fails and not trusted):
            for item in truth:
                if item.who != ME:
                    self.trip_registry.take(item, self.now)
        for item in read:
            if item.who != ME:
                self.mirror_registry.take(item, self.now)
        if trusted and not self.in_flight:
            assert (self.mirror_registry.decisions(self.now)
                    == self.trip_registry.decisions(self.now))

    @invariant()
    def never_trusted_without_a_live_subscription(self) -> None:
        if not self.connected:
            assert not self.mirror.trusted(PLACES, generation=self.liveness.generation,
                                           confirmed=self.liveness.confirmed, clock=self.clock)

    @invariant()
    def never_trusted_on_an_old_pong(self) -> None:
        confirmed = self.liveness.confirmed
        if confirmed is None or self.clock - confirmed > LIVE_SECONDS:
            assert not self.mirror.trusted(PLACES, generation=self.liveness.generation,
                                           confirmed=confirmed, clock=self.clock)


TestMirrorAgainstRoundTrip = MirrorAgainstRoundTrip.TestCase
# Long enough runs that a rebuild, writes, a gap and a trusted turn start meet in most of them.
TestMirrorAgainstRoundTrip.settings = settings(stateful_step_count=100)


def test_a_lost_message_whose_reading_reset_before_the_rebuild_changes_no_decision() -> None:
    """A fresh clone's draw (seed 279565569025575506921222899506214072952, docs/cli.md), with the
    clocks of two machines apart: a reading R1 (seen at T0, its window ending T0+0.7 s) is read
    by the round trip while its message is in flight to a trusted mirror; the subscriber's
    connection drops (R1's message is lost), R1's window resets, and a reading R2 of the same
    window from a machine whose clock is a minute behind (seen T0-59.3 s, ending T0+1.4 s) takes
    R1's place in Redis. The round-trip registry joined R1 then R2, the mirror's only R2: both
    must count R2, as Redis does (a reading whose window has reset is gone, A38), not keep the
    dead R1 because its `seen` is later (an older `merge_usage`)."""
    m = MirrorAgainstRoundTrip()
    sonnet = ("work-max", Engine("claude", "sonnet"))
    m.turn_start(fails=False, answered=False)
    m.write_reading(who="a", place=sonnet, window="seven_day", util=0.5, seen=0, ahead=700,
                    read=False)
    m.turn_start(fails=False, answered=False)
    m.gap(who="a", place=("work-max", Engine("claude")), ahead=1_500, window=None)
    m.until_a_reset(answered=False)
    skewed = SharedUsage(account=sonnet[0], engine=sonnet[1], window="seven_day",
                         utilization=0.5, reset=m.now + 700, read=False, seen=m.now - MINUTE,
                         who="a")
    m._merge_usage(skewed)  # past `write_reading`'s clamp: what a skewed clock writes
    m.deliver(count=1)
    m.turn_start(fails=False, answered=False)
    m.turn_start(fails=False, answered=False)
    assert m.trip_registry.decisions(m.now) == m.mirror_registry.decisions(m.now)
    assert m.trip_registry.decisions(m.now)[1] == {(Engine("claude", "sonnet"), "seven_day"): 0.5}
