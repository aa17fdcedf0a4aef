"""Limits shared between daemons on one Redis server (issue 14; docs/sharing.md).

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
- issue 26: that round trip is skipped while the subscriber's mirror of those keys can be
  trusted (`sharing_mirror.Mirror`: a live subscription confirmed by PING/PONG within
  `LIVE_SECONDS`, and a rebuild since it was confirmed); the turn start then reads memory;
- every Redis operation has a short timeout; when Redis is down, slow or partitioned the run
  carries on with its own registry, says once that sharing is lost and once that it is back, and
  re-publishes what it learned meanwhile. Outages (A26) are never shared: only limits.

Usage readings (issue 25) travel the same way beside them: one hash per account and engine,
`<prefix>:usage:<account>:<engine>`, a field per window holding the last reading (utilization,
reset, whether it was read, who saw it and when, the provider's threshold), set by a second
script by the core's rule (`registry.merge_usage`: the newest reading wins per engine and
window) and published on `<prefix>:usage`; a reading whose window has reset is dropped (never
written, never delivered), and the hash expires with its last window.

Only providers named in `accounts` are shared, so two different logins are never mixed. The URL's
password never leaves this module: everything it says shows `redacted(url)`.
"""

from __future__ import annotations

import importlib
import json
import os
import queue
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

import attrs

from autodev_core.engine import PROVIDERS, Engine
from autodev_core.errors import ConfigError

from ..status.sharing import sharing_facts, sharing_line, status_lines
from .mirror import PING_SECONDS, Liveness, Mirror, Where

if TYPE_CHECKING:  # the scheduler is loaded only by a run that shares (cold start, issue 13)
    from autodev_core.scheduler import EngineLimit, EngineUsage, LimitObserved, UsageObserved

#: Seconds every Redis operation may take before the run carries on without it.
DEFAULT_TIMEOUT: Final = 0.25
#: Real seconds between attempts to reach Redis again once sharing is lost.
RETRY_SECONDS: Final = 2.0
DEFAULT_PREFIX: Final = "autodev"
SCHEMES: Final = ("redis", "rediss")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$")
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_MS: Final = timedelta(milliseconds=1)

#: The core's merge rule (`autodev_core.scheduler.registry.merge_limit`), server-side and atomic.
#: KEYS[1]: the record's key. ARGV: the observation as JSON ({reset, read, seen, who}, times in
#: epoch milliseconds), now (ms), the channel, the account, the engine. Returns 1 when the record
#: changed (and was published), else 0.
MERGE_SCRIPT: Final = """
local obs = cjson.decode(ARGV[1])
local now = tonumber(ARGV[2])
local raw = redis.call('GET', KEYS[1])
local rec = nil
if raw then rec = cjson.decode(raw) end
if rec and obs.seen >= rec.reset then rec = nil end
local new = nil
if rec == nil then
  new = obs
elseif obs.reset <= rec.seen then
  return 0
elseif obs.read ~= rec.read then
  if obs.read then new = obs else return 0 end
elseif obs.reset ~= rec.reset then
  if obs.reset > rec.reset then new = obs else return 0 end
elseif obs.who ~= rec.who then
  if obs.who < rec.who then new = obs else return 0 end
elseif obs.seen < rec.seen then
  new = obs
else
  return 0
end
local text = cjson.encode(new)
if new.reset > now then
  redis.call('SET', KEYS[1], text, 'PX', string.format('%d', new.reset - now))
else
  redis.call('DEL', KEYS[1])
end
redis.call('PUBLISH', ARGV[3], cjson.encode({account = ARGV[4], engine = ARGV[5],
  reset = new.reset, read = new.read, seen = new.seen, who = new.who}))
return 1
"""


