"""Run one tool call on the session: serialised, crash-aware, and followed by the page's new state."""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Literal

import anyio
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, ContentBlock
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeoutError

from hermitcrab.servers._common.arguments import shorten

from . import report
from .session import Session
from .snapshot import Snapshot, cap, diff, render
from .tab import Tab

logger = logging.getLogger(__name__)


@dataclass
class Outcome:
    """What an action reports: our own note, lines taken from the page (fenced as untrusted), extra blocks."""

    note: str
    page: list[str] = field(default_factory=list[str])
    blocks: list[ContentBlock] = field(default_factory=list[ContentBlock])


Action = Callable[[Tab], Awaitable[str | Outcome]]
SnapshotMode = Literal["full", "diff", "none"]
_MAX_CONSOLE_IN_RESULT = 5
_SETTLE_SECONDS = 3.0
_SHOWN_URL_CHARS = 2_000
_SHOWN_ERROR_CHARS = 250  # of Playwright's first line, which often repeats the URL
# How long a page may take to answer a trivial question before it counts as stuck.
_PROBE_SECONDS = 1.0
_CLOSED_MARKERS = (
    "has been closed",
    "Target closed",
    "Browser closed",
    "Connection closed",
    "browser has disconnected",
)


class Runner:
    """The one path every tool takes to the browser."""

    def __init__(self, session: Session) -> None:
        self.session = session

    async def act(
        self,
        action: Action,
        *,
        snapshot: SnapshotMode = "diff",
        modal_ok: bool = False,
        retry_after_crash: bool = False,
    ) -> CallToolResult:
        """Run `action` on the current tab, then report the page (and a snapshot or diff of it).

        The call ends within the configured deadline; a page that stops answering is closed and replaced.
        `retry_after_crash` is for idempotent actions (navigate): if the browser died, start a new
        one and run the action again instead of failing.
        """
        try:
            async with self._claim() as tab:
                return await self._within_deadline(tab, action, snapshot, modal_ok)
        except PlaywrightError as exc:
            if not is_closed(exc) or not await self.session.died():
                raise translate(exc) from exc
            if not retry_after_crash:
                raise ToolError(
                    "The browser stopped unexpectedly; it restarts on the next call: navigate again "
                    "(tabs and refs from before are gone)."
                ) from exc
        logger.warning("the browser died during a call; retrying it on a new browser")
        try:
            async with self._claim() as tab:
                return await self._within_deadline(tab, action, snapshot, modal_ok)
        except PlaywrightError as exc:
            raise translate(exc) from exc

    @asynccontextmanager
    async def _claim(self) -> AsyncGenerator[Tab]:
        """The current tab, once no other call is using it (it may have been closed while we waited)."""
        while True:
            tab = await self.session.current_tab()
            await tab.lock.acquire()
            if tab in self.session.tabs:
                break
            tab.lock.release()
        try:
            yield tab
        finally:
            tab.lock.release()

    async def _within_deadline(self, tab: Tab, action: Action, mode: SnapshotMode, modal_ok: bool) -> CallToolResult:
        seconds = self.session.config.call_timeout_s
        try:
            with anyio.move_on_after(seconds):
                return await self._act(tab, action, mode, modal_ok)
        except PlaywrightTimeoutError:
            if await answers(tab):
                raise
            return await self._replace(tab, "did not answer in time")
        if await answers(tab):
            raise ToolError(
                f"The call did not finish within {seconds:g} s (the server's --call-timeout), though the page "
                "still answers: try again, or in smaller steps."
            )
        return await self._replace(tab, f"did not answer within {seconds:g} s")

    async def _replace(self, tab: Tab, what: str) -> CallToolResult:
        """Close a tab whose page stopped answering and say so; the next call gets a working blank tab."""
        url = tab.page.url
        logger.warning("a page stopped answering; closing and replacing its tab")
        await self.session.replace(tab)
        note = (
            f"The page {what} (a script on it may be stuck in a loop), so its tab was closed and replaced by a "
            "blank tab. Its refs are gone; open another page with browser_navigate, or this one again only if "
            "you expect it to behave now."
        )
        result = report.result([note], [f"- URL of the closed tab: {shorten(url, _SHOWN_URL_CHARS)}"])
        result.is_error = True
        return result

    async def _act(self, tab: Tab, action: Action, mode: SnapshotMode, modal_ok: bool) -> CallToolResult:
        if tab.modal and not modal_ok:
            raise ToolError(f"Not possible right now: {tab.modal}.")
        before = tab.navigations
        outcome = await tab.run(action(tab))
        if outcome is None:
            outcome = Outcome("The action opened a dialog and waits for it to be answered.")
        elif isinstance(outcome, str):
            outcome = Outcome(outcome)
        notes = [outcome.note]
        shown = tab if tab in self.session.tabs else self.session.current  # the page may have closed itself
        if shown is None:
            notes.append("No tab is open now; browser_navigate opens one.")
            return report.result(notes)
        if shown is tab and tab.dialog is None:
            await tab.settle(before, min(_SETTLE_SECONDS, self.session.config.call_timeout_s / 6))
        page = await self.describe(shown, notes, mode)
        page[2:2] = outcome.page  # after URL and title, before tabs and the snapshot
        return report.result(notes, page, outcome.blocks)

    async def describe(self, tab: Tab, notes: list[str], mode: SnapshotMode) -> list[str]:
        """Page lines for the result (URL, title, tabs, dialog, new errors, snapshot); adds notes in place."""
        session = self.session
        if session.crashed:
            notes.insert(0, "Note: the browser had stopped unexpectedly and was restarted; earlier tabs are gone.")
            session.crashed = False
        if session.tab_crashed:
            notes.insert(0, "Note: the tab's page had crashed, so it was replaced by a new tab.")
            session.tab_crashed = False
        # A page under an open alert cannot answer for its title.
        title = "(unavailable while a dialog is open)" if tab.dialog else await _title(tab)
        lines = [f"- URL: {shorten(tab.page.url, _SHOWN_URL_CHARS)}", f"- Title: {shorten(title, _SHOWN_URL_CHARS)}"]
        if len(session.tabs) > 1:
            lines.append("- Open tabs:")
            lines.extend(await tab_lines(session))
        if tab.dialog is not None:
            notes.append(f"Note: {tab.modal}.")
            lines.append(f"- {tab.dialog.type} dialog message: {tab.dialog.message!r}")
        elif tab.chooser is not None:
            notes.append(f"Note: {tab.modal}.")
        lines.extend(f"- Downloaded a file to {path}" for path in tab.take_downloads())  # the page names it
        if tab.page.url.startswith("chrome-error://"):
            notes.append("The page failed to load (network error or an origin blocked by the server's policy).")
        refused = session.take_refusals()
        if refused:
            shown = "; ".join(refused[:3])
            notes.append(f"Note: the browser refused {len(refused)} request(s) the page made: {shown}.")
        errors = tab.new_console_errors()
        if errors:
            lines.append(f"- New console errors ({len(errors)}; see browser_console_messages):")
            lines.extend(f"  - {entry.text[:300]}" for entry in errors[:_MAX_CONSOLE_IN_RESULT])
        if mode != "none" and tab.dialog is None:
            lines.extend(await self._snapshot_lines(tab, mode))
        return lines

    async def snapshot(self, tab: Tab) -> Snapshot:
        """Capture and render the tab's page; the refs it shows become the ones actions accept."""
        try:
            raw = await tab.page.aria_snapshot(mode="ai")
        except PlaywrightError:
            # The document changed mid-capture (a navigation); capture the new one once it exists.
            await tab.page.wait_for_load_state("domcontentloaded")
            raw = await tab.page.aria_snapshot(mode="ai")
        return render(raw, compact=tab.compact, base_url=tab.page.url)

    async def _snapshot_lines(self, tab: Tab, mode: SnapshotMode) -> list[str]:
        previous = tab.snapshot
        current = await self.snapshot(tab)
        tab.snapshot = current
        changes = diff(previous.text, current.text) if mode == "diff" and previous is not None else None
        if changes == "":
            return ["- Snapshot: unchanged since the last one"]
        if changes is not None:
            return ["- Snapshot changes since the last one (unified diff):", "```diff", changes, "```"]
        label = "- Snapshot (compact: only actionable elements, headings and alerts):" if tab.compact else "- Snapshot:"
        return [label, "```yaml", cap(current.text, self.session.config.snapshot_max_chars), "```"]


