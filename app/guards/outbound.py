"""The one guarded outbound HTTP client: every connection a tool or skill makes goes through it.

Tools fetch with fetch(); libraries that bring their own HTTP calls (the MCP client, every model provider's
SDK, the embeddings endpoint) get guarded_async_client() / guarded_client(), or guarded_legacy_async_client()
for an SDK that still needs a legacy httpx client (Groq's). Each is a client whose transport connects only to
an address it resolved and checked itself.
Policy refusals raise OutboundRefused; network failures (DNS, connect, timeout, too many redirects)
raise httpx2.HTTPError subclasses. Nothing is turned into friendly text here: the tool decides.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import socket
import ssl
from collections.abc import Mapping
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpcore
import httpcore2
import httpx
import httpx2

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
METADATA = frozenset(ipaddress.ip_address(a) for a in ("169.254.169.254", "fd00:ec2::254"))
CARRIER_GRADE_NAT = ipaddress.ip_network("100.64.0.0/10")
NAT64 = ipaddress.ip_network("64:ff9b::/96")
USER_AGENT = "Skilldesk (+outbound)"

# Checked in order, so the message names the most telling category; the last one catches the rest.
_CATEGORIES: tuple[tuple[str, Any], ...] = (
    ("loopback", lambda ip: ip.is_loopback),
    ("unspecified", lambda ip: ip.is_unspecified),
    ("link-local", lambda ip: ip.is_link_local),
    ("carrier-grade NAT", lambda ip: ip in CARRIER_GRADE_NAT),
    ("multicast", lambda ip: ip.is_multicast),
    ("reserved", lambda ip: ip.is_reserved),
    ("private", lambda ip: ip.is_private),
    ("non-global", lambda ip: not ip.is_global),
)


class OutboundRefused(Exception):
    """The guard will not reach this URL: its scheme, host or a resolved address is off limits."""

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.detail = detail or message
        """Why, without what was refused: fetch() names the URL, the clients the connection."""


@dataclass(frozen=True)
class OutboundPolicy:
    """What tools may reach, and how much time and data one fetch may take."""

    allowed_hosts: frozenset[str] = frozenset()
    """Host names, IPs or CIDR networks an admin allows even where they resolve to refused addresses."""
    timeout: float = 15.0
    """Seconds for the whole fetch: resolution, every redirect hop and the body."""
    max_bytes: int = 2_000_000
    """Body bytes kept; the rest is not read and the response is marked truncated."""
    max_redirects: int = 5
    """Redirect hops followed, each one checked again, before giving up."""
    _names: frozenset[str] = field(init=False, repr=False, compare=False)
    _networks: tuple[IPNetwork, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Parse once, so a bad entry fails when the config is read rather than on the first fetch.
        names: set[str] = set()
        networks: list[IPNetwork] = []
        for raw in self.allowed_hosts:
            entry = raw.strip().lower().strip("[]").rstrip(".")
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError as exc:
                if "/" in entry:
                    raise ValueError(f"OUTBOUND_ALLOWED_HOSTS: {raw!r} is not a valid CIDR network") from exc
                names.add(_host_name(entry, raw))
        object.__setattr__(self, "_names", frozenset(names))
        object.__setattr__(self, "_networks", tuple(networks))

    def allows(self, host: str, ip: IPAddress) -> bool:
        """Tell whether the allow-list names this host or covers this address."""
        if host.lower().rstrip(".") in self._names:
            return True
        mapped = ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) else None
        return any(ip in net or (mapped is not None and mapped in net) for net in self._networks)


def _host_name(entry: str, raw: str) -> str:
    # Spell the name as fetch() will see it (IDNA, via the same URL parser), so bücher.de matches.
    try:
        return httpx2.URL(f"http://{entry}/").raw_host.decode("ascii").rstrip(".")
    except httpx2.InvalidURL as exc:
        raise ValueError(f"OUTBOUND_ALLOWED_HOSTS: {raw!r} is not a host name, IP or network") from exc


def policy_from_config(config: Mapping[str, Any]) -> OutboundPolicy:
    """Build the policy from OUTBOUND_ALLOWED_HOSTS, OUTBOUND_TIMEOUT_SECONDS and OUTBOUND_MAX_BYTES."""
    raw = config.get("OUTBOUND_ALLOWED_HOSTS") or ""
    # from_prefixed_env parses JSON, so the value may arrive as a list as well as a comma-separated string.
    entries = [str(e) for e in raw] if isinstance(raw, list | tuple | set) else str(raw).split(",")
    return OutboundPolicy(
        allowed_hosts=frozenset(e.strip() for e in entries if e.strip()),
        timeout=float(config.get("OUTBOUND_TIMEOUT_SECONDS") or OutboundPolicy.timeout),
        max_bytes=int(config.get("OUTBOUND_MAX_BYTES") or OutboundPolicy.max_bytes),
    )


def refusal_reason(ip: IPAddress) -> str | None:
    """Say why tools may not reach this address (say, 'loopback address'), or None for a public one."""
    if ip in METADATA:
        return "cloud metadata address"
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:  # ::ffff:a.b.c.d reaches a.b.c.d on a dual-stack socket
            reason = refusal_reason(ip.ipv4_mapped)
            return reason and f"IPv4-mapped {reason} ({ip.ipv4_mapped})"
        # 6to4, Teredo and NAT64 carry an IPv4 address that a relay or gateway may deliver to.
        embedded = ip.sixtofour or (ip.teredo[1] if ip.teredo else None)
        if embedded is None and ip in NAT64:
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if embedded is not None and (reason := refusal_reason(embedded)):
            return f"IPv6 address carrying {embedded}, a {reason}"
    category = next((name for name, test in _CATEGORIES if test(ip)), None)
    return category and f"{category} address"


@dataclass(frozen=True)
class OutboundResponse:
    """A fetched response whose body has been read, at most max_bytes of it."""

    status: int
    headers: httpx2.Headers
    url: str
    """The final URL after redirects, with the host name the caller used (not the pinned IP)."""
    body: bytes
    truncated: bool
    charset: str | None = None

    def text(self) -> str:
        """Decode the body with the declared charset, else UTF-8; a cut character becomes U+FFFD."""
        try:
            return self.body.decode(self.charset or "utf-8", errors="replace")
        except LookupError:
            return self.body.decode("utf-8", errors="replace")


async def fetch(method: str, url: str, *, policy: OutboundPolicy, headers: Mapping[str, str] | None = None,
                content: bytes | str | None = None, json: Any = None) -> OutboundResponse:
    """Fetch a URL through the guard: every hop's addresses checked, time and size capped."""
    try:
        async with asyncio.timeout(policy.timeout):
            return await _follow(url, method.upper(), httpx2.Headers(headers), content, json, policy)
    except TimeoutError as exc:
        raise httpx2.TimeoutException(f"fetching {url} took longer than {policy.timeout:g} s") from exc


