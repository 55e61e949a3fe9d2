"""The contract between the host and channel adapters: an Event coming in, a Channel to answer on."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    from .providers.base import Usage

EventKind = Literal["message", "heartbeat", "cron", "webhook", "subagent", "server", "hook"]
Rights = Literal["owner", "peer", "group", "system"]
"""Whose rights a turn has, which picks its tool policy (`[policy.<rights>]`): the owner's; an approved or allowlisted
person's who is not the owner (`peer`); someone's in a group conversation (`group`); a program's with no owner rights
(`system`, e.g. a webhook unless configured otherwise)."""
ChatType = Literal["direct", "group", "thread"]
"""What kind of conversation a user's message came from; the host derives its session from it (`routing.py`)."""
OnDone = Callable[[bool, str | None], Awaitable[None]]
"""Told whether the event was handled, and if not why (one line)."""


@dataclass(frozen=True)
class Target:
    """Where replies go: a channel name plus the conversation id inside that channel."""

    channel: str
    conversation: str
    user: str | None = None
    reply_to: str | None = field(default=None, compare=False)
    """The message this answers, for IMs that thread replies; not part of the conversation's identity."""


@dataclass(frozen=True)
class Principal:
    """Who an event comes from, as the host decides it (never the model, a tool argument or the text itself).

    `kind` is who is talking: the owner, a peer, a group member, or the system (cron, heartbeat, webhooks, servers,
    sub-agents); `rights` whose tool policy the turn gets (a system event carries the rights of whoever created it);
    `label` how the model is told who it is; `data` whether the event's text reaches the model fenced as data rather
    than as the owner's instructions.
    """

    kind: Rights
    rights: Rights
    label: str
    user: str | None = None
    data: bool = False

    @property
    def is_owner(self) -> bool:
        return self.rights == "owner"


OWNER = Principal("owner", "owner", "the owner")
"""The terminal, `hermitcrab ask` and the CLI: whoever sits at the host's own keyboard is the owner."""


def person(kind: Literal["owner", "peer", "group"], channel: str, user: str, name: str | None = None) -> Principal:
    """A person in a chat channel: the owner, an approved peer, or a member of a group conversation."""
    who = f"{channel} user {user}" + (f" ({name})" if name else "")
    label = {
        "owner": f"the owner ({who})",
        "peer": f"{who}, an approved friend, not the owner",
        "group": f"{who}, a member of a group conversation, not the owner",
    }[kind]
    return Principal(kind, kind, label, user, data=kind != "owner")


def system(label: str, rights: Rights = "system", *, data: bool | None = None) -> Principal:
    """A system event (cron, heartbeat, webhook, server, sub-agent) with the rights of whoever set it up."""
    return Principal("system", rights, label, data=rights != "owner" if data is None else data)


@dataclass(frozen=True)
class Attachment:
    """A file sent with a message that the channel saved where the host can read it: an image the model is shown
    in the message's turn (its text names the file too, for a model without vision and for the tools)."""

    path: str
    media_type: str
    name: str


NOWHERE = Target("none", "none")
"""The target of an event whose reply is not delivered (`deliver=False`): no conversation was known for it."""


@dataclass(frozen=True)
class Event:
    """One trigger for the agent: a user message, a timer, a webhook call, a server event."""

    kind: EventKind
    text: str
    target: Target
    session_key: str = "main"
    chat: ChatType | None = None
    """Set by chat channels: the host then picks `session_key` by its routing rule, never the channel."""
    metadata: dict[str, Any] = field(default_factory=dict[str, Any])
    deliver: bool = True
    principal: Principal = field(default_factory=lambda: system("an unnamed source"))
    """Who the event comes from; a channel that says nothing gets no rights at all."""
    inbound_id: str | None = None
    """The channel's own id of the message (`discord:<message id>`): `hermitcrab run` records the message under it
    before its turn and answers it exactly once, across crashes and restarts (`inbox.py`)."""
    on_done: OnDone | None = field(default=None, compare=False, repr=False)
    """Called with True once the event's turn finished and its reply was delivered (or it had been handled before),
    the moment a server's queue item may be acknowledged; with False when the turn failed."""
    attachments: tuple[Attachment, ...] = ()
    """Images sent with a user's message, shown to a model that takes images in the same turn."""


