"""The browser's own forward proxy on loopback: every connection Chromium makes passes the outbound guard here.

Chromium is started with this proxy as its only way out (`--proxy-server`, loopback included; Playwright adds
`<-loopback>` to the bypass list so 127.0.0.1 is proxied too). So each request it sends, whoever asked for it (the
model's navigation, a sub-resource, an XHR or fetch, a frame, a service worker, a WebSocket, and each hop of a
redirect, which Playwright's routing never sees), reaches the network only through `OutboundProxy.check`, which:

- applies the origin policy (`--allowed-origins` / `--blocked-origins`) to the host and port, and
- resolves the name itself with `Outbound.resolve` (every address must pass); the proxy (`util.forward_proxy`)
  connects to the address it checked, so a DNS answer that changes after the check (rebinding) is never used.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit

from hermitcrab.util.forward_proxy import ForwardProxy
from hermitcrab.util.outbound import Outbound, OutboundRefused

from .origins import OriginPolicy


class OutboundProxy(ForwardProxy):
    """The forward proxy on 127.0.0.1 that lets a connection through only when the policy and the guard allow it.

    `on_refusal` hears each refusal's message (the session shows them to the model after the call)."""

    def __init__(self, outbound: Outbound, policy: OriginPolicy, on_refusal: Callable[[str], None]) -> None:
        super().__init__(self._check, on_refusal)
        self.outbound = outbound
        self.policy = policy

    async def start(self) -> str:
        return await self.listen_tcp()

    async def _check(self, target: str, tunnel: bool) -> tuple[str, int, str]:
        """The host, port and checked address for the target, if the origin policy allows it under some scheme."""
        # A tunnel carries https, wss or ws: the origin policy judges its host and port under either scheme.
        urls = [f"https://{target}/", f"http://{target}/"] if tunnel else [target]
        allowed = next((url for url in urls if self.policy.allows(url)), None)
        if allowed is None:
            parts = urlsplit(urls[0])
            raise OutboundRefused(
                f"refused {parts.netloc}: outside the origins this browser may visit ({self.policy.describe()})"
            )
        if urlsplit(allowed).scheme not in ("http", "https"):
            raise OutboundRefused(f"refused {allowed[:80]!r}: only http and https are proxied")
        return await self.outbound.resolve(allowed)
