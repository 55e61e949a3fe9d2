"""`hermitcrab-browser` as a subprocess over stdio: list tools, open a local page, act on it, leave HOME alone."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from tests.support.browser import needs_chromium, text_of
from tests.support.static_files import serve_directory

PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>Stdio</title></head><body>
<h1>Over stdio</h1><button onclick="this.textContent='Done'">Go</button></body></html>"""

pytestmark = needs_chromium


@pytest.fixture
def site(tmp_path: Path) -> Iterator[str]:
    (tmp_path / "index.html").write_text(PAGE, encoding="utf-8")
    with serve_directory(tmp_path) as base:
        yield base


async def test_browser_over_stdio(site: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "hermitcrab.servers.browser",
            "--isolated",
            "--allow-outbound",
            "127.0.0.1",  # the page is served on loopback, which the browser refuses unless allowed
            "--state",
            str(tmp_path / "state"),
            "--call-timeout",
            "20",
            "--log-level",
            "warning",
        ],
        env={"HOME": str(home)},
    )
    async with Client(params) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert {"browser_navigate", "browser_snapshot", "browser_click"} <= names
        page = text_of(await client.call_tool("browser_navigate", {"url": f"{site}/index.html"}))
        assert '- heading "Over stdio" [level=1]' in page
        ref = page.split('button "Go" [ref=')[1].split("]")[0]
        clicked = text_of(await client.call_tool("browser_click", {"ref": ref, "element": "Go button"}))
        assert 'button "Done"' in clicked
    assert sorted(home.rglob("*")) == []  # --isolated: nothing written in the home directory
