"""The Usage page on a real run: the calls and tokens the scripted model reported in turns of `hermitcrab ask`, by
day, model and session, priced as `hermitcrab usage` prices them (0 on a loopback server, else a configured price),
with today's spending against the daily budget and a 7- or 30-day period chosen in a form."""

from __future__ import annotations

import datetime as dt
import subprocess
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from playwright.sync_api import Locator, Page

from hermitcrab.host.config import PROFILE_VARIABLES
from tests.support.cli import CLI, cli_env
from tests.support.dashboard import chromium, dashboard_run, logged_in, serious_violations
from tests.support.fake_llm import FakeLLM, openai_text, running_fake_llm

ZONE = "Pacific/Kiritimati"
"""The agent's zone, UTC+14: its day is the machine's only part of the time, so a test using the machine's date
would fail."""
CONFIG = (
    f'[agent]\ntimezone = "{ZONE}"\n\n[heartbeat]\nevery_minutes = 0\n\n[budget]\ncalls_per_day = 40\nusd_per_day = 2\n'
)
PAID = '[[providers]]\nname = "paid"\nkind = "openai"\nmodel = "fake-model"\napi_key = "sk-test-secret"\n'
PRICE = "price = {input = 2.0, output = 10.0}\n"
"""USD per 1M tokens in and out."""
NO_PROFILE = dict.fromkeys(PROFILE_VARIABLES, "")
"""The scripted model's environment profile left out of a process, so it answers through the priced profile."""


def ask(home: Path, llm: FakeLLM, session: str, tokens: tuple[int, int], env: dict[str, str] | None = None) -> None:
    llm.enqueue(openai_text("Done.", tokens=tokens))
    done = subprocess.run(
        [*CLI, "ask", "--session", session, "Tidy up"],
        env=cli_env(home, llm, env),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def usage(tmp_path_factory: pytest.TempPathFactory):
    """The Usage page after two turns before the run started: `main` through the loopback profile (1,000 tokens in,
    200 out, free) and `notes` through the priced one (500 in, 50 out: $0.0010 + $0.0005)."""
    home = tmp_path_factory.mktemp("usage") / "home"
    home.mkdir()
    with running_fake_llm() as llm:
        (home / "config.toml").write_text(f'{CONFIG}{PAID}base_url = "{llm.url}"\n{PRICE}')
        ask(home, llm, "main", (1000, 200))
        ask(home, llm, "notes", (500, 50), NO_PROFILE)
        with dashboard_run(home, llm) as run, chromium() as browser:
            page = logged_in(browser, run)
            page.get_by_role("navigation", name="Pages").get_by_role("link", name="Usage").click()
            yield page


def agent_today() -> dt.date:
    return dt.datetime.now(ZoneInfo(ZONE)).date()


def cells(table: Locator, row: str) -> list[str]:
    """The cells of the row headed `row`, their text without the space around it."""
    return [text.strip() for text in table.get_by_role("row", name=row).get_by_role("cell").all_inner_texts()]


def test_calls_and_tokens_by_day_model_and_session_priced_per_profile(usage: Page):
    assert usage.get_by_role("heading", level=1).inner_text() == "Usage"
    both = ["1,500", "0%", "250", "2", "$0.0015"]  # tokens in, cached, out, calls, cost
    assert cells(usage.get_by_role("table", name="By model"), "fake-model (openai)")[:5] == both
    assert cells(usage.get_by_role("table", name="By day"), f"{agent_today():%Y-%m-%d}")[:5] == both
    by_session = usage.get_by_role("table", name="By session")
    assert cells(by_session, "main")[:5] == ["1,000", "0%", "200", "1", "$0.0000"]  # a loopback server is free
    assert cells(by_session, "notes")[:5] == ["500", "0%", "50", "1", "$0.0015"]
    assert serious_violations(usage) == []


def test_today_is_set_against_the_daily_budget(usage: Page):
    budget = usage.get_by_role("table").first
    assert cells(budget, "Model calls") == ["2", "40", "5%"]
    assert cells(budget, "Tokens") == ["1,750", "30,000,000", "0%"]  # the default limit
    assert cells(budget, "Cost") == ["$0.0015", "$2.00", "0%"]
    assert usage.get_by_role("meter", name="Model calls used of the daily limit").get_attribute("value") == "2"


def test_the_period_is_chosen_in_a_form(usage: Page):
    usage.get_by_label("Period").select_option("30")
    usage.get_by_role("button", name="Show").click()
    since = agent_today() - dt.timedelta(days=29)
    assert usage.get_by_role("heading", name=f"Since {since:%Y-%m-%d}").is_visible()
    assert usage.url.endswith("/usage?days=30")
    assert usage.get_by_label("Period").input_value() == "30"
