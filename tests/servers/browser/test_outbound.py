"""The browser's outbound guard and origin policy at every hop, against real Chromium and real pages on 127.0.0.1.

Two sites on loopback: A, which a test allows, and B, which it does not (another port, so another destination and
another origin). B records every request it gets: a blocked redirect, sub-resource, frame or WebSocket must never
reach it, whatever the browser shows.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp_types import CallToolResult

from hermitcrab.servers.browser import BrowserConfig, Session, build_server
from tests.support.browser import needs_chromium, ref_of, text_of

pytestmark = needs_chromium


@dataclass
class Site:
    base: str
    port: int
    hits: list[str] = field(default_factory=list[str])


class _Handler(BaseHTTPRequestHandler):
    """`/redirect?to=URL` answers 302 to URL; `/page?embed=URL` a page that loads URL as an image, a script's fetch,
    a frame and a WebSocket; anything else a page naming its path."""

    site: Site

    def do_GET(self) -> None:
        self.site.hits.append(self.path)
        if self.path.startswith("/redirect?to="):
            self.send_response(302)
            self.send_header("Location", self.path.split("to=", 1)[1])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if self.path.startswith("/page?embed="):
            target = self.path.split("embed=", 1)[1]
            socket = "ws" + target.removeprefix("http")
            body = (
                f'<h1>Embedding</h1><img src="{target}img"><iframe src="{target}frame"></iframe>'
                f'<script>fetch("{target}fetch").catch(() => {{}}); new WebSocket("{socket}ws");</script>'
            )
        else:
            body = f"<h1>Secret page {self.path}</h1>"
        data = f"<!doctype html><title>{self.path}</title>{body}".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def sites() -> Iterator[tuple[Site, Site]]:
    servers: list[ThreadingHTTPServer] = []
    made: list[Site] = []
    for _ in range(2):
        site = Site("", 0)
        handler = type("Handler", (_Handler,), {"site": site})
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        site.port = server.server_address[1]
        site.base = f"http://127.0.0.1:{site.port}"
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        made.append(site)
    yield made[0], made[1]
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture(autouse=True)
def _forget_hits(sites: tuple[Site, Site]) -> None:
    for site in sites:
        site.hits.clear()


async def _client(config: BrowserConfig) -> AsyncIterator[Client]:
    session = Session(config)
    try:
        async with Client(build_server(session=session)) as client:
            yield client
    finally:
        await session.close(stop=True)


@pytest.fixture(scope="module")
async def default_client(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Client]:
    """A browser with no allow entry: what an owner gets out of the box."""
    async for client in _client(BrowserConfig(state_dir=tmp_path_factory.mktemp("state"))):
        yield client


@pytest.fixture(scope="module")
async def only_a(tmp_path_factory: pytest.TempPathFactory, sites: tuple[Site, Site]) -> AsyncIterator[Client]:
    """`--allow-outbound 127.0.0.1:A`: site A may be reached, B (another port on loopback) may not."""
    a, _ = sites
    config = BrowserConfig(state_dir=tmp_path_factory.mktemp("state"), outbound_allow=(f"127.0.0.1:{a.port}",))
    async for client in _client(config):
        yield client


@pytest.fixture(scope="module")
async def origin_a(tmp_path_factory: pytest.TempPathFactory, sites: tuple[Site, Site]) -> AsyncIterator[Client]:
    """`--allowed-origins A` with loopback open to the guard: only the origin policy stands between A and B."""
    a, _ = sites
    config = BrowserConfig(
        state_dir=tmp_path_factory.mktemp("state"), allowed_origins=(a.base,), outbound_allow=("127.0.0.1",)
    )
    async for client in _client(config):
        yield client


async def _navigate(client: Client, url: str) -> CallToolResult:
    return await client.call_tool("browser_navigate", {"url": url})


async def test_the_browser_refuses_loopback_by_default_and_says_how_to_allow_it(
    default_client: Client, sites: tuple[Site, Site]
) -> None:
    a, _ = sites
    for url in (f"{a.base}/secret", f"http://localhost:{a.port}/secret"):
        result = await _navigate(default_client, url)
        text = text_of(result)
        assert result.is_error, text
        assert "loopback" in text and (f'"127.0.0.1:{a.port}"' in text or f'"localhost:{a.port}"' in text), text
        assert "--allow-outbound" in text and "Secret page" not in text
    assert a.hits == []


async def test_metadata_and_private_addresses_are_refused_without_a_connection(default_client: Client) -> None:
    for url, kind in (("http://169.254.169.254/latest/meta-data/", "link-local"), ("http://10.1.2.3/", "private")):
        result = await _navigate(default_client, url)
        assert result.is_error and kind in text_of(result), text_of(result)


async def test_an_allow_entry_opens_that_destination(only_a: Client, sites: tuple[Site, Site]) -> None:
    a, _ = sites
    result = await _navigate(only_a, f"{a.base}/hello")
    assert not result.is_error and "Secret page /hello" in text_of(result)


async def test_a_redirect_from_an_allowed_site_to_a_refused_address_is_blocked(
    only_a: Client, sites: tuple[Site, Site]
) -> None:
    a, b = sites
    for url in (f"{a.base}/redirect?to={b.base}/secret", f"{a.base}/redirect?to={a.base}/redirect?to={b.base}/x"):
        result = await _navigate(only_a, url)
        text = text_of(result)
        assert result.is_error, text
        assert "redirected to a destination the browser refuses" in text and f"127.0.0.1:{b.port}" in text, text
        assert "Secret page" not in text
    assert b.hits == [], "the refused hop never reached B"


async def test_sub_resources_frames_fetches_and_websockets_to_a_refused_address_never_leave(
    only_a: Client, sites: tuple[Site, Site]
) -> None:
    a, b = sites
    result = await _navigate(only_a, f"{a.base}/page?embed={b.base}/")
    text = text_of(result)
    assert not result.is_error and "Embedding" in text, text
    waited = text_of(await only_a.call_tool("browser_wait_for", {"time": 1}))
    assert b.hits == [], "no image, frame, fetch or WebSocket reached B"
    assert "Note: the browser refused" in text + waited and f"refused 127.0.0.1:{b.port}" in text + waited
    requests = text_of(await only_a.call_tool("browser_network_requests", {}))
    assert f"{b.base}/frame => 403" in requests and f"{b.base}/fetch => net::" in requests, requests


async def test_with_allowed_origins_a_redirect_from_a_to_b_is_blocked(
    origin_a: Client, sites: tuple[Site, Site]
) -> None:
    a, b = sites
    opened = await _navigate(origin_a, f"{a.base}/fine")
    assert not opened.is_error and "Secret page /fine" in text_of(opened)
    for url in (f"{a.base}/redirect?to={b.base}/secret", f"{a.base}/redirect?to={a.base}/redirect?to={b.base}/x"):
        result = await _navigate(origin_a, url)
        text = text_of(result)
        assert result.is_error and "outside the origins this browser may visit" in text, text
        assert "Secret page" not in text
    assert b.hits == []


async def test_a_redirect_within_what_is_allowed_still_loads(origin_a: Client, sites: tuple[Site, Site]) -> None:
    a, _ = sites
    result = await _navigate(origin_a, f"{a.base}/redirect?to={a.base}/landed")
    assert not result.is_error and "Secret page /landed" in text_of(result), text_of(result)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A hermitcrab workspace as `init` makes it: persona and memory files, and uploads/ for the browser."""
    root = tmp_path / "workspace"
    (root / "memory").mkdir(parents=True)
    (root / "uploads").mkdir(mode=0o700)
    (root / "MEMORY.md").write_text("the owner's private notes\n", encoding="utf-8")
    (root / "USER.md").write_text("about the owner\n", encoding="utf-8")
    (root / "memory" / "2026-01-01.md").write_text("a day\n", encoding="utf-8")
    (root / "uploads" / "invoice.txt").write_text("to send\n", encoding="utf-8")
    return root


