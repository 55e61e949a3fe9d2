"""The one outbound guard: a request made on the model's behalf reaches only public addresses, unless allowed.

A URL the model (or a web page, or a webhook caller) picks could name this machine or its network: a loopback admin
port, the cloud metadata service at 169.254.169.254, a router at 192.168.0.1. Every part that makes such a request
(cron webhooks, the webhook channel's callbacks, the browser's navigation) asks `Outbound` first, and the check is
made on the address the connection then goes to, so a name that resolves to a public address for the check and to a
private one for the connect (DNS rebinding) gains nothing: `GuardedTransport` connects to the address it checked.

A refusal happens before any connection is tried and reads the same whatever is listening, so the error cannot be
used to scan ports. The owner opens what they want with allow entries: `host`, `host:port`, `*.example.com`,
`10.0.0.0/8`, `127.0.0.1:3000`, `[::1]:8080`.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

import anyio
import httpx

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

OUTBOUND_VARIABLE = "HERMITCRAB_OUTBOUND_ALLOW"
"""Allow entries, `;`-separated, for a server started by a host (`[outbound] allow`) or by hand."""
SCHEMES = frozenset({"http", "https"})
DEFAULT_PORTS = {"http": 80, "https": 443}
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_SHARED = ipaddress.ip_network("100.64.0.0/10")


def allow_entries(text: str | None) -> tuple[str, ...]:
    """Allow entries written on one line (a flag, `$HERMITCRAB_OUTBOUND_ALLOW`), `;`- or `,`-separated."""
    return tuple(entry.strip() for entry in (text or "").replace(",", ";").split(";") if entry.strip())


class OutboundRefused(httpx.TransportError):
    """A request to a scheme or address the guard does not let through; the message says how to allow it."""


def kind_of(address: IPAddress) -> str | None:
    """What makes `address` non-public ("loopback", "private", ...), or None for a public unicast address.

    IPv6 forms that carry an IPv4 address (mapped `::ffff:a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`) are judged by it."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return kind_of(address.ipv4_mapped)
        if address in _NAT64:
            return kind_of(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    if address.is_loopback:
        return "loopback"
    if address.is_link_local:
        return "link-local (cloud metadata lives here)"
    if address.is_unspecified:
        return "unspecified"
    if address.is_multicast:
        return "multicast"
    if isinstance(address, ipaddress.IPv4Address) and address in _SHARED:
        return "carrier-grade NAT"
    if address.is_private:
        return "private"
    if not address.is_global:
        return "reserved"
    return None


@dataclass(frozen=True)
class _Rule:
    """One allow entry: a host name (`*.` for its subdomains) or a network, with a port or any port."""

    host: str | None
    network: Network | None
    port: int | None

    @classmethod
    def parse(cls, entry: str) -> _Rule:
        text = entry.strip().lower()
        if not text:
            raise ValueError("an empty outbound allow entry")
        try:
            return cls(None, ipaddress.ip_network(text.strip("[]"), strict=False), None)
        except ValueError:
            pass
        parts = urlsplit(f"//{text}")
        try:
            port = parts.port
        except ValueError:
            raise ValueError(f"outbound allow entry {entry!r}: the port is not a number from 0 to 65535") from None
        host = parts.hostname or ""
        if not host or "/" in text.split("]")[-1]:
            raise ValueError(f"outbound allow entry {entry!r}: expected host, host:port, *.domain or a network")
        try:
            return cls(None, ipaddress.ip_network(host, strict=False), port)
        except ValueError:
            return cls(host, None, port)

    def matches(self, host: str, port: int, address: IPAddress | None) -> bool:
        if self.port is not None and self.port != port:
            return False
        if self.network is not None:
            return address is not None and address in self.network
        assert self.host is not None
        if self.host.startswith("*."):
            return host.endswith(self.host[1:]) or host == self.host[2:]
        return host == self.host


class Outbound:
    """Which destinations a request on the model's behalf may reach: public ones, plus the allowed entries."""

    def __init__(self, allow: Iterable[str] = (), *, how_to_allow: str = "add it to [outbound] allow") -> None:
        self.allow = tuple(allow)
        self.how_to_allow = how_to_allow
        """Said after a refusal: the host names its config, a server its flag."""
        self._rules = tuple(_Rule.parse(entry) for entry in self.allow)

    def check_url(self, url: str) -> tuple[str, int]:
        """The host and port of an http(s) `url`; OutboundRefused for another scheme or a malformed one."""
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in SCHEMES:
            raise OutboundRefused(f"refused {url[:80]!r}: only http and https URLs are fetched, not {scheme or 'none'}")
        try:
            port = parts.port or DEFAULT_PORTS[scheme]
        except ValueError:
            raise OutboundRefused(f"refused {url[:80]!r}: the port is not a number from 0 to 65535") from None
        if not parts.hostname:
            raise OutboundRefused(f"refused {url[:80]!r}: it names no host")
        return parts.hostname.lower(), port

    def refusal(self, host: str, port: int, address: IPAddress) -> str | None:
        """Why connecting to `address` (for `host:port`) is refused, or None when it may go ahead."""
        kind = kind_of(address)
        if kind is None or any(rule.matches(host, port, address) for rule in self._rules):
            return None
        shown = f"[{host}]" if ":" in host else host
        subject = str(address) if host == str(address) else f"{host} resolves to {address}, which"
        return (
            f"refused {shown}:{port}: {subject} is a {kind} address, and requests made for the model go only to "
            f'public addresses. If this destination is meant, allow "{shown}:{port}": {self.how_to_allow}'
        )

    def precheck(self, url: str) -> None:
        """Refuse now what needs no lookup (another scheme, a refused address literal, a `localhost` name), so a
        job or hook is refused when it is made; a name is resolved and checked again at each request."""
        host, port = self.check_url(url)
        literal = _literal(host)
        if literal is None and (host == "localhost" or host.endswith(".localhost")):
            literal = ipaddress.ip_address("127.0.0.1")
        if literal is not None and (why := self.refusal(host, port, literal)) is not None:
            raise OutboundRefused(why)

    async def resolve(self, url: str) -> tuple[str, int, str]:
        """The host, port and checked address to connect to for `url`; OutboundRefused when it is not allowed.

        Every address the name resolves to must pass, so a name with one public and one private answer is refused
        rather than left to which answer a later lookup puts first."""
        host, port = self.check_url(url)
        literal = _literal(host)
        if literal is not None:
            addresses = [literal]
        else:
            try:
                found = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            except OSError as exc:
                raise OutboundRefused(f"could not resolve {host}: {exc.strerror or exc}") from None
            addresses = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in found]
        for address in addresses:
            if (why := self.refusal(host, port, address)) is not None:
                raise OutboundRefused(why)
        return host, port, str(addresses[0])


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


