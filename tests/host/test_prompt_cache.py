"""A request a provider can cache: what changes per turn comes after the history, which a later turn sends again
byte for byte, so the scripted server sees each request begin with the whole previous one."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from hermitcrab.host.config import AgentSettings, ProviderProfile, Settings
from hermitcrab.host.events import OWNER, Event, Target
from hermitcrab.host.gateway.gateway import Gateway
from hermitcrab.host.providers import create
from hermitcrab.host.providers.openai import sends_cache_key
from hermitcrab.host.session.transcript import SessionStore
from hermitcrab.host.turn.agent import Agent
from tests.support.channels import RecordingChannel
from tests.support.fake_llm import FakeLLM, anthropic_text, openai_text, running_fake_llm

ROOM = Target("test", "room")
NOON = dt.datetime(2026, 3, 2, 11, 59, 50, tzinfo=dt.UTC)


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    with running_fake_llm() as fake:
        yield fake


async def minute_apart(llm: FakeLLM, home: Path, profile: ProviderProfile, *sessions: str) -> None:
    """A turn in each session, then a minute later another."""
    (home / "workspace").mkdir()
    (home / "workspace" / "SOUL.md").write_text("Be brief and kind.\n" * 50)
    settings = Settings(home=home, providers=(), servers=(), agent=AgentSettings(timezone="UTC"))
    now = [NOON]
    async with httpx.AsyncClient() as client:
        agent = Agent(settings, create(profile, client), None, SessionStore(home / "sessions"), clock=lambda: now[0])
        gateway = Gateway(agent, {"test": RecordingChannel()}, ask_timeout_s=1)
        for text in ("what time is it?", "and now?"):
            for session in sessions:
                await gateway.process(Event("message", text, ROOM, session_key=session, principal=OWNER))
            now[0] += dt.timedelta(minutes=1)


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_two_turns_a_minute_apart_send_the_first_request_again_as_the_second_ones_prefix(
    llm: FakeLLM, tmp_path: Path, kind: str
):
    llm.enqueue(*(openai_text(t) if kind == "openai" else anthropic_text(t) for t in ("first", "second")))
    base_url = llm.url if kind == "openai" else llm.url.removesuffix("/v1")
    await minute_apart(llm, tmp_path, ProviderProfile(kind, "fake-model", base_url), "main")

    first, second = llm.prompts
    assert second.shared == len(first.text)  # the whole first request: tools, system, its message
    assert second.newest_at > second.shared  # the first answer, then the newest message, come after it
    # The model still learns the time and the speaker: from the host's note, which comes with the newest message.
    newest = "".join(second.pieces[-2:]) if kind == "openai" else second.pieces[-1]
    assert "Monday 2026-03-02 12:00 (UTC)" in newest and "From: the owner" in newest and "and now?" in newest
    assert "11:59 (UTC)" in first.text and "12:00" not in first.text


async def test_a_session_s_calls_carry_one_prompt_cache_key_that_does_not_name_it(llm: FakeLLM, tmp_path: Path):
    llm.enqueue(*(openai_text("ok") for _ in range(4)))
    await minute_apart(llm, tmp_path, ProviderProfile("openai", "m", llm.url, prompt_cache_key=True), "main", "work")

    keys = [request["prompt_cache_key"] for request in llm.requests]
    assert keys[0] == keys[2] and keys[1] == keys[3] and keys[0] != keys[1]
    assert not [key for key in keys if "main" in key or "work" in key]


async def test_no_prompt_cache_key_goes_to_a_server_other_than_openai_s_unless_the_profile_asks(
    llm: FakeLLM, tmp_path: Path
):
    llm.enqueue(openai_text("ok"), openai_text("ok"))
    await minute_apart(llm, tmp_path, ProviderProfile("openai", "m", llm.url), "main")

    assert [request for request in llm.requests if "prompt_cache_key" in request] == []
    assert sends_cache_key(ProviderProfile("openai", "gpt-5", "https://api.openai.com/v1"))
    assert not sends_cache_key(ProviderProfile("openai", "gpt-5", "https://api.openai.com/v1", prompt_cache_key=False))
