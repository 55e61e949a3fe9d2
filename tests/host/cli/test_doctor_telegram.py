"""`hermitcrab doctor` with a Telegram bot token, checked against the fake Bot API on 127.0.0.1: the token logs in
(getMe), and what is wrong (a refused token, a webhook set, privacy mode for a group that needs no mention, an
unreachable server) is one sentence saying what to do, the token never printed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hermitcrab.host.cli.app import app
from tests.support.cli_output import flowing
from tests.support.fake_telegram import BOT_ID, BOT_USERNAME, GROUP, OWNER, TOKEN, FakeTelegram, running_fake_telegram

runner = CliRunner()


@pytest.fixture
def telegram() -> Iterator[FakeTelegram]:
    with running_fake_telegram() as fake:
        yield fake


def doctor(home: Path, api_base: str, token: str | None, config: str = "") -> str:
    """Doctor's table as one line of words, with no MCP servers to start."""
    desktop = home / "desktop.json"
    desktop.write_text(json.dumps({"mcpServers": {}}))
    (home / "config.toml").write_text(config)
    env = {"COLUMNS": "300", "TELEGRAM_BOT_TOKEN": token, "HERMITCRAB_TELEGRAM_API_BASE": api_base}
    return flowing(runner.invoke(app, ["doctor", "--mcp-config", str(desktop)], env=env).output)


def test_a_good_token_logs_in_as_the_bot(hermitcrab_home: Path, telegram: FakeTelegram):
    output = doctor(hermitcrab_home, telegram.api_base, TOKEN, f'[telegram]\nowners = ["{OWNER}"]\n')

    assert f"ok telegram token logs in as @{BOT_USERNAME} ({BOT_ID})" in output
    assert f"ok telegram owner owners: {OWNER}" in output
    assert "telegram webhook" not in output and "privacy" not in output and TOKEN not in output


def test_a_refused_token_says_where_to_get_it_and_is_never_printed(hermitcrab_home: Path, telegram: FakeTelegram):
    output = doctor(hermitcrab_home, telegram.api_base, "999:not-the-token-31337")

    assert "FAIL telegram token Telegram refused the bot token: copy it again from @BotFather (/token)" in output
    assert "31337" not in output
    assert "warn telegram owner nobody is the owner, so everyone is a peer" in output and "@userinfobot" in output


def test_a_webhook_and_privacy_mode_are_named_with_their_fix(hermitcrab_home: Path, telegram: FakeTelegram):
    telegram.webhook = "https://example.org/hook?secret=1"
    config = f'[telegram.groups."{GROUP}"]\nrequire_mention = false\n'

    output = doctor(hermitcrab_home, telegram.api_base, TOKEN, config)

    assert "FAIL telegram webhook a webhook is set (https://example.org/hook), so Telegram refuses getUpdates" in output
    assert f"warn telegram privacy mode privacy mode is on, so in {GROUP} (require_mention = false)" in output
    assert "/setprivacy → Disable" in output and "secret" not in output


def test_an_unreachable_telegram_is_one_line_without_the_token(hermitcrab_home: Path):
    output = doctor(hermitcrab_home, "http://127.0.0.1:9", TOKEN)  # the discard port: refused

    assert "FAIL telegram reachable cannot reach Telegram at http://127.0.0.1:9: ConnectError" in output
    assert TOKEN not in output


def test_without_a_token_doctor_says_nothing_of_telegram(hermitcrab_home: Path):
    assert " telegram " not in doctor(hermitcrab_home, "http://127.0.0.1:9", None)
