"""Every page of the dashboard, as the owner's browser sees it: a heading naming it, nothing an accessibility check
calls serious, no script errors, and nothing fetched from anywhere but the dashboard itself."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from playwright.sync_api import ConsoleMessage, Request

from hermitcrab.dashboard.pages import PAGES
from tests.support.dashboard import chromium, dashboard_run, logged_in, serious_violations
from tests.support.fake_llm import FakeLLM, running_fake_llm


@pytest.fixture(scope="module")
def visited(tmp_path_factory: pytest.TempPathFactory):
    """Each page's heading, axe findings, console errors and foreign requests, from one run and one browser."""
    seen: dict[str, dict[str, object]] = {}
    home = tmp_path_factory.mktemp("pages") / "home"
    with running_fake_llm() as llm, dashboard_run(home, llm) as run, chromium() as browser:
        page = logged_in(browser, run)
        errors: list[str] = []
        foreign: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if _is_error(m) else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("request", lambda r: None if _own(r, run.url) else foreign.append(r.url))
        for module in PAGES:
            errors.clear()
            foreign.clear()
            page.goto(f"{run.url}{module.PATH}")
            page.wait_for_load_state("load")  # not networkidle: a live page keeps its event stream open
            seen[module.TITLE] = {
                "heading": page.get_by_role("heading", level=1).inner_text(),
                "axe": serious_violations(page),
                "errors": list(errors),
                "foreign": list(foreign),
            }
        page.goto(f"{run.url}{PAGES[0].PATH}")
        reached = []
        for _ in range(len(PAGES) + 4):
            page.keyboard.press("Tab")
            reached.append(page.evaluate("document.activeElement.textContent.trim()"))
        seen["keyboard"] = {"reached": reached}
    return seen


def _is_error(message: ConsoleMessage) -> bool:
    return message.type == "error"


def _own(request: Request, origin: str) -> bool:
    return request.url.startswith((origin + "/", "data:"))


@pytest.mark.parametrize("title", [module.TITLE for module in PAGES])
def test_a_page_is_headed_by_its_name_accessible_quiet_and_self_contained(visited, title: str):
    seen = visited[title]
    assert seen["heading"] == title
    assert seen["axe"] == []
    assert seen["errors"] == []
    assert seen["foreign"] == []


def test_the_keyboard_reaches_every_page_link(visited):
    reached = visited["keyboard"]["reached"]
    assert [title for title in (module.TITLE for module in PAGES) if title not in reached] == []


def test_every_page_is_behind_the_login(tmp_path: Path, llm: FakeLLM):
    with dashboard_run(tmp_path / "home", llm) as run:
        for module in PAGES:
            response = httpx.get(f"{run.url}{module.PATH}", headers={"Accept": "text/html"})
            assert response.status_code == 401 and "<h1>Log in</h1>" in response.text, module.PATH
