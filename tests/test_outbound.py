"""The guarded outbound client: refused addresses, pinned connections, redirects, caps, and html_to_text."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ipaddress
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote

import httpx2
import pytest

from app.guards.html_text import html_to_text
from app.guards.outbound import (
    OutboundPolicy,
    OutboundRefused,
    fetch,
    fetch_sync,
    guarded_async_client,
    guarded_client,
    policy_from_config,
)
from tests.local_http import QuietHandler, serving

STRICT = OutboundPolicy(timeout=2)
LOCAL = OutboundPolicy(allowed_hosts=frozenset({"127.0.0.1"}), timeout=2, max_bytes=10_000)
RELEASE = threading.Event()  # set at teardown, so slow handlers stop waiting and the server closes quickly


class Handler(QuietHandler):
    """A tiny site: each path shows one behaviour the guard must handle."""

    def do_GET(self) -> None:
        path, _, query = self.path.partition("?")
        if path == "/hello":
            self.reply(b"hello from the test server")
        elif path == "/echo":
            host, auth = self.headers["Host"], self.headers["Authorization"]
            self.reply(f"{self.command} host={host} auth={auth}".encode())
        elif path == "/redirect":
            self.redirect(302, unquote(query))
        elif path == "/loop":
            self.redirect(302, "/loop")
        elif path == "/big":
            self.reply(b"x" * 100_000)
        elif path == "/latin1":
            self.reply("café".encode("latin-1"), "text/plain; charset=iso-8859-1")
        elif path == "/slow":
            RELEASE.wait(1.5)
            self.quietly(lambda: self.reply(b"too late"))
        elif path == "/trickle":  # every read is quick, so only the total budget can stop it
            self.send_response(200)
            self.end_headers()
            self.quietly(self.trickle)
        else:
            self.send_error(404)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path == "/see-other":
            self.redirect(303, "/echo")
        elif self.path == "/temporary":
            self.redirect(307, "/echo-post")
        elif self.path == "/echo-post":
            self.reply(b"POST " + body)

    def redirect(self, status: int, location: str) -> None:
        self.send_response(status)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def trickle(self) -> None:
        while not RELEASE.wait(0.05):
            self.wfile.write(b"x")
            self.wfile.flush()

    def quietly(self, action) -> None:
        try:
            action()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up, which is what these tests want


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    RELEASE.clear()
    with serving(Handler) as httpd:
        yield f"http://127.0.0.1:{httpd.server_port}"
        RELEASE.set()


@pytest.mark.parametrize(
    ("url", "address", "reason"),
    [
        ("http://127.0.0.1/", "127.0.0.1", "loopback address"),
        ("http://10.0.0.1/", "10.0.0.1", "private address"),
        ("http://172.16.5.4:8080/", "172.16.5.4", "private address"),
        ("http://192.168.1.1/", "192.168.1.1", "private address"),
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254", "cloud metadata address"),
        ("http://169.254.1.1/", "169.254.1.1", "link-local address"),
        ("http://100.64.0.1/", "100.64.0.1", "carrier-grade NAT address"),
        ("http://0.0.0.0/", "0.0.0.0", "unspecified address"),
        ("http://224.0.0.1/", "224.0.0.1", "multicast address"),
        ("http://240.0.0.1/", "240.0.0.1", "reserved address"),
        ("http://[::1]/", "::1", "loopback address"),
        ("http://[::]/", "::", "unspecified address"),
        ("http://[fe80::1]/", "fe80::1", "link-local address"),
        ("http://[fc00::1]/", "fc00::1", "private address"),
        ("http://[ff02::1]/", "ff02::1", "multicast address"),
        ("http://[fd00:ec2::254]/", "fd00:ec2::254", "cloud metadata address"),
        ("http://[::ffff:127.0.0.1]/", "::ffff:", "IPv4-mapped loopback address (127.0.0.1)"),
        ("http://[::ffff:a9fe:a9fe]/", "::ffff:", "IPv4-mapped cloud metadata address (169.254.169.254)"),
        ("http://[::ffff:10.0.0.1]/", "::ffff:", "IPv4-mapped private address (10.0.0.1)"),
        ("http://[2002:7f00:1::]/", "2002:7f00:1::", "carrying 127.0.0.1, a loopback address"),  # 6to4
        ("http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", "2001:0:4136", "carrying 127.0.0.1"),  # Teredo
        ("http://[64:ff9b::a9fe:a9fe]/", "64:ff9b::", "carrying 169.254.169.254, a cloud metadata"),  # NAT64
        # Numeric spellings the resolver normalises to 127.0.0.1.
        ("http://0x7f000001/", "0x7f000001 resolves to 127.0.0.1", "loopback address"),
        ("http://2130706433/", "2130706433 resolves to 127.0.0.1", "loopback address"),
        ("http://017700000001/", "017700000001 resolves to 127.0.0.1", "loopback address"),
        ("http://127.1/", "127.1 resolves to 127.0.0.1", "loopback address"),
        # A name resolving to a private address.
        ("http://localhost/", "localhost resolves to 127.0.0.1", "loopback address"),
        ("https://LocalHost:8443/x", "localhost resolves to 127.0.0.1", "loopback address"),
    ],
)
def test_refuses_non_public_addresses(url: str, address: str, reason: str) -> None:
    with pytest.raises(OutboundRefused) as refused:
        fetch_sync("GET", url, policy=STRICT)
    message = str(refused.value)
    assert address in message
    assert reason in message
    assert "OUTBOUND_ALLOWED_HOSTS" in message  # the message says the fix


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "ftp://example.com/",
        "gopher://127.0.0.1:70/",
        "javascript:alert(1)",
        "http:///x",
        "http://0177.0.0.1/",  # httpx will not parse this octal-dotted spelling of 127.0.0.1
    ],
)
def test_refuses_other_schemes_and_hostless_urls(url: str) -> None:
    with pytest.raises(OutboundRefused, match="refused"):
        fetch_sync("GET", url, policy=STRICT)


def test_local_server_is_refused_without_an_allow_list_entry(server: str) -> None:
    with pytest.raises(OutboundRefused, match=r"127\.0\.0\.1 is off limits to tools \(loopback address\)"):
        fetch_sync("GET", f"{server}/hello", policy=STRICT)


def test_allow_listed_address_is_reachable(server: str) -> None:
    response = fetch_sync("GET", f"{server}/hello", policy=LOCAL)
    assert response.status == 200
    assert response.text() == "hello from the test server"
    assert response.url == f"{server}/hello"
    assert response.headers["content-type"] == "text/plain; charset=utf-8"
    assert not response.truncated


def test_allow_listed_network_is_reachable(server: str) -> None:
    policy = OutboundPolicy(allowed_hosts=frozenset({"127.0.0.0/8"}), timeout=2)
    assert fetch_sync("GET", f"{server}/hello", policy=policy).status == 200


def test_allow_listed_name_connects_to_the_checked_ip_and_keeps_the_host_header(server: str) -> None:
    port = server.rsplit(":", 1)[1]
    policy = OutboundPolicy(allowed_hosts=frozenset({"localhost"}), timeout=2)
    response = fetch_sync("GET", f"http://localhost:{port}/echo", policy=policy)
    assert response.text() == f"GET host=localhost:{port} auth=None"
    assert response.url == f"http://localhost:{port}/echo"


def test_fetch_runs_concurrently_on_one_loop(server: str) -> None:
    async def both() -> list[int]:
        responses = await asyncio.gather(*(fetch("GET", f"{server}/hello", policy=LOCAL) for _ in range(2)))
        return [r.status for r in responses]

    assert asyncio.run(both()) == [200, 200]


def test_follows_a_redirect_on_the_allowed_host(server: str) -> None:
    response = fetch_sync("GET", f"{server}/redirect?/hello", policy=LOCAL)
    assert (response.status, response.url) == (200, f"{server}/hello")


@pytest.mark.parametrize(
    "target",
    ["http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/", "http://[::1]:1/", "file:///etc/passwd"],
)
def test_redirect_from_allowed_host_to_refused_address_is_refused(server: str, target: str) -> None:
    with pytest.raises(OutboundRefused, match="refused"):
        fetch_sync("GET", f"{server}/redirect?{target}", policy=LOCAL)


def test_redirect_loop_stops_at_max_redirects(server: str) -> None:
    policy = OutboundPolicy(allowed_hosts=frozenset({"127.0.0.1"}), timeout=2, max_redirects=2)
    with pytest.raises(httpx2.TooManyRedirects, match="more than 2"):
        fetch_sync("GET", f"{server}/loop", policy=policy)


def test_redirect_semantics_for_post(server: str) -> None:
    see_other = fetch_sync("POST", f"{server}/see-other", policy=LOCAL, content=b"data")
    assert see_other.text().startswith("GET ")
    temporary = fetch_sync("POST", f"{server}/temporary", policy=LOCAL, json={"a": 1})
    assert temporary.text() == 'POST {"a":1}'


def test_credentials_do_not_follow_a_redirect_to_another_origin(server: str) -> None:
    port = server.rsplit(":", 1)[1]
    policy = OutboundPolicy(allowed_hosts=frozenset({"127.0.0.1", "localhost"}), timeout=2)
    auth = {"Authorization": "Bearer secret"}
    same = fetch_sync("GET", f"{server}/redirect?/echo", policy=policy, headers=auth)
    assert same.text().endswith("auth=Bearer secret")
    other = fetch_sync("GET", f"{server}/redirect?http://localhost:{port}/echo", policy=policy, headers=auth)
    assert other.text() == f"GET host=localhost:{port} auth=None"


def test_body_is_capped_and_marked_truncated(server: str) -> None:
    policy = OutboundPolicy(allowed_hosts=frozenset({"127.0.0.1"}), timeout=2, max_bytes=1000)
    response = fetch_sync("GET", f"{server}/big", policy=policy)
    assert (len(response.body), response.truncated) == (1000, True)
    exact = OutboundPolicy(allowed_hosts=frozenset({"127.0.0.1"}), timeout=2, max_bytes=26)
    assert not fetch_sync("GET", f"{server}/hello", policy=exact).truncated


def test_text_uses_the_declared_charset(server: str) -> None:
    assert fetch_sync("GET", f"{server}/latin1", policy=LOCAL).text() == "café"


@pytest.mark.parametrize(
    ("path", "message"),
    [("/slow", None), ("/trickle", "took longer than 0.3 s")],  # a trickle passes every per-read timeout
)
def test_time_is_capped(server: str, path: str, message: str | None) -> None:
    policy = OutboundPolicy(allowed_hosts=frozenset({"127.0.0.1"}), timeout=0.3)
    started = time.monotonic()
    with pytest.raises(httpx2.TimeoutException, match=message):
        fetch_sync("GET", f"{server}{path}", policy=policy)
    assert time.monotonic() - started < 1.0


def test_https_sends_the_name_as_sni_and_verifies_the_certificate(tmp_path: Path) -> None:
    """The connection goes to the checked IP, yet TLS still speaks and verifies the host name."""
    seen: list[str | None] = []
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*_self_signed_certificate(tmp_path))
    context.sni_callback = lambda _sock, name, _ctx: seen.append(name)
    listener = socket.create_server(("127.0.0.1", 0))

    def handshake() -> None:
        connection, _ = listener.accept()
        with connection, contextlib.suppress(OSError):  # the client rejects our self-signed certificate
            context.wrap_socket(connection, server_side=True).close()

    thread = threading.Thread(target=handshake, daemon=True)
    thread.start()
    policy = OutboundPolicy(allowed_hosts=frozenset({"localhost"}), timeout=2)
    with listener, pytest.raises(httpx2.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        fetch_sync("GET", f"https://localhost:{listener.getsockname()[1]}/", policy=policy)
    thread.join(2)
    assert seen == ["localhost"]


def _self_signed_certificate(directory: Path) -> tuple[Path, Path]:
    pytest.importorskip("cryptography")
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_path, key_path


def test_policy_from_config() -> None:
    policy = policy_from_config(
        {
            "OUTBOUND_ALLOWED_HOSTS": " Intranet.example. , 10.0.0.0/8,[::1] ,",
            "OUTBOUND_TIMEOUT_SECONDS": "5",
            "OUTBOUND_MAX_BYTES": 1000,
        }
    )
    assert (policy.timeout, policy.max_bytes, policy.max_redirects) == (5.0, 1000, 5)
    assert policy.allows("intranet.example", _ip("192.168.0.1"))
    assert policy.allows("other.example", _ip("10.9.8.7"))
    assert policy.allows("other.example", _ip("::1"))
    assert policy.allows("other.example", _ip("::ffff:10.0.0.1"))  # the mapped address is covered too
    assert not policy.allows("other.example", _ip("192.168.0.1"))
    assert policy_from_config({"OUTBOUND_ALLOWED_HOSTS": ["a.example"]}).allows("a.example", _ip("10.0.0.1"))
    assert policy_from_config({}) == OutboundPolicy()
    idna = policy_from_config({"OUTBOUND_ALLOWED_HOSTS": "Bücher.example"})
    assert idna.allows("xn--bcher-kva.example", _ip("10.0.0.1"))  # spelled as the URL parser spells it
    with pytest.raises(ValueError, match="not a valid CIDR"):
        policy_from_config({"OUTBOUND_ALLOWED_HOSTS": "10.0.0.0/33"})


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    return ipaddress.ip_address(text)


PAGE = """<!doctype html><html><head><title>Skilldesk &amp; friends</title>
<style>body { color: red }</style><script>alert("no")</script></head>
<body><nav><a href="/home">Home</a> <a href="/about">About</a></nav>
<h1>Main   title</h1>
<p>First paragraph with a <a href="https://example.com/docs">docs link</a>
and <a href="/relative">a relative one</a>.</p>
<p>Second <b>paragraph</b>.<br>Next line. <a href="#top">Back to top</a>
<a href="javascript:alert(1)">click</a></p>
<noscript>Enable JavaScript</noscript>
<h2>List</h2><ul><li>one</li><li>two</li></ul>
<pre>  keep
    indentation</pre>