def fetch_sync(method: str, url: str, *, policy: OutboundPolicy, headers: Mapping[str, str] | None = None,
               content: bytes | str | None = None, json: Any = None) -> OutboundResponse:
    """Run fetch() on a fresh event loop: for sync tools in worker threads, never inside a running loop."""
    return asyncio.run(fetch(method, url, policy=policy, headers=headers, content=content, json=json))


async def _follow(start: str, method: str, headers: httpx2.Headers, content: Any, json: Any,
                  policy: OutboundPolicy) -> OutboundResponse:
    url = _parse(start)
    for _hop in range(policy.max_redirects + 1):
        response = await _send(method, url, headers, content, json, policy)
        location = response.headers.get("location")
        if response.status not in REDIRECT_STATUSES or not location:
            return response
        target = _parse(str(url.join(location)))
        # Browser semantics, as httpx has them: 303, and 301/302 after a POST, become a plain GET.
        if method != "HEAD" and (response.status == 303 or (response.status < 303 and method == "POST")):
            method, content, json = "GET", None, None
            headers = _without(headers, "content-type")
        if (target.scheme, target.raw_host, target.port) != (url.scheme, url.raw_host, url.port):
            headers = _without(headers, "authorization", "cookie")  # credentials stay with their origin
        url = target
    raise httpx2.TooManyRedirects(f"{start} redirected more than {policy.max_redirects} times")


def _without(headers: httpx2.Headers, *names: str) -> httpx2.Headers:
    kept = headers.copy()
    for name in names:
        kept.pop(name, None)
    return kept


def _parse(url: str) -> httpx2.URL:
    try:
        parsed = httpx2.URL(url)
    except httpx2.InvalidURL as exc:
        raise OutboundRefused(f"refused {url!r}: not a valid URL ({exc})") from exc
    if parsed.scheme not in ("http", "https"):
        raise OutboundRefused(f"refused {url!r}: only http and https URLs may be fetched")
    if not parsed.raw_host:
        raise OutboundRefused(f"refused {url!r}: the URL has no host")
    return parsed


