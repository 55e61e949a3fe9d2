"""An aiohttp app served from a background thread on 127.0.0.1, for the fakes of chat apps (Discord, Telegram): the
test drives them through plain methods while the client under test talks to them over the network."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from aiohttp import web


@contextmanager
def serving(
    app: Callable[[], web.Application], port: int, what: str, *, shutdown_s: float = 60.0
) -> Iterator[asyncio.AbstractEventLoop]:
    """Serve `app()` on `port` until the block ends; yields the server's loop (for `run_coroutine_threadsafe`).
    `shutdown_s` bounds how long the end waits for open requests (a long poll would hold it otherwise)."""
    started = threading.Event()
    loops: list[asyncio.AbstractEventLoop] = []
    stop: list[asyncio.Event] = []

    async def main() -> None:
        loops.append(asyncio.get_running_loop())
        stop.append(asyncio.Event())
        runner = web.AppRunner(app(), shutdown_timeout=shutdown_s)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        started.set()
        await stop[0].wait()
        await runner.cleanup()

    thread = threading.Thread(target=asyncio.run, args=(main(),), daemon=True)
    thread.start()
    assert started.wait(10), f"{what} did not start"
    try:
        yield loops[0]
    finally:
        loops[0].call_soon_threadsafe(stop[0].set)
        thread.join(timeout=10)