</body></html>"""


def test_html_to_text_keeps_structure_and_link_urls() -> None:
    text = html_to_text(PAGE, 10_000, base_url="https://site.example/page")
    assert text == (
        "Skilldesk & friends\n\n"
        "# Main title\n\n"
        "First paragraph with a docs link (https://example.com/docs) "
        "and a relative one (https://site.example/relative).\n\n"
        "Second paragraph.\nNext line. Back to top click\n\n"
        "## List\n\n"
        "- one\n- two\n\n"
        "  keep\n    indentation"
    )


def test_html_to_text_drops_script_style_nav_and_noscript() -> None:
    text = html_to_text(PAGE, 10_000)
    for hidden in ("alert", "color: red", "Home", "About", "Enable JavaScript"):
        assert hidden not in text
    assert "a relative one (/relative)" in text  # without a base URL the link stays as written


def test_html_to_text_blocks_and_tables() -> None:
    html = (
        "<div><span>a</span> <span>b</span></div>\n  <div>c</div>"
        "<table><tr><th>x</th><th>y</th></tr>\n<tr><td>1</td><td>2</td></tr></table>"
    )
    assert html_to_text(html, 100) == "a b\nc\n\nx | y\n1 | 2"


def test_html_to_text_limit() -> None:
    text = html_to_text("<p>" + "word " * 100 + "</p>", 50)
    assert len(text) <= 50
    assert text.endswith("…")
    assert html_to_text("<p>short</p>", 50) == "short"
    assert html_to_text("<p>short</p>", 0) == ""


# --- Pinned clients for libraries (MCP, SDKs, embeddings) ---------------------------------------------


def test_guarded_clients_refuse_what_fetch_refuses(server: str) -> None:
    with guarded_client(STRICT) as client, pytest.raises(OutboundRefused, match=r"127\.0\.0\.1 is off limits"):
        client.get(f"{server}/hello")

    async def refused() -> None:
        async with guarded_async_client(STRICT) as client:
            await client.get(f"{server}/hello")

    with pytest.raises(OutboundRefused, match=r"loopback address"):
        asyncio.run(refused())


def test_guarded_clients_reach_an_allowed_name_at_the_checked_address_with_its_host_header(server: str) -> None:
    port = server.rsplit(":", 1)[1]
    policy = OutboundPolicy(allowed_hosts=frozenset({"localhost"}), timeout=2)
    with guarded_client(policy) as client:
        assert client.get(f"http://localhost:{port}/echo").text == f"GET host=localhost:{port} auth=None"

    async def echo() -> str:
        async with guarded_async_client(policy) as client:
            return (await client.get(f"http://localhost:{port}/echo")).text

    assert asyncio.run(echo()) == f"GET host=localhost:{port} auth=None"


@pytest.mark.parametrize("target", ["http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/",
                                    "http://[::1]:1/"])
def test_guarded_clients_check_every_redirect(server: str, target: str) -> None:
    with guarded_client(LOCAL, follow_redirects=True) as client:
        assert client.get(f"{server}/redirect?/hello").text == "hello from the test server"
        with pytest.raises(OutboundRefused, match="off limits"):
            client.get(f"{server}/redirect?{target}")


def test_guarded_clients_connect_to_the_address_they_checked_not_to_a_second_lookup(server: str,
                                                                                    monkeypatch) -> None:
    port = int(server.rsplit(":", 1)[1])
    real_getaddrinfo = socket.getaddrinfo
    answers: list[str] = []

    def rebinding_dns(host, *args, **kwargs):
        if (host.decode() if isinstance(host, bytes) else host) != "site.rebind.test":
            return real_getaddrinfo(host, *args, **kwargs)
        answers.append("127.0.0.1" if not answers else "10.0.0.1")
        return real_getaddrinfo(answers[-1], *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding_dns)
    with guarded_client(LOCAL, headers={"Connection": "close"}) as client:
        assert client.get(f"http://site.rebind.test:{port}/hello").status_code == 200
        # A new connection resolves again, and the new answer is checked before anything is sent.
        with pytest.raises(OutboundRefused, match="site.rebind.test resolves to 10.0.0.1"):
            client.get(f"http://site.rebind.test:{port}/hello")
    assert answers == ["127.0.0.1", "10.0.0.1"]


def test_guarded_clients_verify_tls_by_the_name_on_the_checked_address(tmp_path: Path) -> None:
    cert, key = _self_signed_certificate(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    seen: list[str | None] = []
    context.sni_callback = lambda _sock, name, _ctx: seen.append(name)
    listener = socket.create_server(("127.0.0.1", 0))

    def serve_once() -> None:
        connection, _ = listener.accept()
        with context.wrap_socket(connection, server_side=True) as tls:
            tls.recv(65536)
            tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")

    thread = threading.Thread(target=serve_once, daemon=True)
    thread.start()
    policy = OutboundPolicy(allowed_hosts=frozenset({"localhost"}), timeout=2)
    trusted = ssl.create_default_context(cafile=str(cert))  # this test's certificate, for the name localhost
    with listener, guarded_client(policy, verify=trusted, timeout=2) as client:
        assert client.get(f"https://localhost:{listener.getsockname()[1]}/").text == "ok"
    thread.join(2)
    assert seen == ["localhost"]