def checked_addresses(host: str, port: int, policy: OutboundPolicy, target: str) -> list[IPAddress]:
    """Resolve a host once and refuse if ANY address is off limits, so no record sneaks through.

    Raises OutboundRefused, or socket.gaierror when the name does not resolve. Connect only to what
    this returns: a second lookup could answer differently (DNS rebinding).
    """
    # getaddrinfo also normalises numeric forms (0x7f000001, 2130706433, 017700000001, 127.1).
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    addresses = list(dict.fromkeys(ipaddress.ip_address(info[4][0]) for info in infos))
    for ip in addresses:
        reason = refusal_reason(ip)
        if reason and not policy.allows(host, ip):
            subject = host if _is_ip_literal(host) else f"{host} resolves to {ip}, which"
            detail = f"{subject} is off limits to tools ({reason}); an admin can allow it in OUTBOUND_ALLOWED_HOSTS"
            raise OutboundRefused(f"refused {target}: {detail}", detail)
    return addresses


async def _send(method: str, url: httpx2.URL, headers: httpx2.Headers, content: Any, json: Any,
                policy: OutboundPolicy) -> OutboundResponse:
    """Send one hop through the pinned client: it connects only to an address the guard checked."""
    # A client per hop, so its pool holds only this hop's connection; the TLS context is shared.
    async with guarded_async_client(policy, timeout=policy.timeout) as client:
        request = client.build_request(method, url, headers=headers, content=content, json=json)
        if "user-agent" not in headers:
            request.headers["User-Agent"] = USER_AGENT
        try:
            response = await client.send(request, stream=True)
        except OutboundRefused as refused:  # name the URL the tool asked for, not the connection
            raise OutboundRefused(f"refused {url}: {refused.detail}", refused.detail) from None
        try:
            redirect = response.status_code in REDIRECT_STATUSES and "location" in response.headers
            body, truncated = (b"", False) if redirect else await _read_capped(response, policy.max_bytes)
        finally:
            await response.aclose()
    return OutboundResponse(status=response.status_code, headers=response.headers, url=str(url),
                            body=body, truncated=truncated, charset=response.charset_encoding)


def _is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


async def _read_capped(response: httpx2.Response, max_bytes: int) -> tuple[bytes, bool]:
    # Count decoded bytes: the cap protects memory, and a small compressed body can expand a lot.
    chunks: list[bytes] = []
    size = 0
    async with aclosing(response.aiter_bytes()) as stream:
        async for chunk in stream:
            chunks.append(chunk)
            size += len(chunk)
            if size > max_bytes:
                break
    return b"".join(chunks)[:max_bytes], size > max_bytes


# --- Pinned clients for libraries that bring their own HTTP calls (MCP, SDKs, embeddings) ----------
# httpcore asks its network backend for a TCP connection to (host name, port); ours resolves the name
# once, checks every address, and connects to a checked IP. TLS still runs over that socket with the
# name (SNI and certificate check), pooled connections are keyed by the name, and every redirect or
# reconnect opens its connection through the same check. Nothing downstream resolves the name again.


POOL_LIMITS = httpx2.Limits(max_connections=100, max_keepalive_connections=20)  # httpx2's defaults


class _PinnedBackend(httpcore2.AsyncNetworkBackend):
    core: Any = httpcore2

    def __init__(self, policy: OutboundPolicy) -> None:
        self.policy, self._network = policy, self.core.AnyIOBackend()

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None, socket_options: Any = None,
                          ) -> httpcore2.AsyncNetworkStream:
        try:
            addresses = await anyio.to_thread.run_sync(checked_addresses, host, port, self.policy,
                                                       f"a connection to {host}:{port}")
        except (socket.gaierror, UnicodeError) as exc:
            raise self.core.ConnectError(f"cannot resolve {host}: {exc}") from exc
        error: Exception = self.core.ConnectError(f"{host} resolved to no address")
        for ip in addresses:  # every one passed the check; try them in resolver order
            try:
                return await self._network.connect_tcp(str(ip), port, timeout=timeout,
                                                       local_address=local_address, socket_options=socket_options)
            except (self.core.ConnectError, self.core.ConnectTimeout) as exc:
                error = exc
        raise error

    async def sleep(self, seconds: float) -> None:
        await self._network.sleep(seconds)


