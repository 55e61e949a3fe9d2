"""Playwright lifecycle: start the browser on first use, track its tabs, restart it after a crash."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import tempfile
from collections import deque
from pathlib import Path

import anyio
from mcp.server.mcpserver.exceptions import ToolError
from playwright.async_api import (
    Browser,
    BrowserContext,
    Page,
    Playwright,
    ProxySettings,
    Route,
    ViewportSize,
    async_playwright,
)
from playwright.async_api import Error as PlaywrightError

from hermitcrab.util.outbound import Outbound

from .config import ALLOW_HINT, BrowserConfig
from .launcher import LAUNCH_ARGS, BrowserNotFound, find_executable
from .origins import OriginPolicy
from .proxy import OutboundProxy
from .tab import Tab

logger = logging.getLogger(__name__)
_CLOSE_SECONDS = 5.0
_REFUSALS_KEPT = 20


class Session:
    """Owns Playwright, one browser context and its tabs.

    `lock` guards starting the browser and changing the set of tabs, briefly; a tool call holds its tab's own
    lock while it runs, so a long call on one tab does not hold up calls on the others.
    """

    def __init__(self, config: BrowserConfig) -> None:
        self.config = config
        self.policy = OriginPolicy(config.allowed_origins, config.blocked_origins)
        self.outbound = Outbound(config.outbound_allow, how_to_allow=ALLOW_HINT)
        # Chromium's only way out: every connection it makes passes the origin policy and the outbound guard.
        self.proxy = OutboundProxy(self.outbound, self.policy, self._on_refusal)
        # What the proxy refused since the last call reported it (messages, newest last).
        self.refusals: deque[str] = deque(maxlen=_REFUSALS_KEPT)
        self.refusal_count = 0
        self.lock = asyncio.Lock()
        self.tabs: list[Tab] = []
        self.current: Tab | None = None
        # Set when the browser died under us; the next result says so once.
        self.crashed = False
        self.tab_crashed = False
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None
        self._context: BrowserContext | None = None
        self._disconnected = asyncio.Event()
        self._closing = False
        # With an isolated profile, Chromium's home: its crash reports and caches stay out of the real one.
        self._scratch: Path | None = None

    @property
    def running(self) -> bool:
        return self._context is not None and self._browser is not None and self._browser.is_connected()

    async def current_tab(self) -> Tab:
        """The tab tools act on, starting (or restarting) the browser and opening a tab when needed."""
        async with self.lock:
            return await self._current_tab()

    async def ensure(self) -> BrowserContext:
        async with self.lock:
            return await self._ensure()

    async def new_tab(self) -> Tab:
        async with self.lock:
            return await self._new_tab()

    def select(self, index: int) -> Tab:
        self.current = self.tab_at(index)
        return self.current

    async def close_tab(self, index: int) -> None:
        async with self.lock:
            tab = self.tab_at(index)
            await tab.page.close()
            self._forget_tab(tab)

    async def replace(self, tab: Tab) -> None:
        """Close a tab whose page stopped answering and put a blank tab in its place (current if it was)."""
        async with self.lock:
            if tab not in self.tabs:
                return  # closed or replaced already
            index = self.tabs.index(tab)
            previous = None if self.current is tab else self.current
            self._forget_tab(tab)
            try:
                with anyio.fail_after(_CLOSE_SECONDS):
                    await tab.page.close()
            except (TimeoutError, PlaywrightError) as exc:
                logger.warning("a tab that stopped answering did not close either (%r); restarting the browser", exc)
                await self._close()
            fresh = await self._new_tab()
            self.tabs.remove(fresh)
            self.tabs.insert(min(index, len(self.tabs)), fresh)
            if previous in self.tabs:
                self.current = previous

    def tab_at(self, index: int) -> Tab:
        if not 0 <= index < len(self.tabs):
            have = f"it must be 0 to {len(self.tabs) - 1}" if self.tabs else "no tab is open"
            raise ToolError(f"There is no tab {index} (`index`: {have}); list the tabs with browser_tabs action=list.")
        return self.tabs[index]

    async def died(self, timeout: float = 2.0) -> bool:
        """After a 'target closed' error: did the whole browser go away (rather than one page)?"""
        if self._browser is None:
            return True
        try:
            await asyncio.wait_for(self._disconnected.wait(), timeout)
        except TimeoutError:
            return not self._browser.is_connected()
        return True

    async def close(self, *, stop: bool = False) -> None:
        """Close the browser (the next tool call starts a new one); `stop` also ends Playwright and the proxy."""
        async with self.lock:
            await self._close()
        if stop:
            await self.proxy.close()
        if stop and self._playwright is not None:
            await self._playwright.stop()
            self._playwright = None

    def take_refusals(self) -> list[str]:
        """The proxy's refusals since the last call, once each (distinct, in order)."""
        taken = list(dict.fromkeys(self.refusals))
        self.refusals.clear()
        return taken

    # --- internals -------------------------------------------------------------------------

    async def _current_tab(self) -> Tab:
        await self._ensure()
        if self.current is not None and self.current.crashed:
            # A crashed renderer never recovers: swap the tab for a fresh one and say so.
            logger.warning("the current tab crashed; replacing it")
            self.tab_crashed = True
            crashed = self.current
            self._forget_tab(crashed)
            with contextlib.suppress(PlaywrightError):
                await crashed.page.close()
            return await self._new_tab()
        if self.current is None:
            return await self._new_tab()
        return self.current

    async def _ensure(self) -> BrowserContext:
        if self._context is not None and self.running:
            return self._context
        if self._context is not None:
            logger.warning("the browser process is gone; starting a new one")
            self.crashed = True
            self._forget_browser()
        return await self._launch()

    async def _new_tab(self) -> Tab:
        context = await self._ensure()
        tab = self._wrap(await context.new_page())
        self.current = tab
        return tab

    async def _close(self) -> None:
        self._closing = True
        try:
            if self._context is not None:
                await self._context.close()
            if self._browser is not None and self._browser.is_connected():
                await self._browser.close()
        except PlaywrightError as exc:
            logger.info("closing the browser: %s", exc)
        finally:
            self._forget_browser()
            self._closing = False
            if self._scratch is not None:
                shutil.rmtree(self._scratch, ignore_errors=True)
                self._scratch = None

    async def _launch(self) -> BrowserContext:
        if self._playwright is None:
            self._playwright = await async_playwright().start()
        chromium = self._playwright.chromium
        config = self.config
        try:
            executable = find_executable(config.executable, chromium.executable_path)
        except BrowserNotFound as exc:
            raise ToolError(str(exc)) from exc
        path = str(executable) if executable else None
        width, height = config.viewport
        viewport = ViewportSize(width=width, height=height)
        proxy = ProxySettings(server=await self.proxy.start())
        try:
            if config.profile_dir is not None:
                config.profile_dir.mkdir(parents=True, exist_ok=True)
                context = await chromium.launch_persistent_context(
                    config.profile_dir,
                    executable_path=path,
                    headless=config.headless,
                    args=list(LAUNCH_ARGS),
                    viewport=viewport,
                    accept_downloads=True,
                    proxy=proxy,
                )
                browser = context.browser
            else:
                browser = await chromium.launch(
                    executable_path=path,
                    headless=config.headless,
                    args=list(LAUNCH_ARGS),
                    env=self._isolated_env(),
                    proxy=proxy,
                )
                context = await browser.new_context(viewport=viewport, accept_downloads=True)
        except PlaywrightError as exc:
            first = str(exc).strip().splitlines()[0]
            hint = ""
            if config.profile_dir:
                hint = f" If another browser uses the profile {config.profile_dir}, close it or start with --isolated."
            raise ToolError(f"Chromium failed to start ({first}).{hint}") from exc
        assert browser is not None, "a persistent Chromium context always has a browser"
        context.set_default_timeout(min(config.action_timeout_ms, config.page_timeout_ms))
        context.set_default_navigation_timeout(min(config.navigation_timeout_ms, config.page_timeout_ms))
        if self.policy.active:
            await context.route("**/*", self._route)
        self._disconnected = asyncio.Event()
        browser.on("disconnected", lambda _: self._on_disconnected())
        context.on("page", self._on_page)
        self._browser, self._context = browser, context
        for page in context.pages:
            self._wrap(page)
        return context

    def _isolated_env(self) -> dict[str, str | float | bool]:
        """Chromium's environment with a throw-away home: it writes crash reports and caches there, not in ~."""
        if self._scratch is None:
            self._scratch = Path(tempfile.mkdtemp(prefix="hermitcrab-browser-"))
        home = self._scratch
        return {
            **os.environ,
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
        }

    def _wrap(self, page: Page) -> Tab:
        """The Tab for `page`, created on first sight (new tabs, popups, the persistent context's first page)."""
        for tab in self.tabs:
            if tab.page is page:
                return tab
        tab = Tab(page, self.config.output_dir)
        self.tabs.append(tab)
        page.on("close", lambda _: self._forget_tab(tab))
        if self.current is None:
            self.current = tab
        return tab

    def _on_page(self, page: Page) -> None:
        self._wrap(page)

    def _forget_tab(self, tab: Tab) -> None:
        if tab in self.tabs:
            self.tabs.remove(tab)
        if self.current is tab:
            self.current = self.tabs[-1] if self.tabs else None

    def _forget_browser(self) -> None:
        self._browser = self._context = None
        self.tabs.clear()
        self.current = None

    def _on_disconnected(self) -> None:
        self._disconnected.set()
        if not self._closing:
            self.crashed = True

    def _on_refusal(self, message: str) -> None:
        self.refusals.append(message)
        self.refusal_count += 1

    async def _route(self, route: Route) -> None:
        """The origin policy for the requests Playwright routes (a redirect's later hops are not: the proxy sees
        those); a refused one fails at once, without reaching the proxy."""
        if self.policy.allows(route.request.url):
            await route.fallback()
        else:
            await route.abort("blockedbyclient")
