"""The [discord] and [routing] tables: safe defaults, guild rules, environment overrides, helpful errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermitcrab.host.config import DiscordChannelRule, load_settings
from hermitcrab.host.errors import ConfigError


def test_defaults_are_safe_and_discord_is_off_without_a_token(tmp_path: Path):
    settings = load_settings({"HERMITCRAB_HOME": str(tmp_path)})

    assert settings.discord.token is None and settings.discord.dm_policy == "pairing"
    assert settings.discord.guilds == {} and settings.dm_scope == "main"


def test_guild_rules_and_environment_overrides(tmp_path: Path):
    (tmp_path / "config.toml").write_text(
        '[routing]\ndm_scope = "per-peer"\n'
        '[discord]\ntoken = "from-file"\ndm_policy = "allowlist"\nallow_from = ["1"]\n'
        '[discord.guilds."10"]\nusers = ["2"]\n[discord.guilds."10".channels."20"]\nrequire_mention = false\n'
    )
    env = {
        "HERMITCRAB_HOME": str(tmp_path),
        "DISCORD_TOKEN": "from-env",
        "HERMITCRAB_DISCORD_API_BASE": "http://127.0.0.1:9/api/v10",
        "HERMITCRAB_DISCORD_GATEWAY_URL": "ws://127.0.0.1:9/gateway",
    }

    settings = load_settings(env)
    discord = settings.discord

    assert (discord.token, discord.dm_policy, discord.allow_from) == ("from-env", "allowlist", ("1",))
    assert discord.guilds["10"].require_mention and discord.guilds["10"].users == ("2",)
    assert discord.guilds["10"].channels == {"20": DiscordChannelRule(allow=True, require_mention=False)}
    assert (discord.api_base, discord.gateway_url) == (
        env["HERMITCRAB_DISCORD_API_BASE"],
        env["HERMITCRAB_DISCORD_GATEWAY_URL"],
    )
    assert settings.dm_scope == "per-peer" and "from-env" not in repr(settings)


@pytest.mark.parametrize(
    ("toml", "says"),
    [
        ('[discord]\ndm_policy = "everyone"\n', "discord.dm_policy"),
        ('[discord.guilds."1"]\nrequire_mentions = false\n', "did you mean 'require_mention'"),
        ('[routing]\ndm_scope = "per-user"\n', "routing.dm_scope"),
    ],
)
def test_mistakes_name_the_key(tmp_path: Path, toml: str, says: str):
    (tmp_path / "config.toml").write_text(toml)

    with pytest.raises(ConfigError, match=says):
        load_settings({"HERMITCRAB_HOME": str(tmp_path)})