#: Issue 25: the core's usage rule (`autodev_core.scheduler.registry.merge_usage`), server-side
#: and atomic. KEYS[1]: the account's engine's hash. ARGV: the reading as JSON ({util, reset,
#: read, seen, who, threshold}, times in epoch ms), now (ms), the channel, the account, the
#: engine, the window. The newest reading (by `seen`) wins; on a tie the higher utilization, the
#: later reset, a read reset, the smaller name, then the higher threshold. A reading whose
#: window has reset by `now` is dropped, and so is a recorded one (the hash expires with its
#: last window). The reading is stored and published as the writer sent it (cjson would round
#: a float). Returns 1 when the window's record changed (and was published), else 0.
USAGE_SCRIPT: Final = """
local obs = cjson.decode(ARGV[1])
local now = tonumber(ARGV[2])
local window = ARGV[6]
if obs.reset <= now then return 0 end
local function said(r)
  if type(r.threshold) == 'number' then return r.threshold end
  return -1
end
local function rank(r)
  local read = 0
  if r.read then read = 1 end
  return {r.seen, r.util, r.reset, read}
end
local raw = redis.call('HGET', KEYS[1], window)
if raw then
  local ok, rec = pcall(cjson.decode, raw)
  if ok and type(rec) == 'table' and type(rec.reset) == 'number' and rec.reset > now then
    local a, b = rank(rec), rank(obs)
    local newer = nil
    for i = 1, 4 do
      if a[i] ~= b[i] then newer = b[i] > a[i] break end
    end
    if newer == nil and obs.who ~= rec.who then newer = obs.who < rec.who end
    if newer == nil then newer = said(obs) > said(rec) end
    if not newer then return 0 end
  end
end
redis.call('HSET', KEYS[1], window, ARGV[1])
local latest = obs.reset
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local ok, r = pcall(cjson.decode, all[i + 1])
  if not ok or type(r) ~= 'table' or type(r.reset) ~= 'number' or r.reset <= now then
    redis.call('HDEL', KEYS[1], all[i])
  elseif r.reset > latest then
    latest = r.reset
  end
end
redis.call('PEXPIRE', KEYS[1], string.format('%d', latest - now))
redis.call('PUBLISH', ARGV[3], '{"account":' .. cjson.encode(ARGV[4]) .. ',"engine":'
  .. cjson.encode(ARGV[5]) .. ',"window":' .. cjson.encode(window) .. ',"record":'
  .. ARGV[1] .. '}')
return 1
"""


def millis(at: datetime) -> int:
    """Epoch milliseconds, floored (Redis keys and TTLs are in ms)."""
    return (at - _EPOCH) // _MS


def from_millis(value: float) -> datetime:
    return _EPOCH + timedelta(milliseconds=int(value))


def redacted(url: str) -> str:
    """The URL with its user and password shown as `***` (and any `password` in its query):
    what logs, lanes and status show."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = "***@" + netloc.rsplit("@", 1)[1]
    query = parts.query
    if "password" in query.lower():
        query = urlencode(
            [(k, "***" if "password" in k.lower() else v)
             for k, v in parse_qsl(query, keep_blank_values=True)],
            safe="/*",
        )
    if (netloc, query) == (parts.netloc, parts.query):
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


#: What a share URL's query may say (issue 26): redis-py hands every query key to its connection
#: as an argument, so an unknown one would fail at the first command, not at reading the
#: settings; these are the ones a run can use. The `ssl_` ones are for `rediss://` alone, and
#: the files they name must be readable (checked when a run starts sharing, `share_settings`).
URL_OPTIONS: Final = ("db", "client_name")
TLS_URL_OPTIONS: Final = (
    "ssl_ca_certs", "ssl_ca_path", "ssl_certfile", "ssl_keyfile", "ssl_cert_reqs",
    "ssl_check_hostname",
)
_TLS_FILES: Final = ("ssl_ca_certs", "ssl_certfile", "ssl_keyfile")
_CERT_REQS: Final = ("none", "optional", "required")
_BOOLS: Final = ("0", "1", "true", "false", "yes", "no", "on", "off", "")


def _url_query(parts: Any, text: str, source: str) -> dict[str, str]:
    """The URL's query options, checked (see URL_OPTIONS); a ConfigError names the option."""
    found: dict[str, str] = {}
    tls = parts.scheme == "rediss"
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key in TLS_URL_OPTIONS and not tls:
            raise ConfigError(
                f"share: {key} is for TLS: the URL must start rediss://, not "
                f"{redacted(text)!r}",
                source=source,
            )
        if key not in URL_OPTIONS + TLS_URL_OPTIONS:
            raise ConfigError(
                f"share: unknown URL option {key!r} (known: "
                f"{', '.join(URL_OPTIONS + (TLS_URL_OPTIONS if tls else ()))})",
                source=source,
            )
        bad = (
            (key == "db" and not value.isdigit())
            or (key == "ssl_cert_reqs" and value.lower() not in _CERT_REQS)
            or (key == "ssl_check_hostname" and value.lower() not in _BOOLS)
            or (key in (*_TLS_FILES, "ssl_ca_path") and not value)
        )
        if bad:
            raise ConfigError(f"share: bad value for {key} in the URL: {value!r}", source=source)
        found[key] = value
    return found


