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


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_two_turns_a_minute_apart_send_the_first_request_again_as_the_second_ones_prefix(
    llm: FakeLLM, tmp_path: Path, kind: str
):
    llm.enqueue(*(openai_text(t) if kind == "openai" else anthropic_text(t) for t in ("first", "second")))
    (tmp_path / "workspace").mkdir()
    (tmp_path / "workspace" / "SOUL.md").write_text("Be brief and kind.\n" * 50)
    settings = Settings(home=tmp_path, providers=(), servers=(), agent=AgentSettings(timezone="UTC"))
    now = [NOON]
    base_url = llm.url if kind == "openai" else llm.url.removesuffix("/v1")
    async with httpx.AsyncClient() as client:
        provider = create(ProviderProfile(kind, "fake-model", base_url), client)
        agent = Agent(settings, provider, None, SessionStore(tmp_path / "sessions"), clock=lambda: now[0])
        gateway = Gateway(agent, {"test": RecordingChannel()}, ask_timeout_s=1)
        await gateway.process(Event("message", "what time is it?", ROOM, principal=OWNER))
        now[0] += dt.timedelta(minutes=1)
        await gateway.process(Event("message", "and now?", ROOM, principal=OWNER))

    first, second = llm.prompts
    assert second.shared == len(first.text)  # the whole first request: tools, system, its message
    assert second.newest_at > second.shared  # the first answer, then the newest message, come after it
    # The model still learns the time and the speaker: from the host's note, which comes with the newest message.
    newest = "".join(second.pieces[-2:]) if kind == "openai" else second.pieces[-1]
    assert "Monday 2026-03-02 12:00 (UTC)" in newest and "From: the owner" in newest and "and now?" in newest
    assert "11:59 (UTC)" in first.text and "12:00" not in first.text
