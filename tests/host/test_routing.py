"""The routing rule: the host, not the channel, decides which session a user's message belongs to."""

from __future__ import annotations

import pytest

from hermitcrab.host.events import OWNER, ChatType, Event, Target, person
from hermitcrab.host.session.routing import DmScope, routed, session_key

TARGET = Target("discord", "c-7", "u-1")


@pytest.mark.parametrize(
    ("chat", "scope", "key"),
    [
        ("direct", "main", "main"),
        ("direct", "per-peer", "dm:u-1"),
        ("direct", "per-channel-peer", "discord:dm:u-1"),
        ("group", "main", "discord:group:c-7"),
        ("group", "per-peer", "discord:group:c-7"),
        ("thread", "main", "discord:thread:c-7"),
    ],
)
def test_session_keys_by_rule(chat: ChatType, scope: DmScope, key: str):
    assert session_key(Event("message", "hi", TARGET, chat=chat, principal=OWNER), scope) == key


@pytest.mark.parametrize(
    ("scope", "key"), [("main", "dm:u-1"), ("per-peer", "dm:u-1"), ("per-channel-peer", "discord:dm:u-1")]
)
def test_nobody_but_the_owner_is_ever_routed_into_the_main_session(scope: DmScope, key: str):
    friend = person("peer", "discord", "u-1", "alice")

    assert session_key(Event("message", "hi", TARGET, chat="direct", principal=friend), scope) == key


def test_a_channel_cannot_pick_the_session_of_a_chat_message():
    sneaky = Event("message", "hi", TARGET, session_key="main", chat="group")

    assert routed(sneaky).session_key == "discord:group:c-7"


def test_events_without_a_chat_type_keep_their_session():
    hook = Event("webhook", "hi", TARGET, session_key="hook-1")

    assert routed(hook, "per-peer") is hook