def check_url(url: str, *, source: str = "--share") -> str:
    """A `redis://` or `rediss://` URL, or a ConfigError naming where it was written."""
    text = url.strip()
    parts = urlsplit(text)
    if parts.scheme not in SCHEMES or not parts.hostname:
        raise ConfigError(
            f"share: expected a redis:// or rediss:// URL such as redis://localhost:6379/0, "
            f"not {redacted(text)!r}",
            source=source,
        )
    try:
        _ = parts.port
    except ValueError:
        raise ConfigError(f"share: bad port in {redacted(text)!r}", source=source) from None
    _url_query(parts, text, source)
    return text


def check_accounts(value: object, *, source: str) -> dict[str, str]:
    """`accounts: {claude: work-max, codex: team}`: provider → account name."""
    if not isinstance(value, Mapping):
        raise ConfigError(
            "accounts: expected a mapping of providers to account names, e.g. "
            "{claude: work-max, codex: team}",
            source=source,
        )
    accounts: dict[str, str] = {}
    for provider, name in value.items():
        if provider not in PROVIDERS:
            raise ConfigError(
                f"accounts: unknown provider {provider!r} (known: {', '.join(PROVIDERS)})",
                source=source,
            )
        if not isinstance(name, str) or not _NAME.match(name):
            raise ConfigError(
                f"accounts.{provider}: an account name is letters, digits, '_', '.', '@', '-' "
                f"(up to 64), not {name!r}",
                source=source,
            )
        accounts[str(provider)] = name
    return accounts


SHARE_KEYS: Final = ("url", "prefix", "name", "timeout", "ca")


def _frozen_accounts(value: Mapping[str, str]) -> Mapping[str, str]:
    from types import MappingProxyType

    return MappingProxyType(dict(value))


@attrs.frozen
class ShareOptions:
    """What the run settings say about sharing (`share:` and `accounts:` in autodev.yaml)."""

    url: str | None = None
    prefix: str = DEFAULT_PREFIX
    name: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    accounts: Mapping[str, str] = attrs.field(factory=dict, converter=_frozen_accounts)
    #: Issue 26: the CA file (PEM) that signed a `rediss://` server's certificate, as an
    #: absolute path (a relative one in autodev.yaml is read from the team directory).
    ca: str | None = None


def share_options(share: object, accounts: object, *, source: str) -> ShareOptions:
    """Read `share:` (a URL, or {url, prefix, name, timeout, ca}) and `accounts:`; a ConfigError
    names the file and the field, never the password. Whether the `ca` file can be read is
    checked when a run starts sharing (`share_settings`), not by every reader of the team."""
    named = check_accounts(accounts, source=source) if accounts is not None else {}
    if share is None:
        return ShareOptions(accounts=named)
    if isinstance(share, str):
        return ShareOptions(url=check_url(share, source=source), accounts=named)
    if not isinstance(share, Mapping):
        raise ConfigError(
            "share: a redis:// URL, or a mapping with url, prefix, name, timeout, ca",
            source=source,
        )
    for key in share:
        if key not in SHARE_KEYS:
            raise ConfigError(
                f"share: unknown key {key!r} (known keys: {', '.join(SHARE_KEYS)})", source=source
            )
    if not isinstance(share.get("url"), str):
        raise ConfigError("share.url: the redis:// or rediss:// URL is required", source=source)
    prefix = share.get("prefix", DEFAULT_PREFIX)
    if not isinstance(prefix, str) or not _NAME.match(prefix):
        raise ConfigError(
            f"share.prefix: letters, digits, '_', '.', '@', '-', not {prefix!r}", source=source
        )
    name = share.get("name")
    if name is not None and (not isinstance(name, str) or not name.strip()):
        raise ConfigError("share.name: who this run is, as other runs see it", source=source)
    timeout = share.get("timeout", DEFAULT_TIMEOUT)
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not 0 < timeout <= 10
    ):
        raise ConfigError(
            f"share.timeout: seconds, more than 0 and at most 10, not {timeout!r}", source=source
        )
    url = check_url(share["url"], source=source)
    return ShareOptions(
        url=url,
        prefix=prefix,
        name=name.strip() if isinstance(name, str) else None,
        timeout=float(timeout),
        accounts=named,
        ca=_ca_option(share.get("ca"), url, source=source),
    )


