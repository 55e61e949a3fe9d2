"""The routing rule: which session a user's message belongs to, decided by the host for every channel.

Direct messages share the main session unless `dm_scope` splits them per person (`per-peer`) or per person and
channel (`per-channel-peer`); every group conversation and every thread has a session of its own. Channels only say
what kind of conversation a message came from (`Event.chat`), so none can put a stranger into the main session by
mistake or by choice.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

from .events import Event

DmScope = Literal["main", "per-peer", "per-channel-peer"]


def session_key(event: Event, dm_scope: DmScope = "main") -> str:
    """The session of `event` by the rule above; events without a chat type keep the key they were given."""
    target = event.target
    if event.chat is None:
        return event.session_key
    if event.chat != "direct":
        return f"{target.channel}:{event.chat}:{target.conversation}"
    peer = target.user or target.conversation
    if dm_scope == "per-peer":
        return f"dm:{peer}"
    if dm_scope == "per-channel-peer":
        return f"{target.channel}:dm:{peer}"
    return "main"


def routed(event: Event, dm_scope: DmScope = "main") -> Event:
    key = session_key(event, dm_scope)
    return event if key == event.session_key else replace(event, session_key=key)
