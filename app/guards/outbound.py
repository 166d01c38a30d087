"""The one guarded outbound HTTP client: every tool that reaches the network goes through fetch().

Policy refusals raise OutboundRefused; network failures (DNS, connect, timeout, too many redirects)
raise httpx.HTTPError subclasses. Nothing is turned into friendly text here: the tool decides.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
import ssl
from collections.abc import Mapping
from contextlib import aclosing
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx

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
        return httpx.URL(f"http://{entry}/").raw_host.decode("ascii").rstrip(".")
    except httpx.InvalidURL as exc:
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
    headers: httpx.Headers
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
            return await _follow(url, method.upper(), httpx.Headers(headers), content, json, policy)
    except TimeoutError as exc:
        raise httpx.TimeoutException(f"fetching {url} took longer than {policy.timeout:g} s") from exc


def fetch_sync(method: str, url: str, *, policy: OutboundPolicy, headers: Mapping[str, str] | None = None,
               content: bytes | str | None = None, json: Any = None) -> OutboundResponse:
    """Run fetch() on a fresh event loop: for sync tools in worker threads, never inside a running loop."""
    return asyncio.run(fetch(method, url, policy=policy, headers=headers, content=content, json=json))


async def _follow(start: str, method: str, headers: httpx.Headers, content: Any, json: Any,
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
    raise httpx.TooManyRedirects(f"{start} redirected more than {policy.max_redirects} times")


def _without(headers: httpx.Headers, *names: str) -> httpx.Headers:
    kept = headers.copy()
    for name in names:
        kept.pop(name, None)
    return kept


def _parse(url: str) -> httpx.URL:
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise OutboundRefused(f"refused {url!r}: not a valid URL ({exc})") from exc
    if parsed.scheme not in ("http", "https"):
        raise OutboundRefused(f"refused {url!r}: only http and https URLs may be fetched")
    if not parsed.raw_host:
        raise OutboundRefused(f"refused {url!r}: the URL has no host")
    return parsed


async def _checked_addresses(url: httpx.URL, policy: OutboundPolicy) -> list[IPAddress]:
    """Resolve the host ourselves and refuse if ANY address is off limits, so no record sneaks through."""
    host = url.raw_host.decode("ascii")
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        # getaddrinfo also normalises numeric forms (0x7f000001, 2130706433, 017700000001, 127.1).
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise httpx.ConnectError(f"cannot resolve {host}: {exc}") from exc
    addresses = list(dict.fromkeys(ipaddress.ip_address(info[4][0]) for info in infos))
    for ip in addresses:
        reason = refusal_reason(ip)
        if reason and not policy.allows(host, ip):
            subject = host if _is_ip_literal(host) else f"{host} resolves to {ip}, which"
            raise OutboundRefused(
                f"refused {url}: {subject} is off limits to tools ({reason}); "
                "an admin can allow it in OUTBOUND_ALLOWED_HOSTS"
            )
    return addresses


async def _send(method: str, url: httpx.URL, headers: httpx.Headers, content: Any, json: Any,
                policy: OutboundPolicy) -> OutboundResponse:
    """Send one hop to the addresses we checked, never to a fresh lookup (which could be rebound)."""
    addresses = await _checked_addresses(url, policy)
    host = url.raw_host.decode("ascii")
    # The validated IP goes into the URL, so httpx connects there without resolving the name again.
    # The Host header keeps the name for virtual hosting; sni_hostname makes TLS send the name and
    # verify the certificate against it (httpcore passes it on as server_hostname).
    sni = {"sni_hostname": host} if url.scheme == "https" and not _is_ip_literal(host) else {}
    error: httpx.ConnectError | None = None
    for ip in addresses:  # every one passed the check; try them in resolver order
        # A fresh client per attempt: no pooled connection made for one name (and its certificate)
        # may carry a request for another name at the same IP. trust_env=False: no proxy re-resolves.
        async with httpx.AsyncClient(trust_env=False, timeout=policy.timeout) as client:
            request = client.build_request(method, url.copy_with(host=str(ip)), headers=headers,
                                           content=content, json=json, extensions=sni)
            request.headers["Host"] = url.netloc.decode("ascii")
            if "user-agent" not in headers:
                request.headers["User-Agent"] = USER_AGENT
            try:
                response = await client.send(request, stream=True)
            except httpx.ConnectError as exc:
                if _tls_failure(exc):
                    raise  # a certificate that fails verification is an answer, not an unreachable address
                error = exc
                continue
            try:
                redirect = response.status_code in REDIRECT_STATUSES and "location" in response.headers
                body, truncated = (b"", False) if redirect else await _read_capped(response, policy.max_bytes)
            finally:
                await response.aclose()
            return OutboundResponse(status=response.status_code, headers=response.headers, url=str(url),
                                    body=body, truncated=truncated, charset=response.charset_encoding)
    raise error or httpx.ConnectError(f"{host} resolved to no address")


def _tls_failure(exc: BaseException | None) -> bool:
    # httpx wraps the ssl error in its own ConnectError, so look down the chain.
    while exc is not None and not isinstance(exc, ssl.SSLError):
        exc = exc.__cause__ or exc.__context__
    return exc is not None


def _is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


async def _read_capped(response: httpx.Response, max_bytes: int) -> tuple[bytes, bool]:
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


_SKIP_TAGS = frozenset({"script", "style", "nav", "noscript", "template", "svg", "iframe"})
# Newlines a block owes around it: 2 is a paragraph break, 1 a line break.
_BLOCK_TAGS = dict.fromkeys(
    "p blockquote pre table ul ol dl figure section article header footer main aside form hr title".split(), 2
) | dict.fromkeys("div li tr dt dd br figcaption address fieldset".split(), 1)
_HEADINGS = {f"h{level}": "#" * level for level in range(1, 7)}


class _TextExtractor(HTMLParser):
    """Collect readable text: blocks become line breaks, headings get '#', links keep their URL."""

    def __init__(self, base_url: str) -> None:
        super().__init__(convert_charrefs=True)
        self.base_url = base_url
        self.parts: list[str] = []
        self.skipping = self.preformatted = 0
        self.breaks = 0  # newlines owed before the next text, so empty blocks add nothing
        self.links: list[tuple[str | None, int]] = []

    def _emit(self, text: str) -> None:
        if not self.preformatted and (self.breaks or not self.parts or self.parts[-1].endswith((" ", "\n"))):
            text = text.lstrip(" ")
        if not text:
            return  # whitespace between blocks must not spend the breaks the next block owes
        if self.breaks and self.parts:
            self.parts[-1] = self.parts[-1].rstrip(" ")
            self.parts.append("\n" * self.breaks)
        self.breaks = 0
        self.parts.append(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP_TAGS or self.skipping:
            self.skipping += tag in _SKIP_TAGS
            return
        if tag in _HEADINGS:
            self.breaks = 2
            self._emit(_HEADINGS[tag] + " ")
        elif tag == "li":
            self.breaks = max(self.breaks, 1)
            self._emit("- ")
        elif tag in ("td", "th") and self.parts and not self.breaks:
            self._emit(" | ")
        elif tag in _BLOCK_TAGS:
            self.breaks = max(self.breaks, _BLOCK_TAGS[tag])
        if tag == "pre":
            self.preformatted += 1
        elif tag == "a":
            self.links.append((self._link_target(dict(attrs).get("href")), len(self.parts)))

    def handle_endtag(self, tag: str) -> None:
        if self.skipping:
            self.skipping -= tag in _SKIP_TAGS
            return
        if tag == "pre":
            self.preformatted = max(self.preformatted - 1, 0)
        elif tag == "a" and self.links:
            href, start = self.links.pop()
            label = "".join(self.parts[start:]).strip()
            if href and label and label != href:
                self.parts.append(f" ({href})")
        if tag in _HEADINGS or tag in _BLOCK_TAGS:
            self.breaks = max(self.breaks, 2 if tag in _HEADINGS else _BLOCK_TAGS[tag])

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self._emit(data if self.preformatted else re.sub(r"\s+", " ", data))

    def _link_target(self, href: str | None) -> str | None:
        if not href or href.strip().startswith("#"):
            return None
        target = urljoin(self.base_url, href.strip()) if self.base_url else href.strip()
        # Script and data URLs are noise to a reader, and an injection vector to a model.
        return None if urlsplit(target).scheme in ("javascript", "data", "vbscript") else target


def html_to_text(html: str, limit: int, *, base_url: str = "") -> str:
    """Reduce HTML to readable text of at most limit characters, ending in '…' when cut."""
    parser = _TextExtractor(base_url)
    parser.feed(html)
    parser.close()
    text = re.sub(r"\n{3,}", "\n\n", re.sub(r"[ \t]+\n", "\n", "".join(parser.parts))).strip()
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…" if limit > 0 else ""
    return text
