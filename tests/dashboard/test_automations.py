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
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client, StdioServerParameters
from playwright.sync_api import Browser, Locator, Page

from hermitcrab.host.inbox.deadletters import FOLDER, DeadLetters
from tests.support.cli import CLI, wait_for
from tests.support.dashboard import (
    QUIET,
    DashboardRun,
    chromium,
    dashboard_run,
    logged_in,
    own_server,
    serious_violations,
)
from tests.support.fake_llm import FakeLLM, free_port, openai_text, openai_tool_calls, running_fake_llm
from tests.support.tools import call

CONFIG = QUIET + '[agent]\ntimezone = "Europe/Berlin"\nretry_wait_s = 0.1\n'
STRETCH = {
    "name": "stretch",
    "schedule": {"kind": "cron", "expr": "0 9 * * 1-5", "tz": "Europe/Berlin"},
    "payload": {"kind": "agent_turn", "message": "Remind the owner to stand up and stretch."},
}
REPORT = {
    "name": "nightly report",
    "schedule": {"kind": "every", "every_seconds": 3600},
    "payload": {"kind": "agent_turn", "message": "Summarise the day's mail."},
    "delivery": {"mode": "announce", "channel": "pager", "to": "42"},
}
DIGEST = "Mail: two invoices and an invitation."


def cron(state: Path, tool: str, **arguments: Any) -> dict[str, Any]:
    """Ask the cron server of `state` over MCP: a second process on the same store, which serves reads and edits
    beside the run's own."""

    async def asking() -> dict[str, Any]:
        command = [sys.executable, "-m", "hermitcrab.servers.cron", "--state", str(state)]
        async with Client(StdioServerParameters(command=command[0], args=command[1:])) as client:
            return await call(client, tool, **arguments)

    with ThreadPoolExecutor(1) as thread:  # Playwright's sync API runs an event loop in this thread
        return thread.submit(anyio.run, asking).result()


@dataclass(frozen=True)
class Host:
    run: DashboardRun
    llm: FakeLLM
    cron_state: Path
    browser: Browser

    def automations(self) -> Page:
        page = logged_in(self.browser, self.run)
        page.goto(f"{self.run.url}/automations")
        return page


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Host]:
    """One run for the module, its cron store holding `REPORT` and a mail digest delivered to the scripted LLM's sink
    through the webhook channel; each test works on jobs of its own."""
    root = tmp_path_factory.mktemp("automations")
    cron_state = root / "cron"
    with running_fake_llm() as llm:
        webhook = {
            "HERMITCRAB_WEBHOOK_LISTEN": f"127.0.0.1:{free_port()}",
            "HERMITCRAB_WEBHOOK_TOKEN": "automations-test-token",
            "HERMITCRAB_OUTBOUND_ALLOW": "127.0.0.1",  # the digest goes to the scripted LLM's sink
        }
        cron(cron_state, "cron_add", job=REPORT)
        digest = {"mode": "announce", "channel": "webhook", "to": llm.sink_url}
        cron(cron_state, "cron_add", job={**REPORT, "name": "mail digest", "delivery": digest})
        servers = {"cron": own_server("cron", "--state", str(cron_state))}
        with dashboard_run(root / "home", llm, servers=servers, config=CONFIG, env=webhook) as run, chromium() as b:
            yield Host(run, llm, cron_state, b)


def dead_letter(page: Page, job: str) -> Locator:
    """The row of the dead letter of `job`'s run, once the host has set it aside (the page reloaded until then)."""
    letters = page.get_by_role("table", name="Dead letters, oldest first")
    letter = letters.get_by_role("row", name=re.compile(f'cron job "{job}"'))

    def set_aside() -> bool:
        page.reload()
        return letter.count() == 1

    wait_for(set_aside, f"the run of {job} was not set aside as a dead letter")
    return letter


def job_row(page: Page, name: str) -> Locator:
    return page.get_by_role("table", name=re.compile("Cron jobs")).get_by_role("row", name=re.compile(f"^{name}"))


