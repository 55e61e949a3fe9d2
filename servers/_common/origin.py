"""Who a tool call acts for: the calling session, whose rights it has (its principal) and the conversation it came
from (its origin), as hermitcrab puts them in the request's `_meta`.

Work that comes back later (a job's firing, a sub-agent's result) must come back with the rights and to the
conversation of whoever asked for it, not with the owner's: the origin is kept as the host gave it and handed back
on every item. A call without a principal comes from another MCP host (Claude Desktop), which is the owner's own.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast

logger = logging.getLogger(__name__)
SESSION_META = "hermitcrab/session"
PRINCIPAL_META = "hermitcrab/principal"
ORIGIN_META = "hermitcrab/origin"
Principal = Literal["owner", "peer", "group", "system"]
PRINCIPALS: dict[str, Principal] = {"owner": "owner", "peer": "peer", "group": "group", "system": "system"}
UNKNOWN_PRINCIPAL: Principal = "group"  # a principal given but not understood gets the narrowest rights there are
MAX_FIELDS = 16
MAX_NAME_CHARS = 64
MAX_VALUE_CHARS = 1_000
FIELD_CHARS = {"session": 200, "channel": 200, "to": 500, "user": 200, "label": 300}  # what hermitcrab reads back
Origin = dict[str, str | None]


@dataclass(frozen=True)
class Caller:
    session: str
    principal: Principal
    origin: Origin | None

    @property
    def is_owner(self) -> bool:
        return self.principal == "owner"

    def owns(self, origin: Origin | None) -> bool:
        """Whether work made with `origin` is this caller's to see and change: all of it for the owner, for anyone
        else only what their own session made."""
        return self.is_owner or (origin is not None and origin.get("session") == self.session)


def caller(meta: Mapping[str, Any] | None) -> Caller:
    """The caller a request's `_meta` describes; never raises, whatever the meta holds.

    A non-owner always gets an origin naming its session and principal (the host's own when it is readable and
    agrees), so nothing it leaves behind can come back with more rights than it had.
    """
    fields: dict[str, Any] = dict(meta or {})
    given = fields.get(SESSION_META)
    session = given if isinstance(given, str) and given.strip() else "main"
    origin = parse_origin(fields.get(ORIGIN_META))
    if PRINCIPAL_META in fields:
        principal = principal_of(fields[PRINCIPAL_META])
    else:
        principal = principal_of(origin["principal"]) if origin else "owner"
    if principal != "owner" and (origin is None or origin.get("principal") != principal):
        origin = narrow_origin(session, principal)
    return Caller(session, principal, origin)


def narrow_origin(session: str, principal: Principal) -> Origin:
    """The origin of a non-owner whose own could not be used: its session and rights, no conversation."""
    label = f"a {principal} session"
    return {"session": session, "principal": principal, "channel": None, "to": None, "user": None, "label": label}


def principal_of(value: object) -> Principal:
    return PRINCIPALS.get(value, UNKNOWN_PRINCIPAL) if isinstance(value, str) else UNKNOWN_PRINCIPAL


def parse_origin(value: object) -> Origin | None:
    """`value` as an origin when it is a small object of short strings and nulls naming a session and a known
    principal; else None (logged), so a malformed origin is ignored rather than stored or crashed on.

    The limits are those hermitcrab applies when it reads the origin back from an item: one it would refuse there
    must not be stored here.
    """
    if value is None:
        return None
    origin = _small_object(value)
    if origin is None or not _readable_back(origin):
        logger.warning("ignoring a malformed %s in a request's _meta", ORIGIN_META)
        return None
    return origin


def _readable_back(origin: Origin) -> bool:
    """A session, a known principal and, when given, a label in words: what hermitcrab needs to read it back."""
    return bool(origin.get("session")) and origin.get("principal") in PRINCIPALS and origin.get("label", "") is not None


def _small_object(value: object) -> Origin | None:
    if not isinstance(value, dict) or len(cast(dict[object, object], value)) > MAX_FIELDS:
        return None
    origin: Origin = {}
    for name, field in cast(dict[object, object], value).items():
        if not isinstance(name, str) or len(name) > MAX_NAME_CHARS:
            return None
        if field is not None and not (isinstance(field, str) and len(field) <= FIELD_CHARS.get(name, MAX_VALUE_CHARS)):
            return None
        origin[name] = field
    return origin
