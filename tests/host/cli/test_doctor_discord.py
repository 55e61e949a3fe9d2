"""`hermitcrab doctor` with a Discord bot token, checked against the fake Discord on 127.0.0.1: the token logs in,
the Message Content Intent is on, and a refused token says how to get a new one without ever being printed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hermitcrab.host.cli.app import app
from tests.support.cli_output import flowing
from tests.support.fake_discord import BOT_ID, TOKEN, FakeDiscord, running_fake_discord

runner = CliRunner()


@pytest.fixture
def discord_api() -> Iterator[FakeDiscord]:
    with running_fake_discord() as fake:
        yield fake


def doctor(home: Path, discord_api: FakeDiscord | None, token: str | None) -> str:
    """Doctor's table as one line of words, with no MCP servers to start (they have tests of their own)."""
    desktop = home / "desktop.json"
    desktop.write_text(json.dumps({"mcpServers": {}}))
    env = {"COLUMNS": "300", "DISCORD_TOKEN": token}
    if discord_api is not None:
        env["HERMITCRAB_DISCORD_API_BASE"] = discord_api.api_base
    result = runner.invoke(app, ["doctor", "--mcp-config", str(desktop)], env=env)
    return flowing(result.output)


def test_a_good_token_logs_in_as_the_bot_and_the_intent_is_on(hermitcrab_home: Path, discord_api: FakeDiscord):
    output = doctor(hermitcrab_home, discord_api, TOKEN)

    assert f"ok discord token logs in as crab ({BOT_ID})" in output
    assert "ok discord message content intent on" in output
    assert TOKEN not in output


def test_a_refused_token_says_where_to_get_a_new_one_and_is_never_printed(
    hermitcrab_home: Path, discord_api: FakeDiscord
):
    output = doctor(hermitcrab_home, discord_api, "not-the-bot-token-31337")

    assert "FAIL discord token Discord refused the bot token (HTTP 401)" in output
    assert "Reset Token" in output
    assert "31337" not in output


def test_the_intent_turned_off_fails_with_where_to_turn_it_on(hermitcrab_home: Path, discord_api: FakeDiscord):
    discord_api.message_content_intent = False

    output = doctor(hermitcrab_home, discord_api, TOKEN)

    assert "FAIL discord message content intent off: turn on Message Content Intent (Developer Portal → Bot)" in output


def test_an_unreachable_discord_is_one_line(hermitcrab_home: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("HERMITCRAB_DISCORD_API_BASE", "http://127.0.0.1:9/api/v10")  # the discard port: refused

    output = doctor(hermitcrab_home, None, TOKEN)

    assert "FAIL discord reachable cannot reach Discord at http://127.0.0.1:9/api/v10: ConnectError" in output


def test_without_a_token_doctor_says_nothing_of_discord(hermitcrab_home: Path):
    assert " discord " not in doctor(hermitcrab_home, None, None)


def test_without_an_owner_doctor_says_everyone_is_a_peer_and_how_to_name_yourself(
    hermitcrab_home: Path, discord_api: FakeDiscord
):
    without = doctor(hermitcrab_home, discord_api, TOKEN)
    (hermitcrab_home / "config.toml").write_text('[discord]\nowners = ["700000000000000001"]\n')
    named = doctor(hermitcrab_home, discord_api, TOKEN)

    assert "warn discord owner nobody is the owner, so everyone is a peer" in without and "Copy User ID" in without
    assert "ok discord owner owners: 700000000000000001" in named
