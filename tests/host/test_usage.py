"""Cost you can see: `hermitcrab usage` and `/usage` over transcripts written by the real transcript code and real
turns, priced by genai-prices (the expected costs are computed from it here, never typed in), a profile's own price,
0 for a local server, `?` for an unknown model; and a daily budget in money that refuses a turn once spent."""

from __future__ import annotations

import datetime as dt
import os
from decimal import Decimal
from pathlib import Path

import genai_prices
import httpx
import pytest
from genai_prices import data_snapshot
from typer.testing import CliRunner

from hermitcrab.host.cli.app import app
from hermitcrab.host.config import ConfigError, ModelPrice, ProviderProfile, Settings, load_settings
from hermitcrab.host.events import NOWHERE, OWNER, Event, Target, person
from hermitcrab.host.gateway.gateway import Gateway
from hermitcrab.host.gateway.heartbeat import BEAT, PROMPT
from hermitcrab.host.providers import create
from hermitcrab.host.providers.base import Completion, Message, Usage
from hermitcrab.host.session.transcript import SessionStore
from hermitcrab.host.turn.agent import Agent
from hermitcrab.host.turn.budget import DEFAULT_LIMITS, TOTAL, Budget, Limit
from hermitcrab.host.usage.prices import Prices
from tests.support.channels import RecordingChannel
from tests.support.cli_output import flowing
from tests.support.fake_llm import anthropic_text, openai_text, running_fake_llm
from tests.support.scripted_provider import ScriptedProvider

PROFILES = """
[[providers]]
kind = "openai"
model = "gpt-4o-mini"

[[providers]]
kind = "anthropic"
model = "claude-sonnet-4-5"
name = "claude"

[[providers]]
kind = "openai"
model = "house-model"
base_url = "https://llm.example.net/v1"
name = "house"
price = {input = 2.0, cached_input = 0.5, output = 8.0}

[[providers]]
kind = "openai"
model = "llama3.1"
base_url = "http://127.0.0.1:11434/v1"
name = "local"

[[providers]]
kind = "openai"
model = "mystery-9"
base_url = "https://other.example.net/v1"
name = "other"
"""
MINI = "openai:gpt-4o-mini"
SONNET = "anthropic:claude-sonnet-4-5 (claude)"
OWNER_DM = Target("test", "owner-dm", "sam")


def record(home: Path, session: str, provider: str, model: str, usage: Usage, **fields: object) -> None:
    """One answer recorded the way a turn records it."""
    store = SessionStore(home / "state" / "sessions")
    store.open(session).transcript.append_answer(
        Completion(Message("assistant", "ok"), usage, model, provider), **fields
    )


