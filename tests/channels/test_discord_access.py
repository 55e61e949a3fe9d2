"""Who may talk to the bot: DM policies and the guild allowlist with its mention rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermitcrab.channels.discord.access import Access, DmPolicy, Where
from hermitcrab.channels.pairing import Issued, PairingStore
from hermitcrab.host.config import DiscordChannelRule, DiscordGuildRule

GUILDS = {
    "g1": DiscordGuildRule(),
    "g2": DiscordGuildRule(
        require_mention=False,
        users=("alice",),
        channels={"quiet": DiscordChannelRule(require_mention=True), "off": DiscordChannelRule(allow=False)},
    ),
}


def access(tmp_path: Path, policy: DmPolicy = "pairing") -> Access:
    return Access(policy, ("owner",), GUILDS, PairingStore(tmp_path))


@pytest.mark.parametrize(
    ("policy", "owner", "stranger"),
    [
        ("pairing", "answer", "pair"),
        ("allowlist", "answer", "ignore"),
        ("open", "answer", "answer"),
        ("disabled", "ignore", "ignore"),
    ],
)
def test_dm_policies(tmp_path: Path, policy: DmPolicy, owner: str, stranger: str):
    rules = access(tmp_path, policy)

    assert (rules.direct("owner"), rules.direct("stranger")) == (owner, stranger)


def test_a_paired_user_is_answered(tmp_path: Path):
    rules = access(tmp_path)
    outcome = rules.pairing.request("discord", "bob", "bob")
    assert isinstance(outcome, Issued)
    rules.pairing.approve(outcome.request.code)

    assert rules.direct("bob") == "answer"


def test_guilds_are_silent_unless_listed_and_need_a_mention_by_default(tmp_path: Path):
    rules = access(tmp_path)

    assert rules.in_guild(Where("elsewhere", "c"), "owner") == "ignore"
    assert rules.in_guild(Where("g1", "any"), "anyone") == "if-mentioned"


def test_a_guild_with_listed_channels_and_users(tmp_path: Path):
    rules = access(tmp_path)

    assert rules.in_guild(Where("g2", "quiet"), "alice") == "if-mentioned"
    assert rules.in_guild(Where("g2", "thread-9", parent="quiet"), "alice") == "if-mentioned"
    assert rules.in_guild(Where("g2", "off"), "alice") == "ignore"
    assert rules.in_guild(Where("g2", "unlisted"), "alice") == "ignore"
    assert rules.in_guild(Where("g2", "quiet"), "mallory") == "ignore"


def test_a_channel_rule_can_drop_the_mention(tmp_path: Path):
    rules = Access(
        "pairing",
        (),
        {"g": DiscordGuildRule(channels={"c": DiscordChannelRule(require_mention=False)})},
        PairingStore(tmp_path),
    )

    assert rules.in_guild(Where("g", "c"), "x") == "answer"
