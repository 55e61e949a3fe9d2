"""A remote MCP server behind OAuth 2.1 for the login tests: the SDK's own authorisation-server routes (metadata,
dynamic registration, authorize, token with its PKCE check, revocation) over an in-memory store, the protected
resource metadata, and an `/mcp` endpoint that answers only a valid bearer token.

The authorize step approves at once and redirects back with a code, so a "browser" is anything that follows
redirects: `python oauth_server.py --follow URL` is the one `BROWSER` names in the tests (what `--open` starts).
`/test/stats` says how many codes and refreshes were granted; `/test/revoke` withdraws every token, as a user
revoking the app would; `/test/expire` ends the access tokens' life early, as a server restart might.

    python oauth_server.py --port 8123 [--expires-in 3600] [--deny]

`running_oauth_server()` starts one for a test and hands over its URL, its counters and its switches.
"""

from __future__ import annotations

import argparse
import secrets
import shlex
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from hermitcrab.host.config import ServerConfig
from hermitcrab.host.mcp.oauth import log_in

BROWSER = f"{shlex.quote(sys.executable)} {shlex.quote(__file__)} --follow %s"
"""What `BROWSER` is set to for a CLI whose `--open` should log in: Python's `webbrowser` runs it."""


@dataclass(frozen=True)
class OAuthServer:
    """A running test server: `url` is its MCP endpoint; the methods read its counters and flip its state."""

    url: str

    @property
    def base(self) -> str:
        return self.url.removesuffix("/mcp")

    def stats(self) -> Counter[str]:
        return Counter(httpx.get(f"{self.base}/test/stats").json())

    def revoke(self) -> None:
        httpx.post(f"{self.base}/test/revoke").raise_for_status()

    def expire(self) -> None:
        httpx.post(f"{self.base}/test/expire").raise_for_status()


@contextmanager
def running_oauth_server(*options: str) -> Iterator[OAuthServer]:
    # Imported here: this file also runs as a script, where the `tests` package is not on the path.
    from tests.support.fake_llm import free_port
    from tests.support.processes import serving

    port = free_port()
    with serving([sys.executable, __file__, "--port", str(port), *options], port) as url:
        yield OAuthServer(url)


class MemoryAuthority:
    """The SDK's `OAuthAuthorizationServerProvider` over dicts: every grant counted, access tokens short-lived."""

    def __init__(self, expires_in: int, deny: bool) -> None:
        self.expires_in = expires_in
        self.deny = deny
        self.counts: Counter[str] = Counter()
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.refresh_tokens: dict[str, RefreshToken] = {}
        self.access_tokens: dict[str, AccessToken] = {}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.counts["registrations"] += 1
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        if self.deny:
            raise AuthorizeError("access_denied", "the user said no")
        code = secrets.token_urlsafe(32)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull, code: str) -> AuthorizationCode | None:
        found = self.codes.get(code)
        return found if found is not None and found.client_id == client.client_id else None

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        del self.codes[authorization_code.code]
        self.counts["code_grants"] += 1
        return self._issue(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        found = self.refresh_tokens.get(refresh_token)
        return found if found is not None and found.client_id == client.client_id else None

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        del self.refresh_tokens[refresh_token.token]
        self.counts["refresh_grants"] += 1
        return self._issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access_tokens.get(token)
        if found is None or (found.expires_at is not None and found.expires_at <= time.time()):
            return None
        self.counts["bearer_requests"] += 1
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access_tokens.pop(token.token, None)
        self.refresh_tokens.pop(token.token, None)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        expires_at = int(time.time()) + self.expires_in
        self.access_tokens[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=expires_at, resource=resource
        )
        self.refresh_tokens[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource
        )
        return OAuthToken(
            access_token=access, expires_in=self.expires_in, refresh_token=refresh, scope=" ".join(scopes)
        )


def build_server(port: int, expires_in: int, deny: bool) -> MCPServer:
    base = f"http://127.0.0.1:{port}"
    authority = MemoryAuthority(expires_in, deny)
    server = MCPServer(
        "remote",
        auth_server_provider=authority,
        auth=AuthSettings(
            issuer_url=base,  # pyright: ignore[reportArgumentType]  # pydantic parses the URL
            resource_server_url=f"{base}/mcp",  # pyright: ignore[reportArgumentType]
            validate_token_resource=True,
            required_scopes=["tools"],
            client_registration_options=ClientRegistrationOptions(enabled=True, valid_scopes=["tools"]),
            revocation_options=RevocationOptions(enabled=True),
        ),
    )

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two numbers (reached only with a valid token)."""
        return a + b

    @server.custom_route("/test/stats", methods=["GET"])
    async def stats(request: Request) -> Response:
        return JSONResponse(dict(authority.counts))

    @server.custom_route("/test/revoke", methods=["POST"])
    async def revoke(request: Request) -> Response:
        authority.access_tokens.clear()
        authority.refresh_tokens.clear()
        return JSONResponse({})

    @server.custom_route("/test/expire", methods=["POST"])
    async def expire(request: Request) -> Response:
        authority.access_tokens.clear()
        return JSONResponse({})

    return server


async def log_in_headless(config: ServerConfig, folder: Path, timeout_s: float = 30) -> int:
    """`hermitcrab mcp login`'s own login (`log_in`) with `follow` for the browser: for an authorisation server
    that approves at once (this one, the conformance suite's); the number of tools the server lists."""
    async with anyio.create_task_group() as browsers:

        async def browse(url: str) -> None:
            browsers.start_soon(anyio.to_thread.run_sync, follow, url)

        tools = await log_in(config, folder, browse, timeout_s)
    return tools


def follow(url: str) -> None:
    """The tests' browser: open `url` and follow its redirects (to the authorize endpoint, then back to the
    login's loopback listener); fails unless the last page answered 200."""
    response = httpx.get(url, follow_redirects=True, timeout=30)
    response.raise_for_status()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int)
    parser.add_argument("--expires-in", type=int, default=3600)
    parser.add_argument("--deny", action="store_true", help="refuse every authorisation, as a user saying no")
    parser.add_argument("--follow", metavar="URL", help="act as the browser: open URL and follow its redirects")
    args = parser.parse_args()
    if args.follow:
        follow(args.follow)
        return
    server = build_server(args.port, args.expires_in, args.deny)
    server.run("streamable-http", host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