def listed(home: Path, *args: str) -> str:
    result = CliRunner().invoke(app, ["usage", *args], env={"HERMITCRAB_HOME": str(home), "COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return result.output


def row(output: str, name: str) -> list[str]:
    """The cells of the table row that starts with `name`."""
    line = next(line for line in output.splitlines() if line.strip("│ ").startswith(name))
    return [cell.strip() for cell in line.strip("│ ").split("│")]


def genai(model: str, provider_id: str, usage: Usage) -> Decimal:
    counts = genai_prices.Usage(
        input_tokens=usage.input_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
        output_tokens=usage.output_tokens,
    )
    return genai_prices.calc_price(counts, model, provider_id=provider_id).total_price


def test_usage_sums_tokens_cached_share_calls_and_cost_at_genai_prices(hermitcrab_home: Path):
    (hermitcrab_home / "config.toml").write_text(PROFILES)
    first, second = Usage(12_000, 400, 6_000, 0), Usage(30_000, 900, 24_000, 0)
    cached = Usage(250_000, 2_000, 100_000, 50_000)  # a long prompt: priced alone, in its own tier
    record(hermitcrab_home, "main", MINI, "gpt-4o-mini-2024-07-18", first)
    record(hermitcrab_home, "main", MINI, "gpt-4o-mini-2024-07-18", second)
    record(hermitcrab_home, "discord:dm:7", SONNET, "claude-sonnet-4-5-20250929", cached)

    by_model = listed(hermitcrab_home, "--by", "model")
    by_session = listed(hermitcrab_home, "--by", "session")

    mini = genai("gpt-4o-mini", "openai", first) + genai("gpt-4o-mini", "openai", second)
    sonnet = genai("claude-sonnet-4-5", "anthropic", cached)
    assert mini > 0 and sonnet > 0
    assert row(by_model, "gpt-4o-mini-2024-07-18") == [
        "gpt-4o-mini-2024-07-18 (openai)",
        "42,000",
        "71%",
        "1,300",
        "2",
        f"${mini:,.4f}",
    ]
    assert row(by_model, "claude-sonnet-4-5")[1:] == ["250,000", "40%", "2,000", "1", f"${sonnet:,.4f}"]
    assert row(by_model, "total")[1:] == ["292,000", "45%", "3,300", "3", f"${mini + sonnet:,.4f}"]
    assert row(by_session, "main")[-1] == f"${mini:,.4f}" and row(by_session, "discord:dm:7")[4] == "1"
    assert "no price known" not in by_model
    assert not data_snapshot.get_snapshot().from_auto_update  # the bundled prices: nothing was fetched


def test_a_profile_price_a_local_model_and_an_unknown_one_which_shows_as_unknown_with_a_hint(hermitcrab_home: Path):
    (hermitcrab_home / "config.toml").write_text(PROFILES)
    usage = Usage(1_000_000, 100_000, 400_000, 0)
    record(hermitcrab_home, "main", "openai:house-model (house)", "house-model", usage)
    record(hermitcrab_home, "main", "openai:llama3.1 (local)", "llama3.1:latest", usage)
    record(hermitcrab_home, "main", "openai:mystery-9 (other)", "mystery-9", usage)

    output = listed(hermitcrab_home)

    house = (Decimal(600_000) * 2 + Decimal(400_000) * Decimal("0.5") + Decimal(100_000) * 8) / 1_000_000
    assert row(output, "house-model")[-1] == f"${house:,.4f}"
    assert row(output, "llama3.1:latest")[-1] == "$0.0000"
    assert row(output, "mystery-9")[-1] == "?"
    assert row(output, "total")[-1] == f"${house:,.4f} + ?"
    hint = " ".join(output.split())
    assert "no price known for mystery-9" in hint and "price = {input = ..., output = ...}" in hint
    assert "openai:mystery-9 (other)" in hint


def test_usage_tells_kinds_apart_and_counts_only_the_days_asked_for(hermitcrab_home: Path):
    (hermitcrab_home / "config.toml").write_text(PROFILES)
    old = (dt.datetime.now(dt.UTC) - dt.timedelta(days=10)).isoformat()
    record(hermitcrab_home, "main", MINI, "gpt-4o-mini", Usage(1_000, 10), ts=old)  # recorded ten days ago
    record(hermitcrab_home, "main", MINI, "gpt-4o-mini", Usage(2_000, 20))
    record(hermitcrab_home, "main", MINI, "gpt-4o-mini", Usage(3_000, 30), trigger="heartbeat")
    record(hermitcrab_home, "main", MINI, "gpt-4o-mini", Usage(4_000, 40), flush=True)
    sessions = hermitcrab_home / "state" / "sessions"
    SessionStore(sessions).open("main").transcript.append(
        "compaction", summary="s", first_kept_id="x", usage=Usage(5_000, 50).as_entry(), calls=2
    )
    runs = hermitcrab_home / "state" / "spawn" / "runs" / "r1" / "sessions"
    SessionStore(runs).open("subagent:r1").transcript.append_answer(
        Completion(Message("assistant", "done"), Usage(6_000, 60), "gpt-4o-mini", MINI)
    )
    stale = SessionStore(sessions).open("cron-old").transcript
    stale.append_answer(Completion(Message("assistant", "x"), Usage(7_000, 70), "gpt-4o-mini", MINI), ts=old)
    os.utime(stale.path, (0, 0))  # last changed long ago: not even opened

    output = listed(hermitcrab_home, "--by", "kind", "--days", "2")
    everything = listed(hermitcrab_home, "--by", "day", "--days", "30")

    assert [row(output, kind)[1] for kind in ("turn", "heartbeat", "flush", "compaction", "sub-agent")] == [
        "2,000",
        "3,000",
        "4,000",
        "5,000",
        "6,000",
    ]
    assert row(output, "compaction")[4] == "2" and row(output, "total")[4] == "6"
    assert row(everything, "total")[1] == "21,000"  # the old call counts now; the untouched file still not


async def test_slash_usage_shows_the_owner_todays_totals_and_cost_and_nobody_else(tmp_path: Path):
    settings = _settings(tmp_path)
    provider = ScriptedProvider(label="openai:house-model (house)").say("Hello.").say("Done.")
    noon = dt.datetime.now().replace(hour=12)  # a naive clock, as the agent's may be: local time
    agent = Agent(settings, provider, None, SessionStore(settings.state / "sessions"), clock=lambda: noon)
    gateway = Gateway(agent, {"test": RecordingChannel()}, ask_timeout_s=1)
    await gateway.process(Event("message", "hi", OWNER_DM, chat="direct", principal=OWNER))
    await gateway.process(Event("heartbeat", PROMPT, NOWHERE, session_key="main", principal=BEAT, deliver=False))

    mine = await gateway.process(Event("message", "/usage", OWNER_DM, chat="direct", principal=OWNER))
    theirs = await gateway.process(
        Event(
            "message", "/usage", Target("test", "room", "bob"), chat="group", principal=person("group", "test", "bob")
        )
    )

    cost = Decimal(2 * 100 * 2 + 2 * 10 * 8) / 1_000_000  # ScriptedProvider: 100 tokens in, 10 out a call
    assert mine is not None and mine.startswith("Today: 2 model calls, 200 tokens in (0% cached), 20 out")
    assert f"cost ${cost:,.4f}" in mine
    assert theirs is not None and "Only the owner" in theirs and "$" not in theirs
    kinds = listed(tmp_path, "--by", "kind")  # the heartbeat's turn is marked as one by the real turn code
    assert row(kinds, "heartbeat")[4] == "1" and row(kinds, "turn")[4] == "1"


async def test_a_budget_in_money_refuses_the_turn_once_spent(tmp_path: Path):
    settings = _settings(tmp_path)
    provider = ScriptedProvider(label="openai:house-model (house)").say("One.").say("never asked")
    limits = {**DEFAULT_LIMITS, TOTAL: Limit(usd_per_day=0.0005)}  # one call: 100 x $2/M + 10 x $8/M = $0.00028
    budget = Budget(settings.state / "usage", limits, Prices(settings.providers))
    agent = Agent(settings, provider, None, SessionStore(settings.state / "sessions"), budget=budget)
    gateway = Gateway(agent, {"test": RecordingChannel()}, ask_timeout_s=1)

    first = await gateway.process(Event("message", "one", OWNER_DM, chat="direct", principal=OWNER))
    second = await gateway.process(Event("message", "two", OWNER_DM, chat="direct", principal=OWNER))
    provider.say("Three.")
    third = await gateway.process(Event("message", "three", OWNER_DM, chat="direct", principal=OWNER))

    assert first == "One." and second == "never asked"  # $0.00028, then $0.00056: spent only after the second
    assert third is not None and "used up for today" in third and "(0.0005 USD)" in third
    assert len(provider.seen) == 2


def test_the_config_takes_a_money_budget_and_prices_and_refuses_a_bare_price(hermitcrab_home: Path):
    config = hermitcrab_home / "config.toml"
    config.write_text("[budget]\nusd_per_day = 5\n\n[budget.group]\nusd_per_day = 0.5\n\n[[providers]]\nprice = 0\n")
    settings = load_settings({"HERMITCRAB_HOME": str(hermitcrab_home)})
    assert settings.budget[TOTAL].usd_per_day == 5 and settings.budget["group"].usd_per_day == 0.5
    assert settings.providers[0].price == ModelPrice(0, 0)

    config.write_text("[[providers]]\nprice = 3\n")
    with pytest.raises(ConfigError, match=r"providers\.0\.price: a bare number can only be 0"):
        load_settings({"HERMITCRAB_HOME": str(hermitcrab_home)})


def _settings(home: Path) -> Settings:
    (home / "config.toml").write_text(PROFILES)
    return load_settings({"HERMITCRAB_HOME": str(home)})


@pytest.mark.parametrize(
    ("kind", "body", "cached"),
    [
        (
            "anthropic",
            anthropic_text("hi")
            | {
                "usage": {
                    "input_tokens": 50,
                    "cache_read_input_tokens": 3000,
                    "cache_creation_input_tokens": 200,
                    "output_tokens": 7,
                }
            },
            "92%",
        ),
        (
            "openai",
            openai_text("hi")
            | {
                "usage": {
                    "prompt_tokens": 3250,
                    "completion_tokens": 7,
                    "prompt_tokens_details": {"cached_tokens": 3072},
                }
            },
            "95%",
        ),
    ],
)
async def test_cached_tokens_a_real_provider_reports_are_shown_and_a_loopback_server_costs_nothing(
    hermitcrab_home: Path, kind: str, body: dict[str, object], cached: str
):
    with running_fake_llm() as llm:
        llm.enqueue(body)
        profile = ProviderProfile(kind, "fake-model", llm.url if kind == "openai" else llm.url.removesuffix("/v1"))
        config = f'[[providers]]\nkind = "{kind}"\nmodel = "fake-model"\nbase_url = "{profile.base_url}"\n'
        (hermitcrab_home / "config.toml").write_text(config)  # the profile the answer names, on loopback
        async with httpx.AsyncClient() as client:
            completion = await create(profile, client).complete("sys", [Message("user", "hello")], [])
    SessionStore(hermitcrab_home / "state" / "sessions").open("main").transcript.append_answer(completion)

    output = listed(hermitcrab_home, "--by", "session")

    assert row(output, "main")[1:] == ["3,250", cached, "7", "1", "$0.0000"]


def test_doctor_says_which_profiles_have_a_price_and_how_to_give_one(hermitcrab_home: Path):
    (hermitcrab_home / "config.toml").write_text(
        '[[providers]]\nmodel = "house-model"\nbase_url = "http://127.0.0.1:9/v1"\nname = "house"\n'
        "price = {input = 1.0, output = 3.0}\n\n"
        '[[providers]]\nmodel = "mystery-9"\nbase_url = "http://0.0.0.0:9/v1"\nname = "other"\n'  # not loopback
    )

    result = CliRunner().invoke(app, ["doctor"], env={"HERMITCRAB_HOME": str(hermitcrab_home), "COLUMNS": "300"})

    shown = flowing(result.output)
    assert "ok provider openai:house-model (house) price $4.00 per 1M tokens in and 1M out" in shown
    assert "warn provider openai:mystery-9 (other) price no price known for mystery-9: set price =" in shown
