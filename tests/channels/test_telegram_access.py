"""Telegram's [telegram] table and who it lets in: safe defaults (off without a token, pairing, no groups), groups by
chat id answering mentions, the environment's overrides, a wrong key named; the token never in a repr."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermitcrab.channels.access import People
from hermitcrab.channels.pairing import PairingStore
from hermitcrab.channels.telegram import TelegramAccess
from hermitcrab.host.config import TelegramSettings, load_settings
from hermitcrab.host.errors import ConfigError

CONFIG = """
[telegram]
token = "from-file"
owners = ["1"]
allow_from = ["2"]
[telegram.groups."-100"]
users = ["3"]
[telegram.groups."-200"]
require_mention = false
"""


def access(config: TelegramSettings, pairing: Path) -> TelegramAccess:
    people = People("telegram", config.dm_policy, config.allow_from, PairingStore(pairing), config.owners)
    return TelegramAccess(people, config.groups)


def test_defaults_are_safe_and_telegram_is_off_without_a_token(tmp_path: Path):
    config = load_settings({"HERMITCRAB_HOME": str(tmp_path)}).telegram
    rules = access(config, tmp_path / "pairing")

    assert config.token is None and config.dm_policy == "pairing" and config.groups == {}
    assert (config.stream, config.stream_in_groups) == ("partial", "progress")
    assert rules.people.direct("5") == "pair" and rules.in_group("-100", "5") == "ignore"


def test_owners_peers_and_groups_by_chat_id(tmp_path: Path):
    (tmp_path / "config.toml").write_text(CONFIG)
    env = {"HERMITCRAB_HOME": str(tmp_path), "TELEGRAM_BOT_TOKEN": "from-env", "HERMITCRAB_TELEGRAM_STREAM": "off"}
    settings = load_settings(env)
    rules = access(settings.telegram, tmp_path / "pairing")

    assert (settings.telegram.token, settings.telegram.stream) == ("from-env", "off")
    assert "from-env" not in repr(settings)
    assert [rules.people.direct(user) for user in ("1", "2", "4")] == ["answer", "answer", "pair"]
    assert rules.people.principal("1", "direct").is_owner and rules.people.principal("2", "direct").kind == "peer"
    assert rules.people.principal("3", "group").label.startswith("telegram user 3")
    assert [rules.in_group("-100", user) for user in ("3", "1", "4")] == ["if-mentioned", "if-mentioned", "ignore"]
    assert rules.in_group("-200", "4") == "answer" and rules.in_group("-300", "1") == "ignore"


@pytest.mark.parametrize(
    ("toml", "says"),
    [
        ('[telegram]\ndm_policy = "everyone"\n', "telegram.dm_policy"),
        ('[telegram.groups."-1"]\nrequire_mentions = false\n', "did you mean 'require_mention'"),
        ('[telegram]\nstream_in_guilds = "off"\n', "did you mean 'stream_in_groups'"),
    ],
)
def test_mistakes_name_the_key(tmp_path: Path, toml: str, says: str):
    (tmp_path / "config.toml").write_text(toml)

    with pytest.raises(ConfigError, match=says):
        load_settings({"HERMITCRAB_HOME": str(tmp_path)})
