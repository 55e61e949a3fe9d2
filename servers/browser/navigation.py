"""Tools that move between pages and tabs, wait, resize, and close the browser."""

from __future__ import annotations

import asyncio
import re
from typing import Annotated, Literal
from urllib.parse import urlsplit

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeoutError
from pydantic import Field

from hermitcrab.servers._common.arguments import quote, shorten
from hermitcrab.util.forward_proxy import REFUSED_HEADER, unresolvable
from hermitcrab.util.outbound import Outbound, OutboundRefused

from . import report
from .limits import MAX_URL_CHARS, MAX_WAIT_TEXT_CHARS
from .origins import NAVIGABLE_SCHEMES, OriginPolicy
from .runner import Runner, tab_lines
from .session import Session
from .tab import Tab

_MAX_WAIT_SECONDS = 30.0
TextState = Literal["hidden", "visible"]
_SCHEME = re.compile(r"([a-zA-Z][a-zA-Z0-9+.-]*):")
_PORT = re.compile(r"\d+(?:[/?#]|$)")
_SCHEME_ADVICE = {
    "javascript": "to run code in the page, use browser_evaluate (offered when the server runs with --enable-evaluate)",
    "mailto": "it is an e-mail address, not a page: give it to the user instead",
    "tel": "it is a phone number, not a page: give it to the user instead",
    "sms": "it is a phone number, not a page: give it to the user instead",
    "file": "files on this machine are not opened: serve them over http, or upload one with browser_file_upload",
}
_OTHER_SCHEME_ADVICE = "give the http(s) address of a web page instead"
_MIN_TEXT_WAIT = 0.1


def normalize_url(url: str, policy: OriginPolicy) -> str:
    """Add a missing scheme and refuse what the server does not open (other schemes, blocked origins)."""
    url = url.strip()
    if not url:
        raise ToolError("`url` is empty: give the address of the page to open, e.g. https://example.com.")
    scheme = _scheme_of(url)
    if scheme is None:
        local = url.startswith(("localhost", "127.", "[::1]"))
        url = ("http://" if local else "https://") + url
    elif scheme not in NAVIGABLE_SCHEMES:
        advice = _SCHEME_ADVICE.get(scheme, _OTHER_SCHEME_ADVICE)
        raise ToolError(
            f"`url` {quote(url)} uses the {scheme}: scheme, but this browser opens only http:, https:, about: and "
            f"data: URLs; {advice}."
        )
    try:
        urlsplit(url).port  # noqa: B018  # parses the host and port, as the origin check and Chromium will
    except ValueError as exc:
        advice = "give one like https://example.com/page"
        raise ToolError(f"`url` {quote(url)} is not a valid URL ({exc}); {advice}.") from exc
    if not policy.allows(url):
        raise ToolError(
            f"`url` {quote(url)} is outside the origins this browser may visit ({policy.describe()}); "
            "pick a URL on an allowed origin."
        )
    return url


async def check_outbound(url: str, outbound: Outbound) -> None:
    """Refuse, as a tool error, an http(s) `url` whose host is (or resolves to) an address the guard refuses."""
    if urlsplit(url).scheme.lower() not in ("http", "https"):
        return  # about: and data: reach no host
    try:
        await outbound.resolve(url)
    except OutboundRefused as exc:
        if unresolvable(exc):
            raise ToolError(
                f"`url` {quote(url)} was not opened: net::ERR_NAME_NOT_RESOLVED, its host name has no address. "
                "Check the URL and that the site is reachable."
            ) from None
        raise ToolError(f"`url` {quote(url)} was not opened: {exc}.") from None


def _refused_on_the_way(session: Session, target: str, since: int) -> ToolError | None:
    """A tool error if the proxy refused a hop of this navigation (a redirect to a refused destination)."""
    if session.refusal_count == since or not session.refusals:
        return None
    why = session.refusals[-1]
    session.take_refusals()
    return ToolError(f"{shorten(target)} was not opened: it redirected to a destination the browser refuses ({why}).")


def _scheme_of(url: str) -> str | None:
    """The URL's scheme, or None when it has none: `example.com/x` and `intranet:8000` are hosts, `tel:1` is not."""
    found = _SCHEME.match(url)
    if found is None:
        return None
    scheme = found.group(1).lower()
    known = scheme in NAVIGABLE_SCHEMES or scheme in _SCHEME_ADVICE
    if "://" not in url and not known and _PORT.match(url, found.end()):
        return None  # host:port
    return scheme


