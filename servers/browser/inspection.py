"""Tools that read the page without acting on it: snapshot, screenshot, PDF, console and network logs."""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable
from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, ImageContent, ToolAnnotations
from playwright.async_api import Error as PlaywrightError
from pydantic import Field

from hermitcrab.servers._common.arguments import shorten
from hermitcrab.util.retry import Backoff, retrying

from .limits import MAX_ELEMENT_CHARS, MAX_FILENAME_CHARS, MAX_REF_CHARS
from .outputs import output_path
from .runner import Outcome, Runner
from .tab import Tab

_READ_ONLY = ToolAnnotations(read_only_hint=True)
_STATIC_TYPES = frozenset({"image", "stylesheet", "font", "media", "script", "manifest", "texttrack"})
_MAX_LOG_LINES = 200
_CAPTURE_BACKOFF = Backoff(attempts=3, first_s=0.1)


async def _capture(take: Callable[[], Awaitable[bytes]]) -> bytes:
    """Chromium now and then refuses one capture ("Unable to capture screenshot") and takes the same picture a moment
    later, so that refusal is retried instead of reported."""
    return await retrying("a capture", take, _refused_capture, _CAPTURE_BACKOFF)


def _refused_capture(error: Exception) -> bool:
    return isinstance(error, PlaywrightError) and "Unable to capture screenshot" in error.message


def register(server: MCPServer, runner: Runner) -> None:
    config = runner.session.config

    @server.tool(annotations=_READ_ONLY)
    async def browser_snapshot(
        compact: Annotated[
            bool,
            Field(description="Only actionable elements, headings and alerts: much smaller for big pages."),
        ] = False,
    ) -> CallToolResult:
        """Return the current page as an accessibility snapshot: roles, names and a ref on every element you can act on.

        Prefer this to a screenshot for deciding what to click or type. The mode you pick here is kept
        for the snapshots later actions return, until the page changes.
        """

        async def look(tab: Tab) -> str:
            tab.compact = compact
            return "Snapshot of the current tab"

        return await runner.act(look, snapshot="full", modal_ok=True)

    @server.tool(annotations=_READ_ONLY)
    async def browser_take_screenshot(
        type: Annotated[Literal["png", "jpeg"], Field(description="Image format.")] = "png",
        fullPage: Annotated[bool, Field(description="The whole scrollable page, not just the viewport.")] = False,
        ref: Annotated[
            str | None,
            Field(description="Ref of one element to capture instead of the page.", max_length=MAX_REF_CHARS),
        ] = None,
        element: Annotated[
            str | None,
            Field(description="Human-readable description of that element.", max_length=MAX_ELEMENT_CHARS),
        ] = None,
        filename: Annotated[
            str | None,
            Field(
                description="Also save the image under this name in the server's output folder.",
                max_length=MAX_FILENAME_CHARS,
            ),
        ] = None,
    ) -> CallToolResult:
        """Take a screenshot of the page or of one element.

        A screenshot has no refs: to decide what to click or type, use browser_snapshot.
        """
        if ref is not None and fullPage:
            raise ToolError("Give either ref (one element) or fullPage, not both.")

        async def shoot(tab: Tab) -> Outcome:
            quality = 80 if type == "jpeg" else None
            if ref is not None:
                locator = tab.locator(ref, element)
                data = await _capture(lambda: locator.screenshot(type=type, quality=quality))
            else:
                data = await _capture(lambda: tab.page.screenshot(type=type, quality=quality, full_page=fullPage))
            note = f"Screenshot of {shorten(element or ref or ('the full page' if fullPage else 'the viewport'))}"
            if filename is not None:
                path = output_path(config.output_dir, filename, "screenshot", f".{'jpg' if type == 'jpeg' else 'png'}")
                path.write_bytes(data)
                note += f", saved to {path}"
            image = ImageContent(type="image", data=base64.b64encode(data).decode(), mime_type=f"image/{type}")
            return Outcome(note, blocks=[image])

        return await runner.act(shoot, snapshot="none")

    @server.tool(annotations=_READ_ONLY)
    async def browser_console_messages(
        onlyErrors: Annotated[bool, Field(description="Only errors and uncaught exceptions.")] = False,
    ) -> CallToolResult:
        """List the console messages the current tab has logged (newest last)."""

        async def read(tab: Tab) -> Outcome:
            entries = [entry for entry in tab.console if not onlyErrors or entry.level == "error"]
            lines = [
                f"- [{entry.level}] {entry.text}" + (f" ({entry.where})" if entry.where else "")
                for entry in entries[-_MAX_LOG_LINES:]
            ]
            return Outcome(f"{len(entries)} console message(s)", page=lines)

        return await runner.act(read, snapshot="none", modal_ok=True)

    @server.tool(annotations=_READ_ONLY)
    async def browser_network_requests(
        includeStatic: Annotated[bool, Field(description="Also list images, fonts, stylesheets and scripts.")] = False,
    ) -> CallToolResult:
        """List the network requests the current tab has made since it opened (newest last)."""

        async def read(tab: Tab) -> Outcome:
            entries = [entry for entry in tab.requests if includeStatic or entry.resource_type not in _STATIC_TYPES]
            lines: list[str] = []
            for entry in entries[-_MAX_LOG_LINES:]:
                outcome = entry.failure or (str(entry.status) if entry.status is not None else "pending")
                lines.append(f"- [{entry.method}] {entry.url} => {outcome} ({entry.resource_type})")
            return Outcome(f"{len(entries)} request(s)", page=lines)

        return await runner.act(read, snapshot="none", modal_ok=True)

    @server.tool()
    async def browser_pdf_save(
        filename: Annotated[
            str | None,
            Field(description="File name for the PDF (saved in the output folder).", max_length=MAX_FILENAME_CHARS),
        ] = None,
    ) -> CallToolResult:
        """Save the current page as a PDF file and return its path."""
        if not config.headless:
            raise ToolError("Saving PDFs needs headless Chromium; restart the server with --headless.")

        async def save(tab: Tab) -> str:
            path = output_path(config.output_dir, filename, "page", ".pdf")
            await tab.page.pdf(path=path)
            return f"Saved the page as a PDF to {path}"

        return await runner.act(save, snapshot="none")
