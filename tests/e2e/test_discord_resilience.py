"""The Discord channel keeps `hermitcrab run` up: a garbled gateway dispatch is one reconnect on one socket, and a
delivery to a conversation that is no channel fails alone. The real discord.py client against the fake Discord."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.cli import wait_for
from tests.support.discord_host import CONFIG, first_reply, start_run, stop
from tests.support.fake_discord import OWNER, FakeDiscord
from tests.support.fake_llm import FakeLLM, free_port, openai_text

HOOK_TOKEN = "resilience-hook-token"


class Run:
    """`hermitcrab run` with the Discord channel on the fake and a webhook endpoint."""

    def __init__(self, home: Path, llm: FakeLLM, discord_api: FakeDiscord, log: Path) -> None:
        self.port = free_port()
        webhook = {"HERMITCRAB_WEBHOOK_LISTEN": f"127.0.0.1:{self.port}", "HERMITCRAB_WEBHOOK_TOKEN": HOOK_TOKEN}
        self.run = start_run(home, llm, discord_api, log, env=webhook)
        self.process = self.run.process

    @property
    def stderr(self) -> str:
        return self.run.stderr

    def hook(self, body: dict[str, object]) -> httpx.Response:
        url = f"http://127.0.0.1:{self.port}/hooks/agent"
        return httpx.post(url, json=body, headers={"Authorization": f"Bearer {HOOK_TOKEN}"})


@pytest.fixture
def start(hermitcrab_home: Path, llm: FakeLLM, discord_api: FakeDiscord, tmp_path: Path) -> Iterator[Callable[[], Run]]:
    (hermitcrab_home / "config.toml").write_text(CONFIG)
    started: list[Run] = []

    def launch() -> Run:
        host = Run(hermitcrab_home, llm, discord_api, tmp_path / "run.log")
        started.append(host)
        return host

    yield launch
    for host in started:
        host.run.kill()


def test_a_dispatch_discord_py_cannot_parse_reconnects_on_one_socket_and_a_dm_gets_one_reply(
    start: Callable[[], Run], discord_api: FakeDiscord, llm: FakeLLM
):
    host = start()

    discord_api.garble()
    wait_for(lambda: discord_api.identifies == 2 and discord_api.connected, f"no reconnect: {host.stderr}")

    assert discord_api.open_sockets == 1  # the old socket was closed before the new one opened
    llm.enqueue(openai_text("Connected again."))
    message = discord_api.user_says(OWNER, "are you back?")
    assert first_reply(discord_api, message).content == "Connected again."
    assert stop(host.process) == 0
    assert len(discord_api.replies_to(message)) == 1 and discord_api.open_sockets == 0


def test_a_delivery_to_a_discord_conversation_that_is_no_channel_id_fails_alone_and_the_host_keeps_serving(
    start: Callable[[], Run], discord_api: FakeDiscord, llm: FakeLLM, hermitcrab_home: Path
):
    host = start()
    llm.enqueue(openai_text("Posted to general."))

    response = host.hook({"message": "post the news", "delivery": {"channel": "discord", "to": "general"}})

    problem = "delivery.to: 'general' is not a Discord channel id"
    assert response.status_code == 400 and problem in response.text  # refused where the target is given
    assert host.process.poll() is None, host.stderr
    llm.script.clear()
    llm.enqueue(openai_text("Still here."))
    message = discord_api.user_says(OWNER, "are you still there?")
    assert first_reply(discord_api, message).content == "Still here."
    assert stop(host.process) == 0
    assert [sent.content for sent in discord_api.sent] == ["Still here."]
