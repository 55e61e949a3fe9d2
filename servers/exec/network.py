"""Network for sandboxed commands: a proxy outside the sandbox that lets through only the allowed domains.

A sandboxed command has a network namespace with nothing but loopback (`bwrap --unshare-net`). Each exec call gets a
unix socket of its own, bound into its sandbox and served there on 127.0.0.1 by the bridge (bridge.py), which
HTTP_PROXY, HTTPS_PROXY and ALL_PROXY name (sandbox.py). Behind the socket a forward proxy (util/forward_proxy.py:
https as CONNECT tunnels, plain http as absolute-form requests) lets a connection through only when

- its host is on the domain allowlist (domains.py), checked before any lookup, so a refused name is not even
  resolved, and
- every address the name resolves to passes the outbound guard (util/outbound.py: no loopback, private or
  link-local address unless `--allow-outbound` lists it); the proxy connects to the address it checked.

A refusal answers 403 with what to do. A socket per call is what ties each refusal to the call that caused it, so
the call's result can list the domains refused during it (`CallProxy.note`).
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import uuid
from collections.abc import Iterable
from pathlib import Path

from hermitcrab.util.forward_proxy import ForwardProxy, unresolvable
from hermitcrab.util.outbound import Outbound, OutboundRefused

from .domains import DomainAllowlist, not_allowed

HOW_TO_ALLOW_OUTBOUND = "the user can start hermitcrab-exec with --allow-outbound HOST:PORT ([outbound] allow)"
_MAX_NOTED = 10  # refused hosts a note names; more are counted
_NOT_LISTED = "not on the domain allowlist; exec_allow_domain asks the user to add one"
_NEVER_STARTED = threading.Event()
_NEVER_STARTED.set()
_NOT_PUBLIC = "an address on this machine or its network; " + HOW_TO_ALLOW_OUTBOUND


class CallProxy:
    """The proxy of one exec call: its socket, and what it refused."""

    def __init__(self, socket: Path, allowlist: DomainAllowlist, outbound: Outbound) -> None:
        self.socket = socket
        self.allowlist = allowlist
        self.outbound = outbound
        self.refused: dict[str, str] = {}  # host -> why, in the order first refused
        self.proxy = ForwardProxy(self._check)
        self.ended: threading.Event | None = None  # set by `release`: the command's end, after which it closes

    def release(self, ended: threading.Event | None) -> None:
        """The call is done with its proxy once `ended` is set (None: the command never started); it is closed at
        the next call or at shutdown, so a background command keeps its way out while it runs."""
        self.ended = ended or _NEVER_STARTED

    async def _check(self, target: str, tunnel: bool) -> tuple[str, int, str]:
        url = f"https://{target}/" if tunnel else target
        host, _ = self.outbound.check_url(url)
        if not self.allowlist.allows(host):
            self._refuse(host, _NOT_LISTED)
            raise OutboundRefused(not_allowed(host, self.allowlist))
        try:
            return await self.outbound.resolve(url)
        except OutboundRefused as exc:
            if not unresolvable(exc):
                self._refuse(host, _NOT_PUBLIC)
            raise

    def _refuse(self, host: str, why: str) -> None:
        self.refused.setdefault(host, why)

    def note(self) -> str | None:
        """The domains refused so far, grouped by why, or None when there were none."""
        if not self.refused:
            return None
        groups: dict[str, list[str]] = {}
        for host, why in list(self.refused.items())[:_MAX_NOTED]:
            groups.setdefault(why, []).append(host)
        parts = [f"{', '.join(hosts)} ({why})" for why, hosts in groups.items()]
        more = len(self.refused) - _MAX_NOTED
        return "Network refused: " + "; ".join(parts) + (f"; and {more} more." if more > 0 else ".")


class NetworkProxy:
    """Opens each call's proxy, and closes those whose command has ended when the next call comes and at shutdown."""

    def __init__(self, allowlist: DomainAllowlist, outbound: Outbound) -> None:
        self.allowlist = allowlist
        self.outbound = outbound
        self._folder: Path | None = None
        self._calls: list[CallProxy] = []

    async def open_call(self) -> CallProxy:
        for call in [call for call in self._calls if call.ended is not None and call.ended.is_set()]:
            await self._close(call)
        if self._folder is None:  # mkdtemp's folder is 0700: the sockets are the server user's way out
            self._folder = Path(tempfile.mkdtemp(prefix="hermitcrab-exec-proxy-"))
        call = CallProxy(self._folder / f"{uuid.uuid4().hex[:12]}.sock", self.allowlist, self.outbound)
        await call.proxy.listen_unix(call.socket)
        self._calls.append(call)
        return call

    async def close(self) -> None:
        for call in list(self._calls):
            await self._close(call)
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None

    async def _close(self, call: CallProxy) -> None:
        self._calls.remove(call)
        await call.proxy.close()
        call.socket.unlink(missing_ok=True)


class BadNetworkOption(ValueError):
    """An `--allow-domain` or `--allow-outbound` entry that means nothing; the message says which and why."""


def network_proxy(allow_domains: Iterable[str], outbound_allow: Iterable[str], state: Path) -> NetworkProxy:
    """The proxy for these options, its approved domains kept in `state`; BadNetworkOption for a bad entry."""
    try:
        allowlist = DomainAllowlist(allow_domains, state / "domains.json")
        outbound = Outbound(outbound_allow, how_to_allow=HOW_TO_ALLOW_OUTBOUND)
    except ValueError as exc:
        raise BadNetworkOption(str(exc)) from None
    return NetworkProxy(allowlist, outbound)