def test_a_job_the_agent_made_is_shown_in_words_and_disabled_and_the_cron_server_says_so(host: Host):
    llm, run = host.llm, host.run
    asked_before = len(llm.requests)
    llm.enqueue(
        openai_tool_calls(("call-1", "cron_add", json.dumps({"job": STRETCH}))),
        openai_text("Every weekday at 9 I will remind you to stretch."),
    )
    ask = [*CLI, "ask", "--mcp-config", str(run.home / "mcp.json"), "Remind me to stretch every weekday at 9."]
    asked = subprocess.run(ask, env=run.env, capture_output=True, text=True, timeout=60)
    assert asked.stdout.strip() == "Every weekday at 9 I will remind you to stretch.", asked.stderr
    answered = llm.requests[asked_before + 1]["messages"][-1]
    assert answered["role"] == "tool" and '"name": "stretch"' in answered["content"]  # the job cron_add made

    page = logged_in(host.browser, run)
    page.get_by_role("navigation", name="Pages").get_by_role("link", name="Automations").click()
    assert page.get_by_role("heading", level=1).inner_text() == "Automations"
    row = job_row(page, "stretch")
    assert "At 09:00, Monday through Friday (Europe/Berlin)" in row.inner_text()
    assert re.search(r"in \d+ (hours?|days?|minutes?), \w{3} .*09:00 Europe/Berlin", row.inner_text())
    assert "Remind the owner to stand up and stretch." in row.inner_text()
    assert serious_violations(page) == []

    row.get_by_role("button", name="Disable stretch").click()
    assert page.get_by_role("status").inner_text() == "stretch is disabled."
    row = job_row(page, "stretch")
    assert "disabled" in row.inner_text() and row.get_by_role("button", name="Enable stretch").is_visible()

    jobs = cron(host.cron_state, "cron_list", include_disabled=True)["jobs"]
    assert [job["enabled"] for job in jobs if job["name"] == "stretch"] == [False]


def test_a_job_run_by_hand_that_no_channel_can_deliver_is_a_dead_letter_dropped_here_and_a_job_deleted(host: Host):
    page = host.automations()
    row = job_row(page, "nightly report")
    assert "Every hour" in row.inner_text() and "never" in row.inner_text()

    row.get_by_role("button", name="Run now nightly report").click()
    assert page.get_by_role("status").inner_text() == "Ran nightly report now."
    letter = dead_letter(page, "nightly report")
    assert "Summarise the day's mail." in letter.inner_text() and "no channel named 'pager'" in letter.inner_text()
    run = page.get_by_role("table", name="Recent runs, newest first").get_by_role("row", name=re.compile("nightly"))
    assert "handled by the host (run by hand)" in run.inner_text()
    assert serious_violations(page) == []

    letter_id = letter.get_by_role("rowheader").inner_text().split()[0]
    letter.get_by_role("button", name=f"Drop {letter_id}").click()
    assert page.get_by_role("status").inner_text() == f"Dropped dead letter {letter_id}: it will not be tried again."
    assert letter.count() == 0
    listed = subprocess.run([*CLI, "deadletters", "list"], env=host.run.env, capture_output=True, text=True, timeout=30)
    assert letter_id not in listed.stdout

    job_row(page, "nightly report").get_by_role("link", name="Delete nightly report").click()
    assert page.get_by_role("heading", name="Delete nightly report?").is_visible()
    assert serious_violations(page) == []
    page.get_by_role("button", name="Delete nightly report").click()
    assert page.get_by_role("status").inner_text().startswith("Deleted nightly report")
    assert job_row(page, "nightly report").count() == 0
    jobs = cron(host.cron_state, "cron_list", include_disabled=True)["jobs"]
    assert "nightly report" not in [job["name"] for job in jobs]


def test_a_dead_letter_retried_here_is_run_again_by_the_host_and_answered_once(host: Host):
    page = host.automations()
    job_row(page, "mail digest").get_by_role("button", name="Run now mail digest").click()  # each turn fails: no reply
    letter = dead_letter(page, "mail digest")
    assert "3 attempts" in letter.inner_text() and "no scripted reply left" in letter.inner_text()

    host.llm.enqueue(openai_text(DIGEST))
    letter_id = letter.get_by_role("rowheader").inner_text().split()[0]
    letter.get_by_role("button", name=f"Retry {letter_id}").click()
    assert page.get_by_role("status").inner_text().startswith(f"Dead letter {letter_id} will be tried again")
    answered = lambda: [sent["text"] for sent in host.llm.delivered].count(DIGEST)  # noqa: E731
    wait_for(lambda: answered() > 0, f"the retried item was not answered: {host.llm.delivered}")

    page.reload()
    assert letter.count() == 0
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