def _ca_option(value: object, url: str, *, source: str) -> str | None:
    """`share.ca`: a path to the CA's PEM file, for a rediss:// URL that does not name one."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(
            f"share.ca: the path of the CA's certificate file (PEM), not {value!r}",
            source=source,
        )
    parts = urlsplit(url)
    if parts.scheme != "rediss":
        raise ConfigError(
            "share.ca: a CA is for TLS: the URL must start rediss://", source=source
        )
    if "ssl_ca_certs" in dict(parse_qsl(parts.query)):
        raise ConfigError(
            "share.ca: the URL names a CA already (ssl_ca_certs); give it once", source=source
        )
    path = Path(value.strip()).expanduser()
    if not path.is_absolute():
        path = Path(source).parent / path
    return str(path.absolute())


@attrs.frozen
class ShareSettings:
    """Where and how limits are shared: the Redis URL, the key prefix, who this run is, the
    account behind each provider, and the timeout of every Redis operation."""

    url: str
    accounts: Mapping[str, str]
    name: str
    prefix: str = DEFAULT_PREFIX
    timeout: float = DEFAULT_TIMEOUT
    #: Issue 26: the CA file for a rediss:// server (`share.ca`), or None (the URL's
    #: `ssl_ca_certs`, else the system's CAs).
    ca: str | None = None

    @property
    def shown_url(self) -> str:
        return redacted(self.url)

    @property
    def channel(self) -> str:
        return f"{self.prefix}:limits"

    @property
    def usage_channel(self) -> str:
        """Issue 25: where changed usage readings are published (apart from limits, so a run
        of an older version never reads a reading as a limit)."""
        return f"{self.prefix}:usage"

    def key(self, engine: Engine) -> str | None:
        account = self.accounts.get(engine.provider)
        return None if account is None else f"{self.prefix}:limit:{account}:{engine}"

    def usage_key(self, engine: Engine) -> str | None:
        """Issue 25: the hash of `engine`'s usage readings on its account, a field per window."""
        account = self.accounts.get(engine.provider)
        return None if account is None else f"{self.prefix}:usage:{account}:{engine}"


def share_settings(
    options: ShareOptions, *, url: str | None, default_name: str, source: str
) -> ShareSettings | None:
    """The settings a run shares with (None: it does not share). `url` (from `--share`)
    overrides the settings file's. Sharing with no named account is a mistake said clearly."""
    chosen = check_url(url, source="--share") if url else options.url
    if chosen is None:
        return None
    parts = urlsplit(chosen)
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    if options.ca is not None:
        if parts.scheme != "rediss":
            raise ConfigError(
                f"share.ca: a CA is for TLS, but the URL is {redacted(chosen)!r}: start it "
                "rediss://", source=source,
            )
        if "ssl_ca_certs" in query:
            raise ConfigError(
                "share.ca: the URL names a CA already (ssl_ca_certs); give it once",
                source=source,
            )
        _check_pem(options.ca, "share.ca", source=source)
    for key in _TLS_FILES:
        if key in query:
            _check_pem(query[key], f"share: the URL's {key}", source="--share" if url else source)
    if not options.accounts:
        raise ConfigError(
            "share: name the account behind each provider to share, e.g. "
            "accounts: {claude: work-max, codex: team} — only named accounts are shared",
            source=source,
        )
    return ShareSettings(
        url=chosen,
        accounts=options.accounts,
        name=options.name or default_name,
        prefix=options.prefix,
        timeout=options.timeout,
        ca=options.ca,
    )


