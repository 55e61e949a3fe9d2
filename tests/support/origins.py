"""The `_meta` a host sends a server with each call: the session, who the turn acts for, and where it came from."""

from __future__ import annotations

from typing import Any

GROUP_SESSION = "discord:group:777"
GROUP_ORIGIN = {
    "session": GROUP_SESSION,
    "principal": "group",
    "channel": "discord",
    "to": "channel:777",
    "user": "555",
    "label": "discord user 555 (alice), a group member",
}
OWNER_ORIGIN = {
    "session": "main",
    "principal": "owner",
    "channel": "discord",
    "to": "dm:1",
    "user": "1",
    "label": "the owner (discord user 1)",
}


def meta(origin: Any = None, session: str | None = None, principal: Any = None) -> dict[str, Any]:
    """The `_meta` hermitcrab sends: the session, and who the turn acts for when given."""
    fields: dict[str, Any] = {"hermitcrab/session": session or (origin or {}).get("session", "main")}
    if principal is not None:
        fields["hermitcrab/principal"] = principal
    if origin is not None:
        fields["hermitcrab/origin"] = origin
    return fields


GROUP = meta(GROUP_ORIGIN, principal="group")
OWNER = meta(OWNER_ORIGIN, principal="owner")
