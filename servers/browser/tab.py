"""One browser tab: its page plus what happened in it (console, requests, dialogs, last snapshot)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import anyio
from mcp.server.mcpserver.exceptions import ToolError
from playwright.async_api import ConsoleMessage, Dialog, Download, FileChooser, Frame, Locator, Page, Request
from playwright.async_api import Error as PlaywrightError

from hermitcrab.servers._common.arguments import shorten

from .outputs import output_path
from .snapshot import Snapshot

logger = logging.getLogger(__name__)
T = TypeVar("T")

_LOG_LIMIT = 500
# Requests an action may be waiting on before the page counts as settled (images and fonts are not).
_SETTLE_TYPES = frozenset({"document", "xhr", "fetch"})
_GRACE_SECONDS = 0.1


@dataclass
class ConsoleEntry:
    level: str
    text: str
    where: str


@dataclass
class NetworkEntry:
    method: str
    url: str
    resource_type: str
    status: int | None = None
    failure: str | None = None


class Tab:
    """Wraps a Playwright `Page` and records the events the tools report on."""

    def __init__(self, page: Page, output_dir: Path) -> None:
        self.page = page
        self.output_dir = output_dir
        # One tool call at a time per tab; calls on other tabs go ahead meanwhile.
        self.lock = asyncio.Lock()
        self.console: deque[ConsoleEntry] = deque(maxlen=_LOG_LIMIT)
        self.requests: deque[NetworkEntry] = deque(maxlen=_LOG_LIMIT)
        self.dialog: Dialog | None = None
        self.chooser: FileChooser | None = None
        self.snapshot: Snapshot | None = None
        # Set by browser_snapshot(compact=true); later action results on the same page use it too.
        self.compact = False
        self.navigations = 0
        self.crashed = False
        self.downloads: list[str] = []
        self._new_errors: list[ConsoleEntry] = []
        self._entries: dict[Request, NetworkEntry] = {}
        self._inflight: set[Request] = set()
        self._quiet = asyncio.Event()
        self._quiet.set()
        self._modal = asyncio.Event()
        self._blocked: set[asyncio.Task[Any]] = set()
        page.on("console", self._on_console)
        page.on("pageerror", self._on_page_error)
        page.on("request", self._on_request)
        page.on("response", lambda response: self._finish(response.request, status=response.status))
        page.on("requestfinished", lambda request: self._finish(request))
        page.on("requestfailed", lambda request: self._finish(request, failure=request.failure or "failed"))
        page.on("dialog", self._on_dialog)
        page.on("filechooser", self._on_chooser)
        page.on("framenavigated", self._on_navigated)
        page.on("download", self._on_download)
        page.on("crash", lambda _: setattr(self, "crashed", True))

    @property
    def modal(self) -> str | None:
        """A sentence naming the dialog or file chooser that must be handled first, if any."""
        if self.dialog is not None:
            return f"a JavaScript {self.dialog.type} dialog is open: answer it with browser_handle_dialog"
        if self.chooser is not None:
            return "a file chooser is open: pick files with browser_file_upload (or call it without paths to cancel)"
        return None

    def locator(self, ref: str, element: str | None = None) -> Locator:
        """The element behind `ref`, provided the model saw that ref in this tab's latest snapshot."""
        if self.snapshot is None or ref not in self.snapshot.refs:
            what = f" ({shorten(element)})" if element else ""
            raise ToolError(
                f"Ref {ref}{what} is not in the latest snapshot of this tab (the page changed or the ref is wrong): "
                "take a new snapshot with browser_snapshot and use a ref from it."
            )
        return self.page.locator(f"aria-ref={ref}")

    async def run(self, action: Awaitable[T]) -> T | None:
        """Await `action` unless a dialog or file chooser opens first; then leave it running and return None.

        A JavaScript alert blocks the click that raised it until the alert is answered, so waiting
        for the click alone would hang the tool call.
        """
        self._modal.clear()
        task: asyncio.Task[T] = asyncio.ensure_future(action)
        modal = asyncio.ensure_future(self._modal.wait())
        try:
            await asyncio.wait({task, modal}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            task.cancel()  # The tool call itself was cancelled: do not leave the action running.
            raise
        finally:
            modal.cancel()
        if task.done():
            return task.result()
        self._blocked.add(task)
        task.add_done_callback(self._blocked_done)
        return None

    async def unblocked(self, timeout: float) -> None:
        """Wait (bounded) for actions that a just-answered dialog was holding up."""
        if self._blocked:
            await asyncio.wait(set(self._blocked), timeout=timeout)

    async def settle(self, navigations_before: int, timeout: float) -> None:
        """After an action: wait for a started navigation to load and for its fetches to finish (bounded)."""
        with anyio.move_on_after(timeout):
            # Clicks start fetches and popups a moment after they return; give those a chance to show.
            await asyncio.sleep(_GRACE_SECONDS)
            if self.navigations != navigations_before:
                # A slow page still gets a snapshot of what has loaded so far.
                with contextlib.suppress(PlaywrightError):
                    await self.page.wait_for_load_state("load", timeout=timeout * 1000)
            while self._inflight and self.dialog is None:
                self._quiet.clear()
                await self._quiet.wait()

    def new_console_errors(self) -> list[ConsoleEntry]:
        """Errors logged since the last call (reported after actions so failures are not silent)."""
        errors, self._new_errors = self._new_errors, []
        return errors

    def take_downloads(self) -> list[str]:
        saved, self.downloads = self.downloads, []
        return saved

    # --- event handlers --------------------------------------------------------------------

    def _on_console(self, message: ConsoleMessage) -> None:
        location = message.location
        where = f"{location.get('url', '')}:{location.get('lineNumber', 0)}" if location else ""
        self._log(ConsoleEntry(message.type, message.text, where))

    def _on_page_error(self, error: object) -> None:
        self._log(ConsoleEntry("error", f"Uncaught {error}", ""))

    def _log(self, entry: ConsoleEntry) -> None:
        self.console.append(entry)
        noise = entry.where.split("?")[0].endswith("/favicon.ico")  # every page without one logs a 404
        if entry.level == "error" and not noise and len(self._new_errors) < _LOG_LIMIT:
            self._new_errors.append(entry)

    def _on_request(self, request: Request) -> None:
        entry = NetworkEntry(request.method, request.url, request.resource_type)
        self.requests.append(entry)
        self._entries[request] = entry
        if request.resource_type in _SETTLE_TYPES:
            self._inflight.add(request)

    def _finish(self, request: Request, *, status: int | None = None, failure: str | None = None) -> None:
        entry = self._entries.get(request)
        if entry is not None:
            if status is not None:
                entry.status = status
                return  # The body may still be streaming: wait for requestfinished.
            entry.failure = failure
            del self._entries[request]
        self._inflight.discard(request)
        if not self._inflight:
            self._quiet.set()

    def _on_dialog(self, dialog: Dialog) -> None:
        self.dialog = dialog
        self._modal.set()
        self._quiet.set()

    def _on_chooser(self, chooser: FileChooser) -> None:
        self.chooser = chooser
        self._modal.set()

    def _on_navigated(self, frame: Frame) -> None:
        if frame == self.page.main_frame:
            self.navigations += 1
            self.snapshot = None  # Refs die with the document,
            self.compact = False  # and a compact view was chosen for that page only.
            self.chooser = None

    async def _on_download(self, download: Download) -> None:
        suffix = Path(download.suggested_filename).suffix
        target = output_path(self.output_dir, download.suggested_filename, "download", suffix)
        await download.save_as(target)
        self.downloads.append(str(target))

    def _blocked_done(self, task: asyncio.Task[Any]) -> None:
        self._blocked.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.info("an action held up by a dialog failed afterwards: %s", task.exception())
