"""The Usage page on a real run: the calls and tokens the scripted model reported in turns of `hermitcrab ask`, by
day, model and session, priced as `hermitcrab usage` prices them (0 on a loopback server, else a configured price),
with today's spending against the daily budget and a 7- or 30-day period chosen in a form."""

from __future__ import annotations

import datetime as dt
import subprocess
from pathlib import Path

from playwright.sync_api import Locator

from tests.support.cli import CLI, cli_env
from tests.support.dashboard import chromium, dashboard_run, logged_in, serious_violations
from tests.support.fake_llm import FakeLLM, openai_text

CONFIG = "[heartbeat]\nevery_minutes = 0\n\n[budget]\ncalls_per_day = 40\nusd_per_day = 2\n"
NO_PROFILE = {
    "HERMITCRAB_PROVIDER": "",
    "HERMITCRAB_LLM_BASE_URL": "",
    "HERMITCRAB_MODEL": "",
    "HERMITCRAB_LLM_API_KEY": "",
}


def seed(home: Path, llm: FakeLLM, config: str, env: dict[str, str] | None = None) -> None:
    """Two turns through `hermitcrab ask`, before the run starts: 1,500 tokens in and 250 out in two calls."""
    home.mkdir(parents=True)
    (home / "config.toml").write_text(config)
    for session, tokens in (("main", (1000, 200)), ("notes", (500, 50))):
        llm.enqueue(openai_text("Done.", tokens=tokens))
        done = subprocess.run(
            [*CLI, "ask", "--session", session, "Tidy up"],
            env=cli_env(home, llm, env),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr


def cells(table: Locator, row: str) -> list[str]:
    """The cells of the row headed `row`, their text without the space around it."""
    return [text.strip() for text in table.get_by_role("row", name=row).get_by_role("cell").all_inner_texts()]


def test_usage_shows_calls_and_tokens_by_day_model_and_session_free_on_loopback(tmp_path: Path, llm: FakeLLM):
    home = tmp_path / "home"
    seed(home, llm, CONFIG)
    today = f"{dt.datetime.now():%Y-%m-%d}"
    with dashboard_run(home, llm) as run, chromium() as browser:
        page = logged_in(browser, run)
        page.get_by_role("navigation", name="Pages").get_by_role("link", name="Usage").click()
        assert page.get_by_role("heading", level=1).inner_text() == "Usage"
        assert cells(page.get_by_role("table", name="By model"), "fake-model (openai)")[:5] == [
            "1,500",
            "0%",
            "250",
            "2",
            "$0.0000",
        ]
        assert cells(page.get_by_role("table", name="By day"), today)[:5] == ["1,500", "0%", "250", "2", "$0.0000"]
        assert cells(page.get_by_role("table", name="By session"), "main")[:5] == ["1,000", "0%", "200", "1", "$0.0000"]
        assert cells(page.get_by_role("table", name="By session"), "notes")[:5] == ["500", "0%", "50", "1", "$0.0000"]
        budget = page.get_by_role("table").first
        assert cells(budget, "Model calls") == ["2", "40", "5%"]
        assert cells(budget, "Tokens") == ["1,750", "30,000,000", "0%"]
        assert cells(budget, "Cost") == ["$0.0000", "$2.00", "0%"]
        assert page.get_by_role("meter", name="Model calls used of the daily limit").get_attribute("value") == "2"
        assert serious_violations(page) == []

        page.get_by_label("Period").select_option("30")
        page.get_by_role("button", name="Show").click()
        since = dt.date.today() - dt.timedelta(days=29)
        assert page.get_by_role("heading", name=f"Since {since:%Y-%m-%d}").is_visible()
        assert page.url.endswith("/usage?days=30")


def test_a_configured_price_is_what_the_calls_cost(tmp_path: Path, llm: FakeLLM):
    home = tmp_path / "home"
    profile = (
        f'[[providers]]\nname = "paid"\nkind = "openai"\nbase_url = "{llm.url}"\nmodel = "fake-model"\n'
        'api_key = "sk-test-secret"\nprice = {input = 2.0, output = 10.0}\n'
    )
    seed(home, llm, CONFIG + profile, NO_PROFILE)
    with dashboard_run(home, llm, env=NO_PROFILE) as run, chromium() as browser:
        page = logged_in(browser, run)
        page.goto(f"{run.url}/usage")
        # 1,500 tokens in at $2 / 1M and 250 out at $10 / 1M
        assert cells(page.get_by_role("table", name="By model"), "fake-model (openai)")[4] == "$0.0055"
        assert cells(page.get_by_role("table", name="By session"), "main")[4] == "$0.0040"
        assert cells(page.get_by_role("table").first, "Cost") == ["$0.0055", "$2.00", "0%"]
        assert serious_violations(page) == []
