"""Where a turn comes from and whom it acts for: told to servers on every call, read back from their queued items.

Every tool call carries, in the request's `_meta`, `hermitcrab/principal` (the turn's rights: owner, peer, group or
system) and `hermitcrab/origin` (`{session, principal, channel, to, user, label}`). A server that queues work for
later (a cron job, a sub-agent) stores the origin and hands it back on each item it queues, so the host runs that
work with its creator's rights, never in the owner's main session when the creator was someone else, and delivers
it by default to the conversation it came from (`triggers.py`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..events import NOWHERE, Principal, Rights, Target, system

PRINCIPAL_META = "hermitcrab/principal"
ORIGIN_META = "hermitcrab/origin"


class Origin(BaseModel):
    """The origin a server hands back on an item; anything it cannot vouch for is left out."""

    model_config = ConfigDict(extra="ignore")

    session: str = Field(min_length=1, max_length=200)
    principal: Rights
    channel: str | None = Field(default=None, max_length=200)
    to: str | None = Field(default=None, max_length=500)
    user: str | None = Field(default=None, max_length=200)
    label: str = Field(default="", max_length=300)

    @property
    def target(self) -> Target | None:
        """The conversation the work was asked for in, when there was one."""
        return Target(self.channel, self.to) if self.channel and self.to else None

    def principal_for(self, what: str, *, data: bool | None = None) -> Principal:
        """A system event (`what`, e.g. 'cron job "x"') with the rights of whoever created it."""
        who = self.label or ("the owner" if self.principal == "owner" else f"a {self.principal} session")
        return system(f"{what}, set up by {who} in session {self.session!r}", self.principal, data=data)


def caller_meta(principal: Principal, session: str, target: Target) -> dict[str, Any]:
    """The `_meta` entries that tell a server whom a call acts for and where it came from."""
    where = target if target != NOWHERE else Target("", "")
    origin = {
        "session": session,
        "principal": principal.rights,
        "channel": where.channel or None,
        "to": where.conversation or None,
        "user": principal.user or target.user,
        "label": principal.label,
    }
    return {PRINCIPAL_META: principal.rights, ORIGIN_META: origin}
