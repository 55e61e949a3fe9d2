"""The Sessions page's `/new` and `/compact`: the owner's slash commands, run in the session's own queue.

Going through the gateway, like a command typed in any channel, keeps the command behind a turn running in that
session (a compaction never summarises a turn halfway) and makes it the same command (`/new` saves the last messages
and keeps the old transcript). Its reply comes back through a channel of the dashboard's own, which hands it to the
page that asked as a notice.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable

import anyio

from hermitcrab.host.events import Event, Target, system
from hermitcrab.host.gateway.gateway import Gateway

NAME = "dashboard"
WAIT_S = 30.0
"""How long the page waits for the reply; a turn running in the session may take longer, and then the reply shows
on the next page the owner opens."""
OWNER = system("the owner, from the dashboard", "owner")
"""The owner's rights, as a system event: the dashboard is not a conversation, so it never becomes the owner's last
one (where reminders go)."""


class SessionCommands:
    """A channel the gateway delivers the replies of the dashboard's commands to, each to the request that asked."""

    name = NAME

    def __init__(self) -> None:
        self._waiting: dict[str, Callable[[str], None]] = {}

    async def send(self, target: Target, text: str) -> None:
        reply = self._waiting.get(target.conversation)
        if reply is None:
            raise LookupError("nobody waits for the answer of that dashboard command any more")
        reply(text)

    async def typing(self, target: Target) -> None:
        return None

    async def run(self, gateway: Gateway, key: str, command: str, later: Callable[[str], None]) -> str:
        """`command` run in session `key` after what is queued there: its reply, or, when that takes longer than
        `WAIT_S`, a sentence saying so (the reply then goes to `later`)."""
        ticket = secrets.token_urlsafe(12)
        said: list[str] = []
        finished = anyio.Event()
        waiting = True

        def reply(text: str) -> None:
            if waiting:
                said.append(text)
            else:
                later(text)

        async def ended(handled: bool, error: str | None) -> None:
            self._waiting.pop(ticket, None)
            finished.set()

        self._waiting[ticket] = reply
        event = Event("message", command, Target(NAME, ticket), session_key=key, principal=OWNER, on_done=ended)
        await gateway.submit(event)
        with anyio.move_on_after(WAIT_S):
            await finished.wait()
        waiting = False
        if finished.is_set():
            return "\n".join(said) or f"{command} ran."
        return f"{command} waits for the turn running in this session; its answer will show here once it ran."


def session_commands(gateway: Gateway) -> SessionCommands:
    """The gateway's `SessionCommands` channel, plugged in the first time a page needs it."""
    found = gateway.channels.get(NAME)
    if isinstance(found, SessionCommands):
        return found
    commands = SessionCommands()
    gateway.add_channel(commands)
    return commands
