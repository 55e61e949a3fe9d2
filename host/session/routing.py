"""The routing rule: which session a user's message belongs to, decided by the host for every channel.

The owner's direct messages share the main session unless `dm_scope` splits them per person (`per-peer`) or per
person and channel (`per-channel-peer`); anyone else's direct messages get a session of their own (`per-peer` at
least), so an approved friend never reads the owner's main session; every group conversation and every thread has a
session of its own. Channels only say what kind of conversation a message came from (`Event.chat`) and who wrote it
(`Event.principal`), so none can put a stranger into the main session by mistake or by choice.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

from ..events import Event

DmScope = Literal["main", "per-peer", "per-channel-peer"]


def session_key(event: Event, dm_scope: DmScope = "main") -> str:
    """The session of `event` by the rule above; events without a chat type keep the key they were given."""
    target = event.target
    if event.chat is None:
        return event.session_key
    if event.chat != "direct":
        return f"{target.channel}:{event.chat}:{target.conversation}"
    peer = target.user or target.conversation
    if dm_scope == "main" and not event.principal.is_owner:
        dm_scope = "per-peer"
    if dm_scope == "per-peer":
        return f"dm:{peer}"
    if dm_scope == "per-channel-peer":
        return f"{target.channel}:dm:{peer}"
    return "main"


def routed(event: Event, dm_scope: DmScope = "main") -> Event:
    key = session_key(event, dm_scope)
    return event if key == event.session_key else replace(event, session_key=key)


def shared(session_key: str) -> bool:
    """Whether a session is a group conversation's or a thread's (by the keys above): others read its transcript."""
    parts = session_key.split(":")
    return len(parts) >= 3 and parts[1] in ("group", "thread")
