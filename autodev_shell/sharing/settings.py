"""Where and how a run shares (docs/sharing.md): `share:` and `accounts:` read from
autodev.yaml or `--share`, checked into `ShareSettings` (a mistake is one `ConfigError` naming the
file and the field, never the password); the URL as every line shows it (`redacted`); redis-py's
connection options for TLS (`connection_options`); and a lost connection's reason in a few words
(`lost_reason`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

import attrs

from autodev_core.engine import PROVIDERS, Engine
from autodev_core.errors import ConfigError

#: Seconds every Redis operation may take before the run carries on without it.
DEFAULT_TIMEOUT: Final = 0.25
DEFAULT_PREFIX: Final = "autodev"
SCHEMES: Final = ("redis", "rediss")
#: A Redis Cluster (any node's address: redis-py finds the others) and a Sentinel (its
#: addresses, then the primary's service name and db: `redis+sentinel://h1:26379,h2:26379/
#: mymaster/0`), docs/sharing.md "Cluster and Sentinel".
CLUSTER_SCHEMES: Final = ("redis+cluster", "rediss+cluster")
SENTINEL_SCHEMES: Final = ("redis+sentinel", "rediss+sentinel")


def topology(url: str) -> str:
    """`single`, `cluster` or `sentinel`: what the URL's scheme names."""
    scheme = urlsplit(url).scheme
    if scheme in CLUSTER_SCHEMES:
        return "cluster"
    if scheme in SENTINEL_SCHEMES:
        return "sentinel"
    return "single"


def is_tls(url: str) -> bool:
    return urlsplit(url).scheme.startswith("rediss")


def sentinel_parts(url: str) -> tuple[list[tuple[str, int]], str, int]:
    """A Sentinel URL's addresses, the primary's service name and its db (a ValueError when
    they cannot be read)."""
    parts = urlsplit(url)
    hosts: list[tuple[str, int]] = []
    for address in parts.netloc.rsplit("@", 1)[-1].split(","):
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(address)
        hosts.append((host.strip("[]"), int(port)))
    path = [p for p in parts.path.split("/") if p]
    if not path or len(path) > 2 or (len(path) == 2 and not path[1].isdigit()):
        raise ValueError(parts.path)
    return hosts, unquote(path[0]), int(path[1]) if len(path) == 2 else 0
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$")
#: An engine's account label, as `autodev_core.engine` reads it (`claude@work`).
_ACCOUNT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")


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