def _check_pem(path: str, field: str, *, source: str) -> None:
    """A file TLS reads must be there, readable, and PEM; else one line naming it and the field."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(1 << 16)
    except OSError as error:
        raise ConfigError(
            f"{field}: cannot read {path} ({error.strerror or type(error).__name__})",
            source=source,
        ) from None
    if b"-----BEGIN " not in head:
        raise ConfigError(f"{field}: {path} is not a PEM file (no -----BEGIN line)",
                          source=source)


def connection_options(settings: ShareSettings) -> dict[str, Any]:
    """Issue 26: what redis-py's `Redis.from_url` takes beside the URL for these settings (the
    URL's own query, e.g. `?ssl_ca_certs=`, redis-py reads itself)."""
    if settings.ca is not None and urlsplit(settings.url).scheme == "rediss":
        return {"ssl_ca_certs": settings.ca}
    return {}


def lost_reason(error: BaseException, url: str) -> str:
    """The short reason a `limit sharing lost (...)` line gives (issue 26): one line, TLS
    failures in words (redis-py wraps them in its own text), never the password (the caller
    scrubs it)."""
    import ssl

    chain: list[BaseException] = []
    seen: BaseException | None = error
    while seen is not None and seen not in chain and len(chain) < 8:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    tls = urlsplit(url).scheme == "rediss"
    for item in chain:
        if isinstance(item, ssl.SSLCertVerificationError):
            detail = str(getattr(item, "verify_message", "") or "").rstrip(".")
            return "TLS: certificate verify failed" + (f" ({detail})" if detail else "")
        if isinstance(item, ssl.SSLError):
            detail = str(getattr(item, "reason", "") or "").replace("_", " ").lower()
            return "TLS: " + (detail or "handshake failed")
    for item in chain:
        text = str(item).lower()
        if tls and "handshake" in text:
            return "TLS: no handshake within the timeout (is the port a TLS one?)"
        if tls and isinstance(item, FileNotFoundError | PermissionError):
            return f"TLS: cannot read a certificate file ({item.strerror})"
        if not tls and isinstance(item, ConnectionResetError | BrokenPipeError):
            return "the server closed the connection (a TLS port? its URL starts rediss://)"
    text = " ".join(str(error).split())
    return text or type(error).__name__


@attrs.frozen
class Shared:
    """One record as Redis holds it."""

    account: str
    engine: Engine
    reset: int
    read: bool
    seen: int
    who: str

    def observed(self, now: datetime) -> LimitObserved:
        from autodev_core.scheduler import LimitObserved

        return LimitObserved(
            now=now,
            engine=self.engine,
            until=from_millis(self.reset),
            read=self.read,
            seen=from_millis(self.seen),
            source=self.who,
        )


@attrs.frozen
class SharedUsage:
    """Issue 25: one usage reading as Redis holds it (a field of the engine's hash)."""

    account: str
    engine: Engine
    window: str
    utilization: float
    reset: int
    read: bool
    seen: int
    who: str
    threshold: float | None = None

    def payload(self) -> str:
        return json.dumps(
            {"util": self.utilization, "reset": self.reset, "read": self.read,
             "seen": self.seen, "who": self.who, "threshold": self.threshold},
            separators=(",", ":"),
        )

    def observed(self, now: datetime) -> UsageObserved:
        """The reading as the core takes it from another run: a reset the provider did not say
        stays unsaid (the receiver counts it as its own policy's A6 default after `seen`)."""
        from autodev_core.detection.classification import UsageReading
        from autodev_core.scheduler import UsageObserved

        return UsageObserved(
            now=now,
            engine=self.engine,
            reading=UsageReading(
                provider=self.engine.provider,
                utilization=self.utilization,
                window=self.window,
                resets_at=from_millis(self.reset) if self.read else None,
                threshold=self.threshold,
            ),
            seen=from_millis(self.seen),
            source=self.who,
        )


def _parse_usage(account: str, engine: Engine, window: str, raw: Any) -> SharedUsage | None:
    try:
        data = json.loads(raw) if isinstance(raw, (str, bytes, bytearray)) else raw
        util = data["util"]
        threshold = data.get("threshold")
        for value in (util, threshold):
            if value is not None and (isinstance(value, bool)
                                      or not isinstance(value, (int, float))
                                      or not 0 <= value <= 10):
                return None  # not a reading the core would take
        return SharedUsage(
            account=account,
            engine=engine,
            window=window,
            utilization=float(util),
            reset=int(data["reset"]),
            read=bool(data["read"]),
            seen=int(data["seen"]),
            who=str(data["who"]),
            threshold=None if threshold is None else float(threshold),
        )
    except (ValueError, KeyError, TypeError, AttributeError):
        return None  # a record this version cannot read is not this run's business


