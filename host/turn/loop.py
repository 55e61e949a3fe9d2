"""One agent turn: call the model, run the tools it asks for (concurrently), repeat until it answers."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..config import AgentSettings
from ..errors import ContextOverflowError
from ..events import Attachment
from ..hooks.dispatch import Hooks
from ..providers.base import Completion, Provider, Usage
from ..session.transcript import Session
from .budget import Spent
from .context import ContextKeeper
from .exchange import Exchange
from .failures import failure_text
from .flush import FlushTarget
from .images import budget as image_budget
from .images import keep_attachments
from .silence import is_silent
from .stream import TurnStream
from .tool_calls import Toolbox

logger = logging.getLogger(__name__)


def progress(session: Session, inbound: str) -> list[dict[str, Any]] | None:
    """The entries of message `inbound`'s turn after its user entry (up to the next turn's), or None when it has no
    user entry (its turn never started)."""
    live = session.transcript.view().live
    start = next((i for i in range(len(live) - 1, -1, -1) if live[i].get("inbound") == inbound), None)
    if start is None:
        return None
    after = live[start + 1 :]
    end = next((i for i, entry in enumerate(after) if entry.get("kind") == "user"), len(after))
    return after[:end]


@dataclass(frozen=True)
class TurnResult:
    reply: str | None
    usage: Usage
    model_calls: int
    spent: Spent | None = None
    """The budget that kept this turn from calling the model, when one did (`budget.py`)."""
    answers: tuple[Completion, ...] = ()
    """The model's answers, each with its model, provider and usage, so the budget can price them."""


async def run_turn(
    *,
    provider: Provider,
    toolbox: Toolbox,
    session: Session,
    system: str,
    user_text: str,
    settings: AgentSettings,
    note: str = "",
    stream: TurnStream | None = None,
    flush_target: FlushTarget | None = None,
    inbound: str | None = None,
    trigger: str | None = None,
    attachments: Sequence[Attachment] = (),
    hooks: Hooks | None = None,
) -> TurnResult:
    """Record the user's text (with the host's `note` on the turn, shown before it), loop model <-> tools, and
    return the reply to deliver (None when silent).

    `inbound` (the channel's message id) is kept on the user entry, so a restart can tell how far the turn got; a
    turn for a message whose entry is already the last one (a crash cut its turn short) goes on from it.
    A context overflow compacts and retries once; a second one is answered with what happened, never looped.
    What happens is told to `stream` as it happens (`exchange.py`), compactions included. A `trigger` other than a
    message (e.g. `heartbeat`) marks every entry of the turn, so what it cost can be told apart (`hermitcrab usage`).
    The message's image `attachments` are fitted to the agent's budget and shown with its text (`images.py`).
    """
    marks = {"trigger": trigger} if trigger and trigger != "message" else {}
    stream = stream or TurnStream()
    transcript = session.transcript
    live = transcript.view().live
    if inbound is None or not live or live[-1].get("inbound") != inbound:  # else: the cut-off turn goes on
        noted = {"note": note} if note else {}
        kept = await keep_attachments(attachments, image_budget(settings), transcript.media)
        fields = {**noted, **kept.fields(), **({"inbound": inbound} if inbound else {}), **marks}
        transcript.append("user", text=kept.text(user_text), **fields)
    target = flush_target or FlushTarget()
    keeper = ContextKeeper(session, provider, toolbox, system, settings, target, stream, hooks or Hooks())
    exchange = Exchange(
        provider,
        toolbox,
        transcript,
        system,
        max_calls=settings.max_iterations,
        max_result_chars=settings.max_tool_result_chars,
        stream=stream,
        prepare=keeper.prepare,
        recover=keeper.recover,
        marks=marks,
        images=image_budget(settings),
    )
    try:
        answer = await exchange.run(session.messages())
        reply = (
            f"(stopped: the turn reached its limit of {settings.max_iterations} model calls)"
            if answer is None
            else answer
        )
    except ContextOverflowError as exc:
        logger.warning("session %s still overflows after compacting", session.key, exc_info=True)
        reply = failure_text(exc)
    reply = keeper.annotate("" if is_silent(reply) else reply)
    return TurnResult(reply or None, exchange.usage, exchange.calls, answers=tuple(exchange.answers))