class GuardedTransport(httpx.AsyncBaseTransport):
    """An httpx transport that checks each request (so each redirect hop) and connects to the address it checked.

    The request goes to the checked IP with its original Host header, and TLS is verified against the original
    name (`sni_hostname`), so certificates and virtual hosts work as before."""

    def __init__(self, outbound: Outbound, inner: httpx.AsyncBaseTransport | None = None) -> None:
        self.outbound = outbound
        self._inner = inner or httpx.AsyncHTTPTransport(trust_env=False)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            host, _, address = await self.outbound.resolve(str(request.url))
        except OutboundRefused as exc:
            raise OutboundRefused(str(exc), request=request) from None
        extensions = dict(request.extensions)
        if request.url.scheme == "https":
            extensions.setdefault("sni_hostname", host)
        pinned = httpx.Request(
            request.method,
            request.url.copy_with(host=address),
            headers=request.headers,
            stream=request.stream,
            extensions=extensions,
        )
        return await self._inner.handle_async_request(pinned)

    async def aclose(self) -> None:
        await self._inner.aclose()


def guarded_client(outbound: Outbound, *, timeout: float, follow_redirects: bool = False) -> httpx.AsyncClient:
    """An httpx client whose every request passes `outbound`; proxies from the environment are not used (a proxy
    would make the connection, and the check, somewhere else)."""
    return httpx.AsyncClient(
        transport=GuardedTransport(outbound), timeout=timeout, follow_redirects=follow_redirects, trust_env=False
    )
