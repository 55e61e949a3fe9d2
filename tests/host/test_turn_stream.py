"""TurnStream: one turn's events fanned out to every listener, in order, none able to stall or break the turn."""

from __future__ import annotations

import logging

import anyio
import pytest

from hermitcrab.host.events import MessageDone, TextDelta, TurnEvent
from hermitcrab.host.turn.stream import TurnStream


class Recorder:
    def __init__(self) -> None:
        self.events: list[TurnEvent] = []

    async def __call__(self, event: TurnEvent) -> None:
        self.events.append(event)


async def test_every_listener_gets_every_event_in_order_before_the_block_ends():
    first, second = Recorder(), Recorder()
    sent = [TextDelta("Hel"), TextDelta("lo"), MessageDone("Hello", 0)]
    async with TurnStream([first, second]) as stream:
        for event in sent:
            stream.emit(event)
    assert first.events == sent
    assert second.events == sent


async def test_a_slow_listener_holds_up_neither_emit_nor_the_other_listeners():
    release = anyio.Event()
    fast = Recorder()
    slow_seen: list[TurnEvent] = []

    async def slow(event: TurnEvent) -> None:
        await release.wait()
        slow_seen.append(event)

    async with TurnStream([slow, fast]) as stream:
        for n in range(50):
            stream.emit(TextDelta(str(n)))  # returns at once although `slow` has taken none yet
        while len(fast.events) < 50:
            await anyio.sleep(0)
        assert slow_seen == []
        release.set()
    assert [e.text for e in slow_seen if isinstance(e, TextDelta)] == [str(n) for n in range(50)]


async def test_a_listener_that_raises_is_dropped_and_the_turn_and_others_go_on(caplog: pytest.LogCaptureFixture):
    calls: list[TurnEvent] = []

    async def broken(event: TurnEvent) -> None:
        calls.append(event)
        raise RuntimeError("channel gone")

    good = Recorder()
    with caplog.at_level(logging.ERROR):
        async with TurnStream([broken, good]) as stream:
            stream.emit(TextDelta("a"))
            while not calls:
                await anyio.sleep(0)
            await anyio.sleep(0)  # lets `broken` unwind before "b" comes
            stream.emit(TextDelta("b"))
    assert calls == [TextDelta("a")]
    assert good.events == [TextDelta("a"), TextDelta("b")]
    assert "a turn listener failed on TextDelta" in caplog.text


async def test_an_error_in_the_turn_comes_out_as_itself_not_grouped_and_listeners_stop():
    async def forever(event: TurnEvent) -> None:
        await anyio.sleep_forever()

    with pytest.raises(ValueError, match="model broke"):
        async with TurnStream([forever]) as stream:
            stream.emit(TextDelta("x"))
            raise ValueError("model broke")


async def test_without_listeners_nothing_streams_and_emit_is_harmless():
    async with TurnStream() as stream:
        assert not stream.listening
        stream.emit(TextDelta("nobody"))
    assert TurnStream([Recorder()]).listening


async def test_settle_returns_once_every_listener_took_what_was_emitted_before_it():
    release = anyio.Event()
    seen: list[TurnEvent] = []
    settled = anyio.Event()

    async def slow(event: TurnEvent) -> None:
        await release.wait()
        seen.append(event)

    async def settle(stream: TurnStream) -> None:
        await stream.settle()
        settled.set()

    async def broken(event: TurnEvent) -> None:
        raise RuntimeError("gone")

    async with TurnStream([slow, broken]) as stream, anyio.create_task_group() as group:
        stream.emit(TextDelta("a"))
        stream.emit(TextDelta("b"))
        group.start_soon(settle, stream)
        for _ in range(20):
            await anyio.sleep(0)
        assert not settled.is_set() and seen == []
        release.set()
        await settled.wait()
        assert seen == [TextDelta("a"), TextDelta("b")]  # and the dropped listener did not keep settle waiting
