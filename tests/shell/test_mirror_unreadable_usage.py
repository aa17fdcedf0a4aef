"""A rebuild of the local mirror while one engine's usage readings cannot be read (docs/sharing.md,
"The local mirror"): its hash is a key this version cannot read (another type, another layout).
The rebuild still holds the other engines' records, and the mirror is trusted for them; for the
unreadable engine it says it holds no snapshot — not trusted, so a turn start wanting it makes
the round trip — rather than abort the whole rebuild, or take the unreadable hash for an engine
with no readings (which would read "nothing" out of memory for it, for as long as the mirror
lives). The same on a real redis-server: tests/e2e/test_sharing_unreadable_usage.py."""

from __future__ import annotations

from autodev_core.engine import Engine
from autodev_shell.sharing import Shared, SharedUsage
from autodev_shell.sharing.mirror import LIVE_SECONDS, Mirror, Where

T0 = 1_800_000_000_000  # epoch ms
HOUR = 3_600_000
CLAUDE: Where = ("work-max", Engine("claude"))
SONNET: Where = ("work-max", Engine("claude", "sonnet"))
CODEX: Where = ("team", Engine("codex"))
GENERATION = 1
CLOCK = 100.0  # monotonic seconds: a PONG confirmed the subscription just now


def limit(where: Where) -> Shared:
    return Shared(account=where[0], engine=where[1], reset=T0 + HOUR, read=True, seen=T0,
                  who="laptop")


def reading(where: Where, window: str = "five_hour") -> SharedUsage:
    return SharedUsage(account=where[0], engine=where[1], window=window, utilization=0.97,
                       reset=T0 + 2 * HOUR, read=True, seen=T0, who="laptop")


def trusted(mirror: Mirror, *wanted: Where) -> bool:
    return mirror.trusted(wanted, generation=GENERATION, confirmed=CLOCK - LIVE_SECONDS / 2,
                          clock=CLOCK)


def rebuilt_without_codex_usage() -> Mirror:
    """The round trip read every limit key and the claude hashes; codex's hash could not be
    read, so the snapshot has no usage entry for it (autodev_shell/sharing/client.py)."""
    mirror = Mirror()
    mirror.rebuild(
        GENERATION,
        {CLAUDE: limit(CLAUDE), SONNET: None, CODEX: limit(CODEX)},
        {CLAUDE: [reading(CLAUDE), reading(CLAUDE, "seven_day")], SONNET: [reading(SONNET)]},
    )
    return mirror


def test_the_other_engines_records_come_through_an_unreadable_hash() -> None:
    mirror = rebuilt_without_codex_usage()
    assert mirror.built == GENERATION
    assert trusted(mirror, CLAUDE, SONNET)
    limits, readings = mirror.read([CLAUDE, SONNET], T0)
    assert limits == [limit(CLAUDE)]
    assert readings == [reading(CLAUDE), reading(CLAUDE, "seven_day"), reading(SONNET)]


def test_an_engine_whose_usage_could_not_be_read_is_not_vouched_for() -> None:
    """Not trusted for codex, alone or with the others: the turn start asks Redis, instead of
    reading from memory that codex has no readings."""
    mirror = rebuilt_without_codex_usage()
    assert not trusted(mirror, CODEX)
    assert not trusted(mirror, CLAUDE, SONNET, CODEX)


def test_an_engine_with_no_readings_is_not_an_unreadable_one() -> None:
    """An empty hash (no reading yet) was read: the mirror holds that snapshot and is trusted
    for it — the difference the unreadable hash must not lose."""
    mirror = Mirror()
    mirror.rebuild(GENERATION, {CLAUDE: limit(CLAUDE), CODEX: None},
                   {CLAUDE: [reading(CLAUDE)], CODEX: []})
    assert trusted(mirror, CLAUDE, CODEX)
    assert mirror.read([CODEX], T0) == ([], [])


def test_a_message_does_not_stand_in_for_the_unreadable_snapshot() -> None:
    """A reading of codex heard by pub/sub afterwards is applied, but it is one window, not the
    engine's whole hash: only the next rebuild that reads it makes the mirror trusted for it."""
    mirror = rebuilt_without_codex_usage()
    mirror.apply_usage(reading(CODEX))
    assert not trusted(mirror, CODEX)
    mirror.rebuild(GENERATION, {CLAUDE: limit(CLAUDE), SONNET: None, CODEX: limit(CODEX)},
                   {CLAUDE: [], SONNET: [], CODEX: [reading(CODEX)]})
    assert trusted(mirror, CLAUDE, SONNET, CODEX)
    assert mirror.read([CODEX], T0) == ([limit(CODEX)], [reading(CODEX)])
