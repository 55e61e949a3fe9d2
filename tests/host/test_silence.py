"""A silent reply (NO_REPLY) never shows, not even while it streams; every other answer streams word for word."""

from __future__ import annotations

import pytest

from hermitcrab.host.events import TextDelta, TurnEvent
from hermitcrab.host.turn.silence import Unsilenced
from hermitcrab.host.turn.stream import TurnStream


async def told(pieces: list[str]) -> list[str]:
    heard: list[TurnEvent] = []

    async def hear(event: TurnEvent) -> None:
        heard.append(event)

    async with TurnStream([hear]) as stream:
        text = Unsilenced(stream)
        for piece in pieces:
            text.add(piece)
        text.end("".join(pieces))
    return [event.text for event in heard if isinstance(event, TextDelta)]


@pytest.mark.parametrize(
    ("pieces", "expected"),
    [
        (["NO", "_RE", "PLY"], []),
        ([" NO_REPLY", "\n"], []),
        (["NO", " one", " knows"], ["NO one", " knows"]),
        (["Hello", " there"], ["Hello", " there"]),
        (["NO"], ["NO"]),
        (["NO_REPLY", " after all, here it is"], ["NO_REPLY after all, here it is"]),
    ],
)
async def test_only_what_cannot_become_silent_is_told_and_held_words_come_out_once(
    pieces: list[str], expected: list[str]
):
    assert await told(pieces) == expected