async def tab_lines(session: Session) -> list[str]:
    """One line per tab; a tab whose page does not answer (busy with another call, or stuck) is marked so."""
    tabs = list(session.tabs)
    titles = await asyncio.gather(*(_title(tab, _PROBE_SECONDS) for tab in tabs))
    lines: list[str] = []
    for index, (tab, title) in enumerate(zip(tabs, titles, strict=True)):
        marker = " (current)" if tab is session.current else ""
        lines.append(f"  - {index}:{marker} [{shorten(title)}]({shorten(tab.page.url)})")
    return lines


async def answers(tab: Tab) -> bool:
    """Does the page still run our scripts (rather than spinning in one of its own)?"""
    if tab.dialog is not None or tab.page.is_closed():
        return True  # an open alert blocks scripts without the page being stuck
    with anyio.move_on_after(_PROBE_SECONDS):
        try:
            await tab.page.evaluate("1")
        except PlaywrightError:
            return True  # it answered, if only to say it is navigating or gone
        return True
    return False


def translate(exc: PlaywrightError) -> ToolError:
    """Turn a Playwright failure into one sentence the model can act on."""
    message = exc.message.strip()
    first = shorten(message.splitlines()[0], _SHOWN_ERROR_CHARS) if message else type(exc).__name__
    if "Target crashed" in message:
        hint = "The page crashed: the next browser call replaces this tab, so navigate again."
    elif "Invalid frame in aria-ref" in message or ("aria-ref" in message and "resolved to" not in message):
        hint = "The element is no longer on the page: take a new snapshot with browser_snapshot."
    elif isinstance(exc, PlaywrightTimeoutError) and "aria-ref" in message:
        hint = "The element exists but cannot be used (hidden, disabled or covered): take a new snapshot and check it."
    elif isinstance(exc, PlaywrightTimeoutError):
        hint = "It took too long: check the page with browser_snapshot and try again."
    elif "net::" in first:
        hint = "Check the URL and that the site is reachable."
    else:
        hint = "Take a new snapshot and try another way."
    return ToolError(f"{first} {hint}")


def is_closed(exc: PlaywrightError) -> bool:
    return type(exc).__name__ == "TargetClosedError" or any(marker in exc.message for marker in _CLOSED_MARKERS)


async def _title(tab: Tab, timeout: float | None = None) -> str:
    with anyio.move_on_after(timeout if timeout is not None else math.inf):
        try:
            return await tab.page.title()
        except PlaywrightError:
            return "(unavailable while the page loads)"
    return "(no answer from the page)"
