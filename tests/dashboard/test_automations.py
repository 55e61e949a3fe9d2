"""The Automations page on a real run with the real cron server: a job the agent made in a turn shown with its
schedule in words and disabled with its button (the cron server then says so itself); a job run by hand whose
delivery no channel can take set aside as a dead letter, shown and dropped; a job deleted after a confirmation; a
dead letter retried from the page run again by the host and answered once; and, with no servers at all, Memory and
Automations saying so while showing what is on disk."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client, StdioServerParameters
from playwright.sync_api import Locator, Page

from hermitcrab.host.inbox.deadletters import FOLDER, DeadLetters
from tests.support.cli import CLI, wait_for
from tests.support.dashboard import QUIET, chromium, dashboard_run, logged_in, own_server, serious_violations
from tests.support.fake_llm import FakeLLM, free_port, openai_text, openai_tool_calls
from tests.support.tools import call

CONFIG = QUIET + '[agent]\ntimezone = "Europe/Berlin"\n'
STRETCH = {
    "name": "stretch",
    "schedule": {"kind": "cron", "expr": "0 9 * * 1-5", "tz": "Europe/Berlin"},
    "payload": {"kind": "agent_turn", "message": "Remind the owner to stand up and stretch."},
}
DIGEST = "Mail: two invoices and an invitation."
REPORT = {
    "name": "nightly report",
    "schedule": {"kind": "every", "every_seconds": 3600},
    "payload": {"kind": "agent_turn", "message": "Summarise the day's mail."},
    "delivery": {"mode": "announce", "channel": "pager", "to": "42"},
}


def cron(state: Path, tool: str, **arguments: Any) -> dict[str, Any]:
    """Ask the cron server of `state` over MCP: a second process on the same store, which serves reads and edits
    beside the run's own."""

    async def asking() -> dict[str, Any]:
        command = [sys.executable, "-m", "hermitcrab.servers.cron", "--state", str(state)]
        async with Client(StdioServerParameters(command=command[0], args=command[1:])) as client:
            return await call(client, tool, **arguments)

    with ThreadPoolExecutor(1) as thread:  # Playwright's sync API runs an event loop in this thread
        return thread.submit(anyio.run, asking).result()


def dead_letter(page: Page) -> Locator:
    """The one dead letter's row, once the host has set it aside (the page reloaded until then)."""
    letter = page.get_by_role("row", name=re.compile(r"server-item from cron"))

    def set_aside() -> bool:
        page.reload()
        return letter.count() == 1

    wait_for(set_aside, "the run's item was not set aside as a dead letter")
    return letter


@pytest.fixture
def cron_state(tmp_path: Path) -> Path:
    return tmp_path / "cron"


@pytest.fixture
def servers(cron_state: Path) -> dict[str, dict[str, Any]]:
    return {"cron": own_server("cron", "--state", str(cron_state))}


def test_a_job_the_agent_made_is_shown_in_words_and_disabled_and_the_cron_server_says_so(
    tmp_path: Path, llm: FakeLLM, servers: dict[str, dict[str, Any]], cron_state: Path
):
    llm.enqueue(
        openai_tool_calls(("call-1", "cron_add", json.dumps({"job": STRETCH}))),
        openai_text("Every weekday at 9 I will remind you to stretch."),
    )
    with dashboard_run(tmp_path / "home", llm, servers=servers, config=CONFIG) as run, chromium() as browser:
        ask = [*CLI, "ask", "--mcp-config", str(run.home / "mcp.json"), "Remind me to stretch every weekday at 9."]
        asked = subprocess.run(ask, env=run.env, capture_output=True, text=True, timeout=60)
        assert asked.stdout.strip() == "Every weekday at 9 I will remind you to stretch.", asked.stderr
        answered = llm.requests[1]["messages"][-1]
        assert answered["role"] == "tool" and '"name": "stretch"' in answered["content"]  # the job cron_add made

        page = logged_in(browser, run)
        page.get_by_role("navigation", name="Pages").get_by_role("link", name="Automations").click()
        assert page.get_by_role("heading", level=1).inner_text() == "Automations"
        row = page.get_by_role("row", name=re.compile(r"^stretch"))
        assert "At 09:00, Monday through Friday (Europe/Berlin)" in row.inner_text()
        assert re.search(r"in \d+ (hours?|days?|minutes?), \w{3} .*09:00 Europe/Berlin", row.inner_text())
        assert "Remind the owner to stand up and stretch." in row.inner_text()
        assert serious_violations(page) == []

        row.get_by_role("button", name="Disable stretch").click()
        assert page.get_by_role("status").inner_text() == "stretch is disabled."
        row = page.get_by_role("row", name=re.compile(r"^stretch"))
        assert "disabled" in row.inner_text() and row.get_by_role("button", name="Enable stretch").is_visible()

        [job] = cron(cron_state, "cron_list", include_disabled=True)["jobs"]
        assert job["name"] == "stretch" and job["enabled"] is False