#: What a share URL's query may say: redis-py hands every query key to its connection
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
    tls = parts.scheme.startswith("rediss")
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
    if parts.scheme in SENTINEL_SCHEMES:
        try:
            sentinel_parts(text)
        except ValueError:
            raise ConfigError(
                f"share: a Sentinel URL is redis+sentinel://HOST:PORT[,HOST:PORT…]/SERVICE[/DB], "
                f"not {redacted(text)!r}", source=source) from None
        _url_query(parts, text, source)
        return text
    if parts.scheme not in SCHEMES + CLUSTER_SCHEMES or not parts.hostname:
        raise ConfigError(
            f"share: expected a redis:// or rediss:// URL (or redis+cluster://, "
            f"redis+sentinel://) such as redis://localhost:6379/0, "
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
    """`accounts: {claude: work-max, claude@home: me-pro, codex: team}`: a provider (its engines
    that name no account) or an engine's account (`claude@home`) → the shared account's name.
    Two keys of one provider naming one shared account are refused: one account has one label
    in a team (docs/sharing.md, "Accounts")."""
    if not isinstance(value, Mapping):
        raise ConfigError(
            "accounts: expected a mapping of providers to account names, e.g. "
            "{claude: work-max, codex: team}",
            source=source,
        )
    accounts: dict[str, str] = {}
    for key, name in value.items():
        provider, at, label = str(key).partition("@")
        if provider not in PROVIDERS:
            raise ConfigError(
                f"accounts: unknown provider {provider!r} (known: {', '.join(PROVIDERS)})",
                source=source,
            )
        if at and not _ACCOUNT.match(label):
            raise ConfigError(
                f"accounts: {key!r} is a provider or an engine's account such as "
                f"{provider}@work (letters, digits, '_', '.', '-'), with no model",
                source=source,
            )
        if not isinstance(name, str) or not _NAME.match(name):
            raise ConfigError(
                f"accounts.{key}: an account name is letters, digits, '_', '.', '@', '-' "
                f"(up to 64), not {name!r}",
                source=source,
            )
        for other, shared in accounts.items():
            if shared == name and other.partition("@")[0] == provider:
                raise ConfigError(
                    f"accounts.{key}: {other} names {name!r} already; one account has one "
                    "label in a team",
                    source=source,
                )
        accounts[str(key)] = name
    return accounts


def account_key(engine: Engine) -> str:
    """The `accounts:` key an engine's limits are shared under: its provider, or its provider
    and account (`claude@work:opus` → `claude@work`)."""
    return engine.provider if engine.account is None else f"{engine.provider}@{engine.account}"


def shared_engine(engine: Engine) -> Engine:
    """The engine as records name it: without the local account label, which another run
    may write differently for the same account (`claude@work:opus` → `claude:opus`)."""
    return engine if engine.account is None else Engine(engine.provider, engine.model)


def unshared_accounts(
    settings: ShareSettings, named: Iterable[str], *, source: str
) -> tuple[str, ...]:
    """The team's engine accounts (`named`: `claude@home`, …) that `accounts:` does not name,
    which are not shared (said in the start line); a key of `accounts:` naming an engine account
    no participant names is one ConfigError (a typo would leave the account unshared)."""
    team = set(named)
    for key in settings.accounts:
        if "@" in key and key not in team:
            raise ConfigError(f"accounts.{key}: no participant names that account", source=source)
    return tuple(sorted(team - set(settings.accounts)))


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
    #: The CA file (PEM) that signed a `rediss://` server's certificate, as an
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
    if not is_tls(url):
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
    #: The CA file for a rediss:// server (`share.ca`), or None (the URL's
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
        """Where changed usage readings are published (apart from limits, so a run
        of an older version never reads a reading as a limit)."""
        return f"{self.prefix}:usage"

    @property
    def key_prefix(self) -> str:
        """What every key starts with: the prefix, as a hash tag `{prefix}` on a cluster so
        that a team's keys share one slot (one MGET, one pipeline)."""
        return f"{{{self.prefix}}}" if topology(self.url) == "cluster" else self.prefix

    def account(self, engine: Engine) -> str | None:
        """The shared account `engine`'s limits are kept under (None: not shared)."""
        return self.accounts.get(account_key(engine))

    def local(self, account: str, engine: Engine) -> Engine | None:
        """The engine of this run that a record of `account` on `engine` (named without a
        local account label) is about; None when no key of `accounts:` names that account for
        the engine's provider, or the record names a local label."""
        if engine.account is not None:
            return None
        for key, shared in self.accounts.items():
            provider, at, label = key.partition("@")
            if shared == account and provider == engine.provider:
                return Engine(provider, engine.model, account=label) if at else engine
        return None

    def key(self, engine: Engine) -> str | None:
        account = self.account(engine)
        return None if account is None else self.limit_key(account, shared_engine(engine))

    def limit_key(self, account: str, engine: Engine) -> str:
        """The key of a record of `account` on `engine` (as records name it)."""
        return f"{self.key_prefix}:limit:{account}:{engine}"

    def usage_key(self, engine: Engine) -> str | None:
        """The hash of `engine`'s usage readings on its account, a field per window."""
        account = self.account(engine)
        return None if account is None else self.readings_key(account, shared_engine(engine))

    def readings_key(self, account: str, engine: Engine) -> str:
        """The hash of the readings of `account` on `engine` (as records name it)."""
        return f"{self.key_prefix}:usage:{account}:{engine}"


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
        if not is_tls(chosen):
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
    """What redis-py's `Redis.from_url` takes beside the URL for these settings (the
    URL's own query, e.g. `?ssl_ca_certs=`, redis-py reads itself)."""
    if settings.ca is not None and is_tls(settings.url):
        return {"ssl_ca_certs": settings.ca}
    return {}


def lost_reason(error: BaseException, url: str) -> str:
    """The short reason a `limit sharing lost (...)` line gives (docs/sharing.md): one line, TLS
    failures in words (redis-py wraps them in its own text), never the password (the caller
    scrubs it)."""
    import ssl

    chain: list[BaseException] = []
    seen: BaseException | None = error
    while seen is not None and seen not in chain and len(chain) < 8:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    tls = is_tls(url)
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


def connect(redis: Any, settings: ShareSettings, *, socket_timeout: float | None,
            **options: Any) -> Any:
    """A redis-py client for the URL: `Redis`, a `RedisCluster`, or the current primary of a
    Sentinel's service (redis-py's own clients, which follow a failover or a resharding)."""
    kind = topology(settings.url)
    common: dict[str, Any] = {
        "socket_timeout": socket_timeout,
        "socket_connect_timeout": settings.timeout,
        **options,
    }
    name = common.pop("client_name", None)
    if name is not None:  # named where the ACL allows it, never refused where it does not
        common["redis_connect_func"] = _naming(redis, str(name), cluster=kind == "cluster")
    if kind == "single":
        return redis.Redis.from_url(settings.url, health_check_interval=0, **common)
    parts = urlsplit(settings.url)
    plain = "rediss" if is_tls(settings.url) else "redis"
    if kind == "cluster":
        import importlib

        cluster = importlib.import_module("redis.cluster")
        common.pop("retry_on_timeout", None)
        return cluster.RedisCluster.from_url(
            urlunsplit((plain, *parts[1:])), **common)
    import importlib

    sentinel = importlib.import_module("redis.sentinel")
    hosts, service, db = sentinel_parts(settings.url)
    query = dict(parse_qsl(parts.query))
    tls: dict[str, Any] = {}
    if plain == "rediss":
        tls = {"ssl": True, **{k: v for k, v in query.items() if k.startswith("ssl_")}}
    auth = parts.netloc.rsplit("@", 1)[0] if "@" in parts.netloc else ""
    user, _, password = auth.partition(":")
    timeouts = {"socket_timeout": settings.timeout, "socket_connect_timeout": settings.timeout}
    watcher = sentinel.Sentinel(hosts, sentinel_kwargs={**timeouts, **tls}, **timeouts)
    if "client_name" in query:
        common.pop("redis_connect_func", None)
        common["client_name"] = query["client_name"]
    return watcher.master_for(
        service, db=int(query.get("db", db)), username=unquote(user) or None,
        password=unquote(password) or None, **tls, **common)


def _naming(redis: Any, name: str, *, cluster: bool) -> Any:
    """redis-py's `redis_connect_func`: the usual handshake (a cluster has done it already),
    then `CLIENT SETNAME`, whose refusal (an ACL without `client|setname`) costs nothing."""

    def connected(connection: Any) -> None:
        if not cluster:
            connection.on_connect()
        try:
            connection.send_command("CLIENT", "SETNAME", name)
            connection.read_response()
        except redis.ResponseError:
            pass

    return connected