class _PinnedLegacyBackend(_PinnedBackend):
    core = httpcore  # the legacy httpx's transport reads httpcore's streams and maps httpcore's errors


class _PinnedSyncBackend(httpcore2.NetworkBackend):
    def __init__(self, policy: OutboundPolicy) -> None:
        self.policy, self._network = policy, httpcore2.SyncBackend()

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Any = None) -> httpcore2.NetworkStream:
        try:
            addresses = checked_addresses(host, port, self.policy, f"a connection to {host}:{port}")
        except (socket.gaierror, UnicodeError) as exc:
            raise httpcore2.ConnectError(f"cannot resolve {host}: {exc}") from exc
        error: Exception = httpcore2.ConnectError(f"{host} resolved to no address")
        for ip in addresses:
            try:
                return self._network.connect_tcp(str(ip), port, timeout=timeout, local_address=local_address,
                                                 socket_options=socket_options)
            except (httpcore2.ConnectError, httpcore2.ConnectTimeout) as exc:
                error = exc
        raise error


def _pool_options(verify: ssl.SSLContext | bool, limits: httpx2.Limits | None) -> dict[str, Any]:
    limits = limits or POOL_LIMITS
    # One TLS context per process: creating one is the costliest part of a new client.
    context = verify if isinstance(verify, ssl.SSLContext) else _default_tls() if verify \
        else httpx2.create_ssl_context(verify=False)
    return {"ssl_context": context, "max_connections": limits.max_connections,
            "max_keepalive_connections": limits.max_keepalive_connections,
            "keepalive_expiry": limits.keepalive_expiry}


@functools.cache
def _default_tls() -> ssl.SSLContext:
    return httpx2.create_ssl_context(trust_env=False)


class PinnedAsyncTransport(httpx2.AsyncHTTPTransport):
    """httpx2's transport, connecting only to addresses the policy allows, resolved once per connection."""

    def __init__(self, policy: OutboundPolicy, verify: ssl.SSLContext | bool = True,
                 limits: httpx2.Limits | None = None) -> None:
        # The parent's request mapping reads self._pool; only the pool's network backend differs.
        self._pool = httpcore2.AsyncConnectionPool(network_backend=_PinnedBackend(policy),
                                                   **_pool_options(verify, limits))


class PinnedLegacyAsyncTransport(httpx.AsyncHTTPTransport):
    """PinnedAsyncTransport for a legacy httpx client, for an SDK that requires one (Groq's)."""

    def __init__(self, policy: OutboundPolicy, verify: ssl.SSLContext | bool = True,
                 limits: httpx2.Limits | None = None) -> None:
        self._pool = httpcore.AsyncConnectionPool(network_backend=_PinnedLegacyBackend(policy),
                                                  **_pool_options(verify, limits))


class PinnedTransport(httpx2.HTTPTransport):
    """The blocking twin of PinnedAsyncTransport, for sync clients."""

    def __init__(self, policy: OutboundPolicy, verify: ssl.SSLContext | bool = True,
                 limits: httpx2.Limits | None = None) -> None:
        self._pool = httpcore2.ConnectionPool(network_backend=_PinnedSyncBackend(policy),
                                              **_pool_options(verify, limits))


def guarded_async_client(policy: OutboundPolicy, *, verify: ssl.SSLContext | bool = True,
                         **options: Any) -> httpx2.AsyncClient:
    """Return an httpx2.AsyncClient whose every connection goes through the guard (no proxy from the env)."""
    return httpx2.AsyncClient(transport=PinnedAsyncTransport(policy, verify), trust_env=False, **options)


def guarded_client(policy: OutboundPolicy, *, verify: ssl.SSLContext | bool = True,
                   **options: Any) -> httpx2.Client:
    """Return an httpx2.Client whose every connection goes through the guard (no proxy from the env)."""
    return httpx2.Client(transport=PinnedTransport(policy, verify), trust_env=False, **options)


def guarded_legacy_async_client(policy: OutboundPolicy, *, limits: httpx2.Limits | None = None,
                                **options: Any) -> httpx.AsyncClient:
    """Return a legacy httpx.AsyncClient whose every connection goes through the guard (no proxy from the env)."""
    return httpx.AsyncClient(transport=PinnedLegacyAsyncTransport(policy, limits=limits), trust_env=False, **options)
