"""Every number the scheduler's policy uses, each beside the SPEC rule that fixes it.

Nothing else in `autodev_core.scheduler` writes a duration or a count literally.
"""

from __future__ import annotations

from datetime import timedelta
from types import MappingProxyType
from typing import Final

#: A6: no reset readable in a notice — claude waits one hour, codex and agy probe every 30 min.
DEFAULT_LIMIT_WAIT: Final = MappingProxyType({
    "claude": timedelta(hours=1),
    "codex": timedelta(minutes=30),
    "agy": timedelta(minutes=30),
})

#: A27: an unreachable provider is tried again after 1, 2, 4 and 8 minutes ...
OUTAGE_RETRIES: Final[tuple[timedelta, ...]] = (
    timedelta(minutes=1),
    timedelta(minutes=2),
    timedelta(minutes=4),
    timedelta(minutes=8),
)
#: ... A27: then every 15 minutes while the outage lasts, with no deadline.
OUTAGE_RETRY_EVERY: Final[timedelta] = timedelta(minutes=15)

#: A28: the wait after the n-th consecutive failure (1 s, then 1, 2, 4, 8, 15, 30 min) ...
BACKOFF: Final[tuple[timedelta, ...]] = (
    timedelta(seconds=1),
    timedelta(minutes=1),
    timedelta(minutes=2),
    timedelta(minutes=4),
    timedelta(minutes=8),
    timedelta(minutes=15),
    timedelta(minutes=30),
)
#: ... A28: then one hour each time.
BACKOFF_CAP: Final[timedelta] = timedelta(hours=1)

#: A29/A41: the run pauses at this many consecutive failed attempts, whoever made them.
GIVE_UP_AFTER: Final[int] = 12

#: A31: a participant ending this many turns in a row without a post pauses the run at once.
EMPTY_TURNS_PAUSE: Final[int] = 3


def default_limit_wait(provider: str) -> timedelta:
    """A6: how long an engine is taken out when its notice carried no readable reset."""
    return DEFAULT_LIMIT_WAIT[provider]


def backoff_after(failures: int) -> timedelta:
    """A28: the wait after `failures` consecutive failures (1-based)."""
    if failures < 1:
        raise ValueError(f"backoff_after needs at least one failure, not {failures}")
    return BACKOFF[failures - 1] if failures <= len(BACKOFF) else BACKOFF_CAP


def outage_retry_after(attempts: int) -> timedelta:
    """A27: the wait before the next try of a provider that failed `attempts` times in a row."""
    if attempts < 1:
        raise ValueError(f"outage_retry_after needs at least one attempt, not {attempts}")
    return OUTAGE_RETRIES[attempts - 1] if attempts <= len(OUTAGE_RETRIES) else OUTAGE_RETRY_EVERY
