"""`hermitcrab-browser` as a subprocess over stdio: list tools, open a local page, act on it."""

from __future__ import annotations

import shutil
import sys
import threading
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp_types import TextContent

PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>Stdio</title></head><body>
<h1>Over stdio</h1><button onclick="this.textContent='Done'">Go</button></body></html>"""

pytestmark = pytest.mark.skipif(
    not any(shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"))
    and not any(Path.home().glob(".cache/ms-playwright/chromium-*")),
    reason="no Chromium or Chrome installed",
)


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def site(tmp_path: Path) -> Iterator[str]:
    (tmp_path / "index.html").write_text(PAGE, encoding="utf-8")
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(tmp_path)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _text(result: Any) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


async def test_browser_over_stdio(site: str, tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "hermitcrab.servers.browser", "--isolated", "--state", str(tmp_path / "state")],
    )
    async with Client(params) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert {"browser_navigate", "browser_snapshot", "browser_click"} <= names
        page = _text(await client.call_tool("browser_navigate", {"url": f"{site}/index.html"}))
        assert '- heading "Over stdio" [level=1]' in page
        ref = page.split('button "Go" [ref=')[1].split("]")[0]
        clicked = _text(await client.call_tool("browser_click", {"ref": ref, "element": "Go button"}))
        assert 'button "Done"' in clicked
