"""Limits shared between daemons on one Redis server (docs/sharing.md).

The core decides (`LimitObserved`, `scheduler.registry.merge_limit`); this module only moves
records between a run's registry and Redis:

- one key per account and engine, `<prefix>:limit:<account>:<engine>`, holding the reset, whether
  it was read or defaulted, who saw it and when, as JSON, with a TTL ending at the reset (expiry is
  the lift; set as the time left by the writer's clock, so a server whose clock is off does not
  move it);
- a server-side Lua script that sets or moves a record only by the core's rule, atomically, and
  publishes the new record on `<prefix>:limits` when it changed;
- one round trip for the team's engines at each turn start (`sync`: an `MGET` of the limits,
  pipelined with the readings' `HGETALL`s), plus the pub/sub
  messages received meanwhile by a background subscriber (which also wakes a sleeping daemon);
- that round trip is skipped while the subscriber's mirror of those keys can be
  trusted (`mirror.Mirror`: a live subscription confirmed by PING/PONG within
  `LIVE_SECONDS`, and a rebuild since it was confirmed); the turn start then reads memory;
- every Redis operation has a short timeout; when Redis is down, slow or partitioned the run
  carries on with its own registry, says once that sharing is lost and once that it is back, and
  re-publishes what it learned meanwhile. Outages (A26) are never shared: only limits.

Usage readings (docs/sharing.md) travel the same way beside them: one hash per account and engine,
`<prefix>:usage:<account>:<engine>`, a field per window holding the last reading (utilization,
reset, whether it was read, who saw it and when, the provider's threshold), set by a second
script by the core's rule (`registry.merge_usage`: the newest reading wins per engine and
window) and published on `<prefix>:usage`; a reading whose window has reset is dropped (never
written, never delivered), and the hash expires with its last window.

Only providers (and engine accounts, `claude@work`) named in `accounts` are shared, so two
different logins are never mixed; a record names the engine without its local account label
(`ShareSettings.local` maps it back), so runs calling one account differently share it. The URL's
password never leaves this package: everything it says shows `redacted(url)`.

The modules: `settings.py` (what autodev.yaml and `--share` say), `scripts.py` (the merge rules,
server-side), `records.py` (a record as Redis holds it), `client.py` (`LimitSharing`) and
`mirror.py` (the subscriber's mirror). Their public names are here.
"""

from __future__ import annotations

from ..status.sharing import sharing_facts, sharing_line, status_lines
from .client import RETRY_SECONDS, LimitSharing
from .records import Shared, SharedUsage, from_millis, millis
from .scripts import MERGE_SCRIPT, USAGE_SCRIPT
from .settings import (
    DEFAULT_PREFIX,
    DEFAULT_TIMEOUT,
    SHARE_KEYS,
    ShareOptions,
    ShareSettings,
    check_accounts,
    check_url,
    connection_options,
    lost_reason,
    redacted,
    share_options,
    share_settings,
    unshared_accounts,
)

__all__ = [
    "DEFAULT_PREFIX",
    "DEFAULT_TIMEOUT",
    "MERGE_SCRIPT",
    "RETRY_SECONDS",
    "SHARE_KEYS",
    "USAGE_SCRIPT",
    "LimitSharing",
    "ShareOptions",
    "ShareSettings",
    "Shared",
    "SharedUsage",
    "check_accounts",
    "check_url",
    "connection_options",
    "from_millis",
    "lost_reason",
    "millis",
    "redacted",
    "share_options",
    "share_settings",
    "sharing_facts",
    "sharing_line",
    "status_lines",
    "unshared_accounts",
]
