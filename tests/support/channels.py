"""The tests' one fake channel, `RecordingChannel`: it records what it is sent, and its options give it what a real
channel may have (a display, a prompt of its own, an idle sign, a user who answers, a conversation it cannot reach)."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence

import anyio

from hermitcrab.host.config import Settings
from hermitcrab.host.events import OWNER, Event, Target
from hermitcrab.host.gateway.gateway import Gateway
from hermitcrab.host.mcp.pool import McpPool
from hermitcrab.host.providers import Provider
from hermitcrab.host.session.transcript import SessionStore
from hermitcrab.host.turn.agent import Agent

Prompt = Callable[[str], Awaitable[str | None]]
"""A channel's own prompt: shown `question`, returns what the user chose or typed (None: withdrawn)."""


def button(answer: str | None) -> Prompt:
    """A prompt answered at once with `answer`; with None it is never answered (it waits until withdrawn)."""

    async def press(question: str) -> str | None:
        if answer is None:
            await anyio.sleep_forever()
        return answer

    return press


class RecordingChannel:
    """Records what it is sent: `sent` (target and text), `texts`, `replies` by conversation, and `turn_s`, the time
    from each `typing` to the reply; `next_message` waits for the next one. Each option adds one behaviour:

    - `display`: what it can show, told to the model each turn (the `Describes` capability, as Discord has);
    - `answer`: a user who types `answer`, through `gateway`, in reply to any message containing `trigger`;
    - `prompt`: a prompt of its own for questions (the `Asks` capability, like buttons or the CLI's stdin); it keeps
      the questions in `prompts`, the most open at once in `most_open`, and how many were withdrawn in `withdrawn`;
    - `idles`: takes its typing sign down at the end of each turn (the `Idles` capability), noted in `idle_after`;
    - `fail`: the error a send to a target raises instead of being delivered (None: delivered).
    """

    display: str
    ask: Callable[[Target, str, Sequence[str] | None], Awaitable[str | None]]
    idle: Callable[[Target], Awaitable[None]]

    def __init__(
        self,
        name: str = "test",
        *,
        display: str | None = None,
        answer: str | None = None,
        trigger: str = "server asks:",
        prompt: Prompt | None = None,
        idles: bool = False,
        fail: Callable[[Target], Exception | None] | None = None,
    ) -> None:
        self.name = name
        self.sent: list[tuple[Target, str]] = []
        self.new_message = anyio.Event()
        self.started: dict[str, float] = {}
        self.turn_s: list[float] = []
        self.answer, self.trigger = answer, trigger
        self.gateway: Gateway | None = None
        self.fail = fail
        self.prompts: list[str] = []
        self.open = self.most_open = self.withdrawn = 0
        self.idle_after: list[str] = []
        self._prompt = prompt
        # capabilities are found by isinstance on the instance, so each is there only when asked for
        if display is not None:
            self.display = display
        if prompt is not None:
            self.ask = self._ask
        if idles:
            self.idle = self._idle

    @property
    def texts(self) -> list[str]:
        return [text for _, text in self.sent]

    @property
    def replies(self) -> defaultdict[str, list[str]]:
        by_conversation: defaultdict[str, list[str]] = defaultdict(list)
        for target, text in self.sent:
            by_conversation[target.conversation].append(text)
        return by_conversation

    async def send(self, target: Target, text: str) -> None:
        error = self.fail(target) if self.fail is not None else None
        if error is not None:
            raise error
        self.sent.append((target, text))
        started = self.started.pop(target.conversation, None)
        if started is not None:
            self.turn_s.append(time.perf_counter() - started)
        self.new_message.set()
        self.new_message = anyio.Event()
        if self.answer is not None and self.trigger in text and self.gateway is not None:
            await self.gateway.submit(Event("message", self.answer, target, principal=OWNER))

    async def typing(self, target: Target) -> None:
        self.started[target.conversation] = time.perf_counter()

    async def next_message(self) -> str:
        with anyio.fail_after(5):
            await self.new_message.wait()
        return self.sent[-1][1]

    async def _ask(self, target: Target, question: str, choices: Sequence[str] | None = None) -> str | None:
        assert self._prompt is not None
        self.prompts.append(question)
        self.open += 1
        self.most_open = max(self.most_open, self.open)
        try:
            return await self._prompt(question)
        except anyio.get_cancelled_exc_class():
            self.withdrawn += 1
            raise
        finally:
            self.open -= 1

    async def _idle(self, target: Target) -> None:
        self.idle_after.append(target.conversation)


async def run_turn_with_servers(
    settings: Settings, provider: Provider, channel: RecordingChannel, event: Event
) -> None:
    """One turn through a real pool and gateway, with `channel` answering the questions it is sent."""
    async with McpPool(settings.servers) as pool:
        agent = Agent(settings, provider, pool, SessionStore(settings.home / "sessions"))
        channel.gateway = Gateway(agent, {channel.name: channel}, ask_timeout_s=10)
        await channel.gateway.process(event)
