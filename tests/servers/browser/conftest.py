"""Fixtures for the browser tests: local pages on 127.0.0.1 and one shared Chromium per module."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from functools import partial
from http import cookies
from pathlib import Path
from urllib.parse import parse_qs

import pytest

from hermitcrab.servers.browser import BrowserConfig, Session
from tests.support.static_files import QuietHandler, serve_directory

PAGES = Path(__file__).parent / "pages"
LOCAL = ("127.0.0.1",)
"""The test pages are served on loopback, which the browser's outbound guard refuses unless allowed: every browser
these tests start allows it (`local_config`), except those that test the refusal."""


class _Pages(QuietHandler):
    """Static test pages plus a tiny login endpoint that sets a cookie, and /whoami that reads it."""

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        form = parse_qs(self.rfile.read(length).decode())
        user = form.get("username", [""])[0]
        role = form.get("role", [""])[0]
        remember = "yes" if form.get("remember") else "no"
        body = f"<h1>Welcome, {user}</h1><p>Role: {role}, remember: {remember}</p>"
        self._html(body, {"Set-Cookie": f"user={user}; Path=/; Max-Age=3600"})

    def do_GET(self) -> None:
        if self.path.startswith("/whoami"):
            jar = cookies.SimpleCookie(self.headers.get("Cookie") or "")
            user = jar["user"].value if "user" in jar else "nobody"
            self._html(f"<h1>You are {user}</h1>")
            return
        super().do_GET()

    def _html(self, body: str, headers: dict[str, str] | None = None) -> None:
        head = '<!doctype html><html><head><meta charset="utf-8"><title>Result</title></head>'
        data = f"{head}<body>{body}</body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data.encode())))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data.encode())


@pytest.fixture(scope="session")
def site() -> Iterator[str]:
    """Base URL of the test pages, e.g. http://127.0.0.1:41234."""
    with serve_directory(PAGES, _Pages) as base:
        yield base


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """Module scope, so one browser session can serve every test in a module on one event loop."""
    return "asyncio"


@pytest.fixture(scope="session")
def local_config() -> Callable[..., BrowserConfig]:
    """`BrowserConfig(...)` that may reach the test pages on 127.0.0.1 (`--allow-outbound 127.0.0.1`)."""
    return partial(BrowserConfig, outbound_allow=LOCAL)


@pytest.fixture(scope="module")
def uploads(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("uploads")
    (root / "notes.txt").write_text("hello upload\n", encoding="utf-8")
    return root


@pytest.fixture(scope="module")
async def shared_session(
    tmp_path_factory: pytest.TempPathFactory, uploads: Path, local_config: Callable[..., BrowserConfig]
) -> AsyncIterator[Session]:
    """One isolated Chromium for the whole module; tests get fresh MCP clients on top of it."""
    config = local_config(state_dir=tmp_path_factory.mktemp("browser-state"), roots=(uploads,))
    session = Session(config)
    yield session
    await session.close(stop=True)
