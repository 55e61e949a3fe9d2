"""The outbound guard against a real HTTP server on loopback: refused by default, opened by an allow entry."""

from __future__ import annotations

import ipaddress
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from hermitcrab.util.outbound import Outbound, OutboundRefused, guarded_client, kind_of


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path.startswith("/redirect"):
            self.send_response(302)
            self.send_header("Location", self.path.split("to=", 1)[1])
            self.end_headers()
            return
        body = f"host={self.headers['Host']}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def port() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def _closed_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def _get(outbound: Outbound, url: str) -> httpx.Response:
    async with guarded_client(outbound, timeout=5, follow_redirects=True) as client:
        return await client.get(url)


async def test_loopback_is_refused_by_default_and_the_error_says_how_to_allow_it(port: int):
    with pytest.raises(OutboundRefused) as refused:
        await _get(Outbound(how_to_allow="add it to [outbound] allow in config.toml"), f"http://127.0.0.1:{port}/")
    assert "loopback" in str(refused.value) and "[outbound] allow" in str(refused.value)
    assert f'"127.0.0.1:{port}"' in str(refused.value)


async def test_a_refusal_reads_the_same_for_an_open_and_a_closed_port(port: int):
    closed = _closed_port()
    said: list[str] = []
    for each in (port, closed):
        with pytest.raises(OutboundRefused) as refused:
            await _get(Outbound(), f"http://127.0.0.1:{each}/x")
        said.append(str(refused.value).replace(str(each), "PORT"))
    assert said[0] == said[1]


async def test_an_allow_entry_opens_exactly_that_host_and_port(port: int):
    response = await _get(Outbound([f"127.0.0.1:{port}"]), f"http://127.0.0.1:{port}/")
    assert response.status_code == 200
    with pytest.raises(OutboundRefused):
        await _get(Outbound([f"127.0.0.1:{port + 1 if port < 65535 else port - 1}"]), f"http://127.0.0.1:{port}/")


async def test_a_name_is_judged_by_the_address_it_resolves_to_and_keeps_its_host_header(port: int):
    with pytest.raises(OutboundRefused) as refused:
        await _get(Outbound(), f"http://localhost:{port}/")
    assert "resolves to" in str(refused.value) and "loopback" in str(refused.value)
    response = await _get(Outbound([f"localhost:{port}"]), f"http://localhost:{port}/")
    assert response.text == f"host=localhost:{port}"


async def test_every_redirect_hop_is_checked(port: int):
    allowed = Outbound([f"127.0.0.1:{port}"])
    with pytest.raises(OutboundRefused) as refused:
        await _get(allowed, f"http://127.0.0.1:{port}/redirect?to=http://169.254.169.254/latest/meta-data/")
    assert "169.254.169.254" in str(refused.value) and "link-local" in str(refused.value)
    hop = await _get(allowed, f"http://127.0.0.1:{port}/redirect?to=http://127.0.0.1:{port}/landed")
    assert hop.status_code == 200


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://example.com/", "gopher://127.0.0.1:25/", "http:///x"])
async def test_only_http_urls_with_a_host_are_fetched(url: str):
    with pytest.raises(OutboundRefused):
        await Outbound(["127.0.0.1"]).resolve(url)


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("127.0.0.1", "loopback"),
        ("::1", "loopback"),
        ("::ffff:127.0.0.1", "loopback"),
        ("64:ff9b::a9fe:a9fe", "link-local (cloud metadata lives here)"),
        ("169.254.169.254", "link-local (cloud metadata lives here)"),
        ("100.100.100.200", "carrier-grade NAT"),
        ("10.0.0.1", "private"),
        ("172.16.0.1", "private"),
        ("192.168.1.1", "private"),
        ("fd00:ec2::254", "private"),
        ("0.0.0.0", "unspecified"),
        ("224.0.0.251", "multicast"),
        ("8.8.8.8", None),
        ("2606:4700:4700::1111", None),
    ],
)
def test_what_counts_as_not_public(address: str, kind: str | None):
    assert kind_of(ipaddress.ip_address(address)) == kind


@pytest.mark.parametrize(
    ("entry", "host", "port", "address", "allowed"),
    [
        ("*.internal.example", "api.internal.example", 443, "10.0.0.5", True),
        ("*.internal.example", "internal.example.evil.com", 443, "10.0.0.5", False),
        ("10.0.0.0/8", "anything.example", 80, "10.9.9.9", True),
        ("[::1]:8080", "::1", 8080, "::1", True),
        ("[::1]:8080", "::1", 8081, "::1", False),
    ],
)
def test_allow_entries(entry: str, host: str, port: int, address: str, allowed: bool):
    assert (Outbound([entry]).refusal(host, port, ipaddress.ip_address(address)) is None) is allowed


@pytest.mark.parametrize("entry", ["", "host:99999", "10.0.0.0/8:80/x"])
def test_a_bad_allow_entry_is_a_clear_error(entry: str):
    with pytest.raises(ValueError, match="allow entry"):
        Outbound([entry])


@pytest.mark.parametrize(
    ("url", "refused"),
    [
        ("http://127.0.0.1:8080/hook", True),
        ("http://localhost/hook", True),
        ("http://app.localhost:4000/", True),
        ("http://169.254.169.254/latest/", True),
        ("file:///etc/passwd", True),
        ("https://hooks.example.com/x", False),
        ("http://127.0.0.1:3000/ok", False),
    ],
)
def test_what_is_refused_before_any_lookup(url: str, refused: bool):
    outbound = Outbound(["127.0.0.1:3000"])
    if refused:
        with pytest.raises(OutboundRefused):
            outbound.precheck(url)
    else:
        outbound.precheck(url)