@pytest.fixture
async def uploading(
    tmp_path: Path, workspace: Path, local_config: Callable[..., BrowserConfig]
) -> AsyncIterator[Callable[[tuple[Path, ...]], Client]]:
    """Connect a browser whose upload roots are the ones given (the default's, or an older init's workspace)."""
    sessions: list[Session] = []

    def connect(roots: tuple[Path, ...]) -> Client:
        session = Session(local_config(state_dir=tmp_path / f"state{len(sessions)}", roots=roots))
        sessions.append(session)
        return Client(build_server(session=session))

    yield connect
    for session in sessions:
        await session.close(stop=True)


async def test_an_upload_of_memory_md_is_refused(
    uploading: Callable[[tuple[Path, ...]], Client], workspace: Path, site: str
) -> None:
    for roots in ((workspace / "uploads",), (workspace,)):  # the default root, and a root set to the whole workspace
        async with uploading(roots) as client:
            page = text_of(await _navigate(client, f"{site}/form.html"))
            field = ref_of(page, 'button "Attachment"')
            for path in (workspace / "MEMORY.md", workspace / "USER.md", workspace / "memory" / "2026-01-01.md"):
                result = await client.call_tool("browser_file_upload", {"paths": [str(path)], "ref": field})
                assert result.is_error, text_of(result)
                said = text_of(result)
                assert "outside the allowed roots" in said or "persona and memory files are never uploaded" in said
            sent = await client.call_tool(
                "browser_file_upload", {"paths": [str(workspace / "uploads" / "invoice.txt")], "ref": field}
            )
            assert not sent.is_error and "file=invoice.txt:8" in text_of(sent), text_of(sent)
