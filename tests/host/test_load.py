"""Load through the real gateway, pool and servers: no reply dropped, reordered within a session or delivered to
another session's conversation, and a server's queued events each run once (bench/load.py runs the long version)."""

from __future__ import annotations

from pathlib import Path

from tests.support.load import queued_events, sessions_at_once


async def test_fifty_sessions_at_once_keep_their_order_and_their_conversation(tmp_path: Path) -> None:
    result = await sessions_at_once(tmp_path, sessions=50, messages=2)
    assert (result.sent, result.answered, result.noted) == (100, 100, 100)
    assert (result.dropped, result.reordered, result.cross_talk) == (0, 0, 0)


async def test_queued_server_events_each_run_once(tmp_path: Path) -> None:
    result = await queued_events(tmp_path, items=50)
    assert (result.handled, result.duplicates, result.still_waiting) == (50, 0, 0)