def test_a_job_run_by_hand_that_no_channel_can_deliver_is_a_dead_letter_dropped_here_and_a_job_deleted(
    tmp_path: Path, llm: FakeLLM, servers: dict[str, dict[str, Any]], cron_state: Path
):
    report = cron(cron_state, "cron_add", job=REPORT)
    home = tmp_path / "home"
    with dashboard_run(home, llm, servers=servers, config=CONFIG) as run, chromium() as browser:
        page = logged_in(browser, run)
        page.goto(f"{run.url}/automations")
        row = page.get_by_role("row", name=re.compile(r"^nightly report"))
        assert "Every hour" in row.inner_text() and "never" in row.inner_text()
        assert page.get_by_text("None: nothing has been set aside.").is_visible()

        row.get_by_role("button", name="Run now nightly report").click()
        assert page.get_by_role("status").inner_text() == "Ran nightly report now."
        letter = dead_letter(page)
        assert "Summarise the day's mail." in letter.inner_text() and "pager" in letter.inner_text()
        runs = page.get_by_role("table", name=re.compile(r"runs, newest first")).get_by_role(
            "row", name=re.compile("report")
        )
        assert "handled by the host (run by hand)" in runs.inner_text()
        assert serious_violations(page) == []

        letter_id = letter.get_by_role("rowheader").inner_text().split()[0]
        letter.get_by_role("button", name=f"Drop {letter_id}").click()
        assert (
            page.get_by_role("status").inner_text() == f"Dropped dead letter {letter_id}: it will not be tried again."
        )
        assert page.get_by_text("None: nothing has been set aside.").is_visible()
        listed = subprocess.run([*CLI, "deadletters", "list"], env=run.env, capture_output=True, text=True, timeout=30)
        assert listed.stdout.strip() == "none"

        page.get_by_role("row", name=re.compile(r"^nightly report")).get_by_role(
            "link", name="Delete nightly report"
        ).click()
        assert page.get_by_role("heading", name="Delete nightly report?").is_visible()
        assert serious_violations(page) == []
        page.get_by_role("button", name="Delete nightly report").click()
        assert page.get_by_role("status").inner_text().startswith("Deleted nightly report")
        assert page.get_by_role("row", name=re.compile(r"^nightly report")).count() == 0
    assert cron(cron_state, "cron_list", include_disabled=True)["jobs"] == []
    assert report["id"].startswith("nightly-report-")


def test_a_dead_letter_retried_here_is_run_again_by_the_host_and_answered_once(
    tmp_path: Path, llm: FakeLLM, servers: dict[str, dict[str, Any]], cron_state: Path
):
    webhook = {
        "HERMITCRAB_WEBHOOK_LISTEN": f"127.0.0.1:{free_port()}",
        "HERMITCRAB_WEBHOOK_TOKEN": "automations-test-token",
        "HERMITCRAB_OUTBOUND_ALLOW": "127.0.0.1",  # the reply goes to the scripted LLM's sink
    }
    mail = {**REPORT, "name": "mail digest", "delivery": {"mode": "announce", "channel": "webhook", "to": llm.sink_url}}
    cron(cron_state, "cron_add", job=mail)
    config = CONFIG + "retry_wait_s = 0.1\n"
    with (
        dashboard_run(tmp_path / "home", llm, servers=servers, config=config, env=webhook) as run,
        chromium() as browser,
    ):
        page = logged_in(browser, run)
        page.goto(f"{run.url}/automations")
        page.get_by_role("button", name="Run now mail digest").click()  # the model has no answer: each turn fails
        letter = dead_letter(page)
        assert "3 attempts" in letter.inner_text() and "no scripted reply left" in letter.inner_text()

        llm.enqueue(openai_text(DIGEST))
        letter_id = letter.get_by_role("rowheader").inner_text().split()[0]
        letter.get_by_role("button", name=f"Retry {letter_id}").click()
        assert page.get_by_role("status").inner_text().startswith(f"Dead letter {letter_id} will be tried again")
        answered = lambda: [sent["text"] for sent in llm.delivered].count(DIGEST)  # noqa: E731
        wait_for(lambda: answered() > 0, f"the retried item was not answered: {llm.delivered}")

        page.reload()
        assert page.get_by_text("None: nothing has been set aside.").is_visible()
        assert answered() == 1


def test_without_their_servers_memory_and_automations_say_so_and_show_what_is_on_disk(tmp_path: Path, llm: FakeLLM):
    home = tmp_path / "home"
    (home / "workspace").mkdir(parents=True)
    (home / "workspace" / "MEMORY.md").write_text("- The owner likes green tea.\n")
    DeadLetters(home / "state" / FOLDER).add(
        key="discord:1234",
        kind="message",
        source="discord",
        session="main",
        text="what is on my calendar <today>?",
        reason="the model kept failing",
        attempts=3,
        event={},
    )
    with dashboard_run(home, llm) as run, httpx.Client() as client:
        client.get(run.login_link(), follow_redirects=True)
        memory = client.get(f"{run.url}/memory", params={"q": "tea"})
        automations = client.get(f"{run.url}/automations")
    assert memory.status_code == 200 and "No MCP server offers memory_search" in memory.text
    assert 'href="/memory/file?path=MEMORY.md"' in memory.text
    assert automations.status_code == 200 and "No MCP server offers cron_list" in automations.text
    assert "what is on my calendar &lt;today&gt;?" in automations.text and "3 attempts" in automations.text
