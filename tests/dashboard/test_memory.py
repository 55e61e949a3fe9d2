"""The Memory page on a real run with the real memory server: the file tree, a file edited in the page and found by
the server's own search at its line, an edit of a file the agent wrote to meanwhile kept and not saved over it, a long
file shown a window at a time, and paths that lead out of the workspace's memory refused."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser

from tests.support.dashboard import DashboardRun, chromium, dashboard_run, logged_in, own_server, serious_violations
from tests.support.fake_llm import running_fake_llm

NOTES = "# Memory\n\n- The owner likes green tea.\n- Standup is at 09:30 on weekdays.\n"
NEW_LINE = "- The spare key is under the blue flowerpot."


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DashboardRun]:
    """One run for the module; each test works on files of its own."""
    root = tmp_path_factory.mktemp("memory-page")
    workspace = root / "home" / "workspace"
    (workspace / "memory" / "others").mkdir(parents=True)
    (workspace / "MEMORY.md").write_text(NOTES)
    (workspace / "memory" / "2026-12-01.md").write_text("# 2026-12-01\n\n## 10:00\nTalked about the garden.\n")
    (workspace / "memory" / "others" / "ana.md").write_text("Ana asked about the <b>party</b>.\n")
    index = ["--state", str(root / "memory-index"), "--embedder", "none"]
    memory = own_server("memory", "--workspace", str(workspace), *index)
    with running_fake_llm() as llm, dashboard_run(root / "home", llm, servers={"memory": memory}) as started:
        yield started


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


def test_a_line_added_in_the_page_is_found_by_search_with_its_line_number(run: DashboardRun, browser: Browser):
    page = logged_in(browser, run)
    page.get_by_role("navigation", name="Pages").get_by_role("link", name="Memory").click()
    assert page.get_by_role("heading", level=1).inner_text() == "Memory"
    assert page.get_by_role("link", name="2026-12-01.md").is_visible()
    assert page.get_by_role("link", name="ana.md").is_visible()
    assert serious_violations(page) == []

    page.get_by_role("link", name="MEMORY.md").click()
    page.get_by_role("link", name="Edit MEMORY.md").click()
    text = page.get_by_label("Text of MEMORY.md")
    assert text.input_value() == NOTES
    text.fill(NOTES + NEW_LINE + "\n")
    page.get_by_role("button", name="Save").click()
    assert "Saved MEMORY.md" in page.get_by_role("status").inner_text()
    assert page.get_by_role("row", name=f"5 {NEW_LINE}").is_visible()
    assert (run.home / "workspace" / "MEMORY.md").read_text() == NOTES + NEW_LINE + "\n"  # LF, as it was

    page.get_by_role("link", name="All memory files").click()
    page.get_by_label("Search memory").fill("flowerpot")
    page.get_by_role("button", name="Search").click()
    found = page.get_by_role("link", name=re.compile(r"^MEMORY\.md, lines? \d+( to \d+)?$"))
    first, last = (numbers := [int(n) for n in re.findall(r"\d+", found.inner_text())])[0], numbers[-1]
    assert first <= 5 <= last
    assert NEW_LINE in page.get_by_role("listitem").filter(has=found).inner_text()
    assert serious_violations(page) == []

    found.click()
    assert page.get_by_role("row", name=f"5 {NEW_LINE}").locator("mark").inner_text() == NEW_LINE
    assert serious_violations(page) == []


def test_a_file_the_agent_wrote_to_while_it_was_open_is_not_overwritten_and_the_edit_is_kept(
    run: DashboardRun, browser: Browser
):
    projects = run.home / "workspace" / "memory" / "projects.md"
    projects.write_text(NOTES)
    page = logged_in(browser, run)
    page.goto(f"{run.url}/memory/edit?path=memory/projects.md")
    page.get_by_label("Text of memory/projects.md").fill(NOTES + "- My edit.\n")
    projects.write_text(NOTES + "- The agent's note.\n")
    page.get_by_role("button", name="Save").click()
    assert "changed since you opened it" in page.get_by_role("alert").inner_text()
    assert page.get_by_label("Text of memory/projects.md").input_value() == NOTES + "- My edit.\n"
    assert "The agent's note." in page.get_by_role("main").inner_text()
    assert serious_violations(page) == []
    page.get_by_role("button", name="Save").click()  # saved now, knowingly: the page opened the new version
    assert "Saved memory/projects.md" in page.get_by_role("status").inner_text()
    assert projects.read_text() == NOTES + "- My edit.\n"


def test_paths_out_of_the_workspace_memory_are_refused(run: DashboardRun, browser: Browser, tmp_path: Path):
    secret = tmp_path / "secret.md"
    secret.write_text("the bank PIN\n")
    (run.home / "workspace" / "memory" / "leak.md").symlink_to(secret)
    (run.home / "workspace" / "notes.txt").write_text("not memory\n")
    page = logged_in(browser, run)
    for path, reason in [
        ("../secret.md", "outside the workspace's memory"),
        ("memory/../../secret.md", "outside the workspace's memory"),
        (str(secret), "outside the workspace's memory"),
        ("memory/leak.md", "symbolic link to a file outside"),
        ("notes.txt", "Only Markdown memory files"),
    ]:
        response = page.goto(f"{run.url}/memory/file?path={path}")
        assert response is not None and response.status == 400, path
        assert reason in page.get_by_role("alert").inner_text(), path
        assert "bank PIN" not in page.content()
    csrf = page.locator('meta[name="csrf-token"]').get_attribute("content")
    refused = page.request.post(
        f"{run.url}/memory/edit", form={"csrf": csrf or "", "path": "memory/leak.md", "text": "gone", "opened": ""}
    )
    assert refused.status == 400 and "symbolic link" in refused.text()
    assert serious_violations(page) == []
    assert secret.read_text() == "the bank PIN\n"


def test_a_long_file_is_shown_a_window_at_a_time_around_the_line_asked_for(run: DashboardRun):
    lines = [f"- note {number}" for number in range(1, 2501)]
    (run.home / "workspace" / "memory" / "long.md").write_text("\n".join(lines) + "\n")
    with httpx.Client(base_url=run.url) as client:
        client.get(run.login_link(), follow_redirects=True)
        around = client.get("/memory/file", params={"path": "memory/long.md", "line": 2400})
        earlier = client.get("/memory/file", params={"path": "memory/long.md", "from": 0})
    assert "Showing lines 1501 to 2500 of 2500." in around.text and "<mark>- note 2400</mark>" in around.text
    assert "from=501" in around.text and "Later lines" not in around.text
    assert "Showing lines 1 to 1000 of 2500." in earlier.text and "<mark>" not in earlier.text


def test_an_edit_too_long_for_the_page_gets_its_sentence_and_keeps_the_text(run: DashboardRun):
    (run.home / "workspace" / "memory" / "big.md").write_text(NOTES)
    text = "é" * 600_000  # past the page's 300,000 characters, and past 1 MB when sent as a form
    with httpx.Client(base_url=run.url) as client:
        client.get(run.login_link())
        editing = client.get("/memory/edit", params={"path": "memory/big.md"}).text
        assert 'maxlength="300000"' in editing
        csrf = editing.partition('name="csrf-token" content="')[2].partition('"')[0]
        opened = editing.partition('name="opened" value="')[2].partition('"')[0]
        form = {"csrf": csrf, "path": "memory/big.md", "text": text, "opened": opened}
        refused = client.post("/memory/edit", data=form)
    assert refused.status_code == 400 and "larger than 300 KB: nothing was saved" in refused.text
    assert text in refused.text
    assert (run.home / "workspace" / "memory" / "big.md").read_text() == NOTES
