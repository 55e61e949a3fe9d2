"""The daily model budget: turns of a kind whose budget is spent are answered with a sentence, the owner told once."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from hermitcrab.host.config import AgentSettings, Settings, load_settings
from hermitcrab.host.events import OWNER, Event, Target, person
from hermitcrab.host.gateway.gateway import Gateway
from hermitcrab.host.gateway.last_target import LastTarget
from hermitcrab.host.providers.base import Usage
from hermitcrab.host.session.transcript import SessionStore
from hermitcrab.host.turn.agent import Agent
from hermitcrab.host.turn.budget import DEFAULT_LIMITS, TOTAL, Budget, Limit
from tests.support.channels import RecordingChannel
from tests.support.scripted_provider import ScriptedProvider

GROUP = Target("test", "room-9", "bob")
OWNER_DM = Target("test", "owner-dm", "sam")
TODAY = dt.date(2026, 12, 2)


def test_spending_is_counted_per_kind_and_in_total_and_shared_between_processes(tmp_path: Path):
    limits = {**DEFAULT_LIMITS, "group": Limit(calls_per_day=3), TOTAL: Limit(tokens_per_day=1_000)}
    budget = Budget(tmp_path, limits)

    budget.charge("group", TODAY, 2, Usage(60, 40))
    assert budget.spent("group", TODAY) is None
    Budget(tmp_path, limits).charge("group", TODAY, 1, Usage(60, 40))  # another process of the same home
    spent = budget.spent("group", TODAY)
    budget.charge("owner", TODAY, 1, Usage(800, 100))

    assert spent is not None and "daily budget for group conversations (3 model calls)" in spent.reply
    assert "[budget.group]" in spent.owner_note
    total = budget.spent("owner", TODAY)
    assert total is not None and total.key == TOTAL and "1,000 tokens" in total.reply
    assert budget.spent("group", TODAY + dt.timedelta(days=1)) is None  # a new day starts from zero
    assert (tmp_path / "2026-12-02.json").stat().st_mode & 0o077 == 0


def test_the_config_sets_limits_per_kind_and_in_total(hermitcrab_home: Path):
    (hermitcrab_home / "config.toml").write_text(
        "[budget]\ncalls_per_day = 50\n\n[budget.group]\ntokens_per_day = 10\n"
    )

    budget = load_settings({"HERMITCRAB_HOME": str(hermitcrab_home)}).budget

    assert budget[TOTAL] == Limit(50, DEFAULT_LIMITS[TOTAL].tokens_per_day)
    assert budget["group"] == Limit(DEFAULT_LIMITS["group"].calls_per_day, 10)
    assert budget["owner"] == DEFAULT_LIMITS["owner"]


async def test_a_spent_budget_answers_with_a_sentence_calls_no_model_and_tells_the_owner_once(tmp_path: Path):
    provider = ScriptedProvider().say("Hello, group.").say("never asked")
    settings = Settings(home=tmp_path, providers=(), servers=(), agent=AgentSettings())
    budget = Budget(tmp_path / "usage", {**DEFAULT_LIMITS, "group": Limit(calls_per_day=1)})
    store = SessionStore(tmp_path / "sessions")
    agent = Agent(settings, provider, None, store, clock=lambda: dt.datetime(2026, 12, 2, 12, 0), budget=budget)
    last = LastTarget(tmp_path / "last_target.json")
    last.remember(OWNER_DM)
    channel = RecordingChannel()
    gateway = Gateway(agent, {"test": channel}, ask_timeout_s=1, last_target=last)
    bob = person("group", "test", "bob")

    first = await gateway.process(Event("message", "hi", GROUP, chat="group", principal=bob))
    second = await gateway.process(Event("message", "hi again", GROUP, chat="group", principal=bob))
    third = await gateway.process(Event("message", "and again", GROUP, chat="group", principal=bob))
    mine = await gateway.process(Event("message", "hello", OWNER_DM, chat="direct", principal=OWNER))

    assert first == "Hello, group." and len(provider.seen) == 2  # the owner's turn still ran
    assert second == third and second is not None and "used up for today" in second
    told = [text for target, text in channel.sent if target == OWNER_DM and "[budget.group]" in text]
    assert len(told) == 1
    assert mine == "never asked"
    usage = json.loads((tmp_path / "usage" / "2026-12-02.json").read_text())
    assert usage["group"]["calls"] == 1 and usage["owner"]["calls"] == 1 and usage[TOTAL]["calls"] == 2