def register(server: MCPServer, runner: Runner) -> None:
    session = runner.session
    max_wait = min(_MAX_WAIT_SECONDS, session.config.page_timeout_ms / 1000)

    @server.tool()
    async def browser_navigate(
        url: Annotated[
            str, Field(description="The URL to open, e.g. https://example.com/login.", max_length=MAX_URL_CHARS)
        ],
    ) -> CallToolResult:
        """Open a URL in the current tab and return the page snapshot.

        In the snapshot every element you can act on carries a ref (`[ref=e12]`); pass it to the
        other browser tools. Refs die when the page changes: use the refs of the latest snapshot.
        """
        target = normalize_url(url, session.policy)
        await check_outbound(target, session.outbound)

        async def go(tab: Tab) -> str:
            since = session.refusal_count
            try:
                response = await tab.page.goto(target, wait_until="domcontentloaded")
            except PlaywrightError as exc:
                if (refused := _refused_on_the_way(session, target, since)) is not None:
                    raise refused from None
                if "Download is starting" not in exc.message:
                    raise
                return f"{shorten(target)} is a file download, not a page"
            if response is not None and response.headers.get(REFUSED_HEADER.lower()):
                raise _refused_on_the_way(session, target, since) or ToolError(
                    f"{shorten(target)} was not opened: it led to a destination the browser refuses."
                )
            return f"Opened {shorten(target)}"

        return await runner.act(go, snapshot="full", retry_after_crash=True)

    @server.tool()
    async def browser_navigate_back() -> CallToolResult:
        """Go back to the previous page in the current tab's history and return its snapshot."""

        async def back(tab: Tab) -> str:
            if await tab.page.go_back(wait_until="domcontentloaded") is None:
                raise ToolError("This tab has no previous page; open one with browser_navigate.")
            return "Went back"

        return await runner.act(back, snapshot="full")

    @server.tool()
    async def browser_tabs(
        action: Annotated[
            Literal["list", "new", "select", "close"],
            Field(description="list the tabs, open a new blank tab, switch to a tab, or close one."),
        ],
        index: Annotated[
            int | None,
            Field(description="The tab's number from the list, for select (required) and close (default: current)."),
        ] = None,
    ) -> CallToolResult:
        """List, open, switch or close browser tabs. Other tools act on the current tab."""
        # Not through the current tab's turn: a long call on it must not keep the model from other tabs.
        if action == "list":
            await session.ensure()
            return report.result(["Open tabs:"], await tab_lines(session))
        if action == "new":
            await session.new_tab()
            note = "Opened a new tab and made it current"
        elif action == "select":
            if index is None:
                raise ToolError("Give the index of the tab to select (see browser_tabs action=list).")
            session.select(index)
            note = f"Switched to tab {index}"
        else:
            target = session.tabs.index(await session.current_tab()) if index is None else index
            await session.close_tab(target)
            note = f"Closed tab {target}"
            if not session.tabs:
                return report.result([note, "No tab is open now; browser_navigate opens one."])

        async def show(_: Tab) -> str:
            return note

        return await runner.act(show, snapshot="full", modal_ok=True)

    @server.tool()
    async def browser_wait_for(
        time: Annotated[float | None, Field(description="Seconds to wait (at most 30).")] = None,
        text: Annotated[
            str | None,
            Field(description="Wait until this text is visible on the page.", max_length=MAX_WAIT_TEXT_CHARS),
        ] = None,
        textGone: Annotated[
            str | None,
            Field(description="Wait until this text is no longer visible.", max_length=MAX_WAIT_TEXT_CHARS),
        ] = None,
    ) -> CallToolResult:
        """Wait for text to appear or disappear, or for some seconds, then return the page snapshot."""
        if time is None and text is None and textGone is None:
            raise ToolError("Give time, text or textGone to wait for.")
        if time is not None and not 0 <= time <= max_wait:
            raise ToolError(
                f"`time` must be between 0 and {max_wait:.3g} seconds, got {time:g}; "
                "to wait longer, call browser_wait_for again (or wait for a text to appear instead)."
            )

        async def wait(tab: Tab) -> str:
            # Everything together stays within one page timeout, so the call's deadline is never reached.
            end = anyio.current_time() + max_wait
            if time is not None:
                await asyncio.sleep(time)
            waits: list[tuple[str | None, TextState]] = [(textGone, "hidden"), (text, "visible")]
            for target, state in waits:
                if target is None:
                    continue
                remaining = max(end - anyio.current_time(), _MIN_TEXT_WAIT)
                try:
                    await tab.page.get_by_text(target).first.wait_for(state=state, timeout=remaining * 1000)
                except PlaywrightTimeoutError as exc:
                    happened = "is still visible" if state == "hidden" else "did not appear"
                    raise ToolError(
                        f"{quote(target)} {happened} within {max_wait:.3g} s; check the page with browser_snapshot, "
                        "or wait again."
                    ) from exc
            done = [
                f"{time:g} s passed" if time is not None else "",
                f"{quote(text)} is visible" if text else "",
                f"{quote(textGone)} is gone" if textGone else "",
            ]
            return "Waited: " + ", ".join(part for part in done if part)

        return await runner.act(wait, snapshot="diff")

    @server.tool()
    async def browser_resize(
        width: Annotated[int, Field(description="Viewport width in CSS pixels.", ge=100, le=8000)],
        height: Annotated[int, Field(description="Viewport height in CSS pixels.", ge=100, le=8000)],
    ) -> CallToolResult:
        """Resize the current tab's viewport (e.g. 390x844 to see the mobile layout)."""

        async def resize(tab: Tab) -> str:
            await tab.page.set_viewport_size({"width": width, "height": height})
            return f"Resized the viewport to {width}x{height}"

        return await runner.act(resize, snapshot="diff")

    @server.tool()
    async def browser_close() -> CallToolResult:
        """Close the browser and all its tabs. The next browser tool call starts it again; the profile keeps logins."""
        await session.close()
        return report.result(["Closed the browser; the next browser tool call starts a new one."])
