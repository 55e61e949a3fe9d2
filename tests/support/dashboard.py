"""`hermitcrab run` with its dashboard on a free port, and a real Chromium logged in to it through the link
`hermitcrab dashboard` prints: for the dashboard's e2e tests and the script that takes its screenshots alike."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, Page, sync_playwright

from hermitcrab.dashboard.pages import PAGES
from hermitcrab.servers.browser.launcher import find_system_browser
from tests.support.cli import CLI, cli_env, wait_for
from tests.support.fake_llm import FakeLLM

AXE = Path(__file__).parents[2] / ".cache" / "npm" / "node_modules" / "axe-core" / "axe.min.js"
"""axe-core, which scripts/test installs from npm."""

QUIET = "[heartbeat]\nevery_minutes = 0\n"
"""The config.toml of a dashboard run unless a test gives its own: no heartbeat turns in the middle of a test."""


def own_server(name: str, *args: str) -> dict[str, Any]:
    """The `mcpServers` entry of one of our servers, run from this checkout with `args`."""
    return {"command": sys.executable, "args": ["-m", f"hermitcrab.servers.{name}", *args]}


@dataclass
class DashboardRun:
    """A started `hermitcrab run`: its home, environment and stderr log, and where its dashboard listens."""

    process: subprocess.Popen[bytes]
    home: Path
    env: dict[str, str]
    log: Path
    url: str = field(default="")

    @property
    def stderr(self) -> str:
        return self.log.read_text()

    def login_link(self) -> str:
        """A fresh one-time link from the real `hermitcrab dashboard`."""
        done = subprocess.run([*CLI, "dashboard"], env=self.env, capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=20)

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(timeout=10)


@contextmanager
def dashboard_run(
    home: Path,
    llm: FakeLLM,
    *,
    servers: dict[str, dict[str, Any]] | None = None,
    config: str = QUIET,
    env: dict[str, str] | None = None,
    timeout_s: float = 40,
) -> Iterator[DashboardRun]:
    """`hermitcrab run` at `home` with `servers` as its mcpServers (none by default) and `config` as config.toml,
    until the block ends (then killed); entered once its dashboard listens."""
    home.mkdir(parents=True, exist_ok=True)
    if not (home / "config.toml").exists():
        (home / "config.toml").write_text(config)
    desktop = home / "mcp.json"
    desktop.write_text(json.dumps({"mcpServers": servers or {}}))
    log = home / "run.log"
    run_env = cli_env(home, llm, env)
    with log.open("w") as stderr:
        process = subprocess.Popen([*CLI, "run", "--mcp-config", str(desktop)], stderr=stderr, env=run_env)
    run = DashboardRun(process, home, run_env, log)
    try:
        started = lambda: "hermitcrab is running" in log.read_text() or process.poll() is not None  # noqa: E731
        wait_for(started, "the run did not start", timeout_s)
        found = re.search(r"dashboard: (http://\S+)", log.read_text())
        assert found is not None, f"the dashboard did not start:\n{log.read_text()}"
        run.url = found.group(1)
        yield run
    finally:
        if process.poll() is None:
            run.kill()


@contextmanager
def chromium() -> Iterator[Browser]:
    """A headless Chromium (the system's, as the browser server uses) for the block."""
    with sync_playwright() as playwright:
        executable = find_system_browser()
        browser = playwright.chromium.launch(headless=True, executable_path=str(executable) if executable else None)
        try:
            yield browser
        finally:
            browser.close()


def logged_in(browser: Browser, run: DashboardRun) -> Page:
    """A new browser context logged in to `run`'s dashboard with a fresh link, on the page a login lands on."""
    page = browser.new_context().new_page()
    page.set_default_timeout(15_000)
    page.goto(run.login_link())
    page.wait_for_url(f"{run.url}{PAGES[0].PATH}")  # the login's own page moves on to the first page
    return page


def serious_violations(page: Page) -> list[str]:
    """axe-core's serious and critical accessibility violations on the page as it is now, one line each."""
    page.evaluate(AXE.read_text())
    results: dict[str, Any] = page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    return [
        f"{v['id']} ({v['impact']}): {v['help']} — {[n['target'] for n in v['nodes']][:3]}"
        for v in results["violations"]
        if v["impact"] in ("serious", "critical")
    ]