def _parse(account: str, engine: Engine, raw: Any) -> Shared | None:
    try:
        data = json.loads(raw)
        return Shared(
            account=account,
            engine=engine,
            reset=int(data["reset"]),
            read=bool(data["read"]),
            seen=int(data["seen"]),
            who=str(data["who"]),
        )
    except (ValueError, KeyError, TypeError):
        return None  # a record this version cannot read is not this run's business


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


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
        # Issue 25: the same for usage readings, per (hash key, window).
        self._heard: dict[tuple[str, str], SharedUsage] = {}
        self._mine_usage: dict[tuple[str, str], SharedUsage] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # Issue 26: the mirror (touched by the daemon's loop only) and what the subscriber
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
        """Issue 26: the live subscription's generation (None: the subscriber is not
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
        self._mirror.invalidate()  # issue 26: rebuilt by the next round trip that works
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
        payload = json.dumps(
            {"reset": shared.reset, "read": shared.read, "seen": shared.seen, "who": shared.who},
            separators=(",", ":"),
        )
        try:
            changed = self._script(
                keys=[key],
                args=[payload, millis(now), self.settings.channel, shared.account,
                      str(shared.engine)],
            )
        except self._errors() as error:
            self._lost(error)
            return False
        self.round_trips += 1
        if not self._up:
            self._back(now)
        return bool(changed)

    def publish_usage(self, records: Iterable[EngineUsage], now: datetime) -> None:
        """Issue 25: offer this run's own usage readings (source empty) to the shared registry;
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
        try:
            changed = self._usage_script(
                keys=[key],
                args=[shared.payload(), millis(now), self.settings.usage_channel,
                      shared.account, str(shared.engine), shared.window],
            )
        except self._errors() as error:
            self._lost(error)
            return False
        self.round_trips += 1
        if not self._up:
            self._back(now)
        return bool(changed)

    # --- what other runs learned ------------------------------------------------------------

    def has_news(self) -> bool:
        """A pub/sub message arrived, or it is time to try a lost Redis again (polled by the
        sleeper, so a sleeping daemon wakes at once)."""
        return self._news.is_set() or (not self._up and time.monotonic() >= self._next_try)

    def sync(
        self, engines: Iterable[Engine], now: datetime
    ) -> list[LimitObserved | UsageObserved]:
        """At a turn start: the team's engines' limits and (issue 25) usage readings, plus the
        messages received meanwhile; the records other runs wrote that this run has not been
        told of yet — limits first, then readings whose window has not reset at `now`.

        Issue 26: read from the mirror when it can be trusted (`Mirror.trusted`), else in one
        round trip (which also rebuilds the mirror)."""
        self._news.clear()
        with self._live_lock:  # before the inbox: older messages are all in it by now
            generation, confirmed = self._liveness.generation, self._liveness.confirmed
        quiet = self._quiet
        if (
            quiet is not None
            and quiet[0] is engines
            and quiet[1] == self._mirror.version
            and now >= quiet[2]
            and self._up
            and self._inbox.empty()
            and self._mirror.live(generation=generation, confirmed=confirmed,
                                  clock=time.monotonic())
        ):
            # Nothing heard since the last read from the mirror for these engines: it reads
            # what it read then, less what has reset since, all of it told already.
            self.mirror_reads += 1
            return []
        self._quiet = None
        found: list[Shared | SharedUsage] = []
        while True:
            try:
                item = self._inbox.get_nowait()
            except queue.Empty:
                break
            found.append(item)
            if isinstance(item, SharedUsage):
                self._mirror.apply_usage(item)
            else:
                self._mirror.apply_limit(item)
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
            else:
                self.round_trips += 1
                self._back(now)
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
                # Issue 26: a read that began while subscription `generation` was live is a
                # rebuild of the mirror (None: no live subscription, so it is not trusted).
                self._mirror.rebuild(generation, snapshot, windows)
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

        Issue 26: it also says how far it can be trusted. Once both channels are confirmed it
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
        """Issue 25: a reading published on the usage channel, for an account of this run."""
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


__all__ = [
    "DEFAULT_PREFIX",
    "DEFAULT_TIMEOUT",
    "MERGE_SCRIPT",
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
]
