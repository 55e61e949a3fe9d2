"""Take the dashboard's screenshots for docs/dashboard.md, again whenever a page changes.

    .venv/bin/python scripts/dashboard_screenshots.py [--out docs/dashboard]

A real `hermitcrab run` with the memory, cron and exec servers, a scripted model on 127.0.0.1 and seeded content (a
conversation that schedules a job, memory notes, a pairing request), each page shot in a real headless Chromium at
1280x800. Nothing leaves this machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))

from playwright.sync_api import Page

from hermitcrab.channels.pairing import PairingStore
from hermitcrab.dashboard.pages import PAGES
from tests.support.dashboard import QUIET, chromium, dashboard_run, own_server
from tests.support.fake_llm import FakeLLM, openai_text, openai_tool_calls, running_fake_llm

MEMORY = """# Memory

- The user's cat is called Miso; she is eleven and dislikes the vacuum cleaner.
- Prefers short answers in the morning, details in the evening.
- Standup is at 09:00 on weekdays, in the #team channel.
- Working on the hermitcrab dashboard this week.
"""
DAY = """# 2026-12-02

- Booked the vet for Miso on Friday 16:30.
- Decided to use server-rendered pages for the dashboard: no build step.
"""
STANDUP = {
    "name": "standup",
    "schedule": {"kind": "cron", "expr": "0 9 * * 1-5", "tz": "Europe/Berlin"},
    "payload": {"kind": "system_event", "text": "Standup in 5 minutes: what did you do yesterday?"},
}


def seed(home: Path) -> None:
    workspace = home / "workspace"
    (workspace / "memory").mkdir(parents=True)
    (workspace / "MEMORY.md").write_text(MEMORY)
    (workspace / "memory" / "2026-12-02.md").write_text(DAY)
    PairingStore(home / "state" / "pairing").request("discord", "493027711", "sam")


def converse(page: Page, llm: FakeLLM) -> None:
    llm.enqueue(
        openai_tool_calls(("call-1", "cron_add", json.dumps({"job": STANDUP}))),
        openai_text("Done: I will remind you at **09:00 on weekdays** (Berlin time), starting tomorrow."),
    )
    say(page, "Remind me of the standup every weekday at 9, Berlin time.", "starting tomorrow")
    llm.enqueue(openai_text("Miso's vet appointment is on **Friday at 16:30**. Shall I add a reminder?"))
    say(page, "When is the vet?", "Shall I add a reminder?")


def say(page: Page, text: str, reply: str) -> None:
    page.get_by_label("Message").fill(text)
    page.get_by_role("button", name="Send").click()
    page.get_by_text(reply).wait_for(timeout=30_000)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).parents[1] / "docs" / "dashboard")
    out: Path = parser.parse_args().out
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, running_fake_llm() as llm:
        home = Path(tmp) / "home"
        seed(home)
        state = home / "state"
        servers = {
            "memory": own_server("memory", "--workspace", str(home / "workspace"), "--state", str(state / "memory")),
            "cron": own_server("cron", "--state", str(state / "cron")),
        }
        with dashboard_run(home, llm, servers=servers, config=QUIET) as run, chromium() as browser:
            context = browser.new_context(viewport={"width": 1280, "height": 800})
            page = context.new_page()
            page.set_default_timeout(20_000)
            page.goto(run.login_link())
            converse(page, llm)
            for module in PAGES:
                page.goto(f"{run.url}{module.PATH}")
                page.wait_for_load_state("load")
                path = out / f"{module.PATH.strip('/')}.png"
                page.screenshot(path=str(path))
                print(f"{path} ({path.stat().st_size // 1024} KB)")


if __name__ == "__main__":
    main()
