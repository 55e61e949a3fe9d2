"""Decide which URLs the browser may load, from --allowed-origins and --blocked-origins.

Where it is applied: to the model's `browser_navigate` before anything loads, to each request Playwright routes
(`Session._route`), and, since neither sees a redirect's later hops, to every connection Chromium makes, in the
browser's own proxy (`proxy.py`): navigations, sub-resources, XHR/fetch, frames, service workers, WebSockets and each
redirect hop. The same proxy applies the outbound guard (`hermitcrab.util.outbound`: no loopback, private,
link-local/metadata or CGNAT address unless `--allow-outbound` lists it), on the address it resolved and connects to,
so Chromium never resolves a proxied name itself and a DNS answer that changes after the check is never used.

What it does not cover: a `CONNECT` tunnel (https, wss, ws) is judged by host and port only, so an origin allowed
under one scheme opens that host and port under the other, and the requests inside one tunnel are not seen one by
one (they all go to that host and port). WebRTC may use only proxied candidates (`launcher.LAUNCH_ARGS`), so its UDP
does not go round the proxy. And anything a page shows can still instruct the model: the policy keeps the browser
where the owner wants it, it does not make what it reads trustworthy.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

# Schemes the model may navigate to; file: and chrome: would let pages (or the model) read the machine.
NAVIGABLE_SCHEMES = frozenset({"http", "https", "about", "data"})
_DEFAULT_PORTS = {"http": 80, "https": 443}


def parse_origins(value: str | None) -> tuple[str, ...]:
    """Split a `;`- or `,`-separated flag value into patterns."""
    if not value:
        return ()
    return tuple(part.strip() for part in value.replace(",", ";").split(";") if part.strip())


def _matches(pattern: str, scheme: str, host: str, port: int | None) -> bool:
    """`https://a.com:8443` matches that exact origin; `a.com` any scheme/port; `*.a.com` subdomains too."""
    if "://" in pattern:
        want = urlsplit(pattern)
        want_port = want.port or _DEFAULT_PORTS.get(want.scheme)
        if want.scheme != scheme or want_port != port:
            return False
        pattern = want.hostname or ""
    pattern = pattern.lower()
    if pattern.startswith("*."):
        return host == pattern[2:] or host.endswith(pattern[1:])
    return host == pattern


@dataclass(frozen=True)
class OriginPolicy:
    allowed: tuple[str, ...] = ()
    blocked: tuple[str, ...] = ()

    @property
    def active(self) -> bool:
        return bool(self.allowed or self.blocked)

    def allows(self, url: str) -> bool:
        """Blocked patterns win; with an allow-list, only listed origins pass. Non-network URLs always pass."""
        parts = urlsplit(url)
        if parts.scheme not in _DEFAULT_PORTS:
            return True
        host = (parts.hostname or "").lower()
        try:
            port = parts.port or _DEFAULT_PORTS[parts.scheme]
        except ValueError:
            return False
        if _any(self.blocked, parts.scheme, host, port):
            return False
        return not self.allowed or _any(self.allowed, parts.scheme, host, port)

    def describe(self) -> str:
        rules: list[str] = []
        if self.allowed:
            rules.append("allowed: " + ", ".join(self.allowed))
        if self.blocked:
            rules.append("blocked: " + ", ".join(self.blocked))
        return "; ".join(rules)


def _any(patterns: Iterable[str], scheme: str, host: str, port: int) -> bool:
    return any(_matches(pattern, scheme, host, port) for pattern in patterns)
