"""The web channel: the dashboard's Chat page, where the owner talks to the agent from a browser (being built)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from hermitcrab.host.events import Event, Target


class WebChannel:
    """The owner's conversations in the dashboard's Chat page."""

    name = "web"
    display = "a web page: Markdown, tables and code blocks render; long output is fine"

    def __init__(self, submit: Callable[[Event], Awaitable[None]]) -> None:
        self._submit = submit

    async def send(self, target: Target, text: str) -> None:
        raise LookupError("the web channel is being built")

    async def typing(self, target: Target) -> None:
        return None