class Channel(Protocol):
    """What every channel adapter offers the host; it knows nothing about models or tools.

    A channel may offer more, each a capability of its own below; the gateway asks `isinstance(channel, Asks)`
    rather than guessing attribute names, so what a capability means is written down once, here.
    """

    name: str

    async def send(self, target: Target, text: str) -> None:
        """Deliver `text` to the conversation; raise if delivery failed."""
        ...

    async def typing(self, target: Target) -> None:
        """Show that the agent is working, where the IM supports it."""
        ...


@runtime_checkable
class Describes(Protocol):
    """A channel that says what it can show (Markdown? tables? a person at all?), told to the model each turn."""

    display: str


AttachmentKind = Literal["image", "text", "voice"]
"""What a chat channel makes of a file sent to it: an image saved and put in `Event.attachments` (its text names the
file too), a text file inlined in the message (size-capped), a voice note saved with its path given."""


@runtime_checkable
class ChatLimits(Protocol):
    """A chat app's own limits, declared by its channel so that a new one states them rather than a reader finding
    them in its code: `message_limit` characters in one message (the channel cuts a longer reply itself, on line
    boundaries with code blocks whole, and says so in `display`), and the kinds of file it takes in."""

    message_limit: int
    attachments_in: tuple[AttachmentKind, ...]


@runtime_checkable
class Asks(Protocol):
    """A channel with its own way to put a question (buttons, a prompt); a typed reply answers it too."""

    async def ask(self, target: Target, question: str, choices: Sequence[str] | None = None) -> str | None:
        """Show the question; return the choice or text given, or None when withdrawn (cancelled) or unanswered."""
        ...


@runtime_checkable
class Idles(Protocol):
    """A channel whose "working" sign (`typing`) must be taken down once the turn ends."""

    async def idle(self, target: Target) -> None: ...


@runtime_checkable
class ChecksConversations(Protocol):
    """A channel that can tell whether a conversation id names something it can deliver to."""

    def check_conversation(self, to: str) -> str | None:
        """Why `to` cannot be delivered to, naming the field; None when it can be tried."""
        ...


@runtime_checkable
class WaitsReady(Protocol):
    """A channel that connects after it starts (a gateway login): recovery waits for it before answering."""

    async def wait_ready(self) -> None: ...


# A turn as a stream of events: what the loop emits while it works, for channels, the terminal and hooks.


@dataclass(frozen=True)
class TextDelta:
    """A piece of the model's answer as it arrives; the pieces of one message concatenate to its text."""

    text: str


@dataclass(frozen=True)
class MessageDone:
    """One model message is complete: its whole text and how many tool calls it asked for (0 for an answer)."""

    text: str
    tool_calls: int


@dataclass(frozen=True)
class ToolStarted:
    """The model's tool call began running."""

    call_id: str
    name: str
    arguments: str
    """The call's arguments, shortened to one line for a progress line; never the whole value."""


@dataclass(frozen=True)
class ToolFinished:
    """A tool call ended: whether it succeeded and how long it ran."""

    call_id: str
    name: str
    ok: bool
    duration_s: float


@dataclass(frozen=True)
class Question:
    """The agent asked the person a question and waits for the answer."""

    text: str


@dataclass(frozen=True)
class Compaction:
    """The conversation was compacted to fit the model's window; sizes in characters."""

    before_chars: int
    after_chars: int


@dataclass(frozen=True)
class Delivered:
    """The turn's reply went out to `to` on `channel`."""

    channel: str
    to: str


@dataclass(frozen=True)
class TurnDone:
    """The turn ended: its reply (None when silent) and the usage of all its model calls."""

    reply: str | None
    usage: Usage


TurnEvent = TextDelta | MessageDone | ToolStarted | ToolFinished | Question | Compaction | Delivered | TurnDone
Listener = Callable[[TurnEvent], Awaitable[None]]
"""A subscriber to a turn's events, awaited once per event in order."""


@runtime_checkable
class Streams(Protocol):
    """A channel that shows a turn as it happens (a draft edited as the tokens come, an event stream).

    A chat app's channel streams by editing: one message posted once there is something to show, edited in place
    (throttled to the app's edit limits), and made the reply by its `send`, so one reply is never two messages.

    The turn's events (`TextDelta` ... `TurnDone` above) are fanned out by `host/turn/stream.py`: they reach the
    listener in order, from a queue of its own, so a slow listener holds up neither the model nor the others.
    """

    def listener(self, target: Target) -> Listener | None:
        """The subscriber for one turn answering `target`; None when this channel does not stream to it."""
        ...
