"""Every call ends by its deadline: a page stuck in a script is reported, closed and replaced; long waits hold up
only their own tab."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp_types import CallToolResult

from hermitcrab.servers.browser import BrowserConfig, Session, build_server
from tests.support.browser import needs_chromium, ref_of, text_of

pytestmark = needs_chromium
Connect = Callable[[float], Awaitable[Client]]


@pytest.fixture
async def connect(tmp_path: Path, local_config: Callable[..., BrowserConfig]) -> AsyncIterator[Connect]:
    """Start a browser server whose calls end within the given number of seconds, and connect to it."""
    async with AsyncExitStack() as stack:

        async def start(call_timeout: float) -> Client:
            session = Session(local_config(state_dir=tmp_path, call_timeout_s=call_timeout))
            stack.push_async_callback(session.close, stop=True)
            return await stack.enter_async_context(Client(build_server(session=session)))

        yield start


async def timed(client: Client, tool: str, **arguments: object) -> tuple[CallToolResult, float]:
    started = time.monotonic()
    with anyio.fail_after(20):  # without deadlines these calls never return
        result = await client.call_tool(tool, arguments)
    return result, time.monotonic() - started


async def test_a_busy_looping_page_is_reported_closed_and_replaced(connect: Connect, site: str) -> None:
    client = await connect(2.0)
    await timed(client, "browser_navigate", url=f"{site}/second.html")  # the browser starts outside the timing
    stuck, seconds = await timed(client, "browser_navigate", url=f"{site}/busy.html")
    assert stuck.is_error, text_of(stuck)
    assert "did not answer within 2 s" in text_of(stuck) and "closed and replaced" in text_of(stuck)
    assert f"- URL of the closed tab: {site}/busy.html" in text_of(stuck)
    assert seconds < 2.0 + 4.0  # the deadline, a 1 s probe, closing the tab and opening a new one (~0.6 s)
    after, seconds = await timed(client, "browser_navigate", url=f"{site}/second.html")
    assert not after.is_error and "Second page" in text_of(after)
    assert seconds < 2.0
    tabs, _ = await timed(client, "browser_tabs", action="list")
    assert "- 0: (current) [Second]" in text_of(tabs) and "- 1:" not in text_of(tabs)


async def test_a_stuck_background_tab_does_not_hold_up_the_others(connect: Connect, site: str) -> None:
    client = await connect(2.0)
    page, _ = await timed(client, "browser_navigate", url=f"{site}/links.html")
    busy = ref_of(text_of(page), 'link "busy page in a new tab"')
    await timed(client, "browser_click", ref=busy)
    listed, seconds = await timed(client, "browser_tabs", action="list")
    assert "- 1: [(no answer from the page)]" in text_of(listed) and seconds < 2.5  # its title waits 1 s
    moved, seconds = await timed(client, "browser_navigate", url=f"{site}/second.html")
    assert not moved.is_error and seconds < 2.5
    selected, _ = await timed(client, "browser_tabs", action="select", index=1)
    assert selected.is_error and "closed and replaced" in text_of(selected)
    listed, _ = await timed(client, "browser_tabs", action="list")
    assert "- 1: (current) [](about:blank)" in text_of(listed)


async def test_a_long_wait_holds_up_only_its_own_tab(connect: Connect, site: str) -> None:
    client = await connect(6.0)
    await timed(client, "browser_navigate", url=f"{site}/second.html")
    waited: list[CallToolResult] = []

    async def wait() -> None:
        waited.append((await timed(client, "browser_wait_for", time=3))[0])

    async with anyio.create_task_group() as group:
        group.start_soon(wait)
        await anyio.sleep(0.2)  # let the wait start on tab 0
        started = time.monotonic()
        await timed(client, "browser_tabs", action="new")
        other, _ = await timed(client, "browser_navigate", url=f"{site}/login.html")
        assert not other.is_error and "Sign in" in text_of(other)
        assert not waited and time.monotonic() - started < 2.5  # done while the 3 s wait still runs
    [result] = waited
    assert not result.is_error and "Waited: 3 s passed" in text_of(result)
    assert f"- URL: {site}/second.html" in text_of(result)  # it reports the tab it waited on


async def test_waits_are_bounded_by_the_deadline(connect: Connect, site: str) -> None:
    client = await connect(3.0)
    await timed(client, "browser_navigate", url=f"{site}/second.html")
    too_long, _ = await timed(client, "browser_wait_for", time=1e308)
    assert too_long.is_error
    assert "`time` must be between 0 and 2 seconds, got 1e+308; to wait longer, call browser_wait_for again" in (
        text_of(too_long)
    )
    never, seconds = await timed(client, "browser_wait_for", text="Never shown")
    assert never.is_error and "'Never shown' did not appear within 2 s" in text_of(never)
    assert seconds < 3.0
