"""A server that never answers a request (as the MCP SDK does with a line it cannot parse) costs one call timeout,
never a stuck turn (issue 19)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from hermitcrab.host.config import ServerConfig
from hermitcrab.host.mcp.pool import McpPool

SILENT_SERVER = str(Path(__file__).parents[1] / "support" / "silent_server.py")


async def test_a_silent_server_costs_one_timeout_per_call():
    config = ServerConfig("silent", command=sys.executable, args=(SILENT_SERVER,), timeout_s=0.5)
    async with McpPool([config], startup_timeout_s=10) as pool:
        assert "quiet" in pool.routes()
        started = time.monotonic()
        first = await pool.call("quiet", {})
        second = await pool.call("quiet", {})
        elapsed = time.monotonic() - started
    assert first.is_error and "timed out after 0.5s" in first.text
    assert second.is_error and "timed out after 0.5s" in second.text
    assert elapsed < 5
