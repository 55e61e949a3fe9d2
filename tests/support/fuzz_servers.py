"""Each of our servers built in-process over a fuzzing Tree, by name (shared with bench/fuzz.py)."""

from __future__ import annotations

import sys
from collections.abc import Callable

from mcp.server.mcpserver import MCPServer

from hermitcrab.servers.browser import BrowserConfig
from hermitcrab.servers.browser import build_server as browser_server
from hermitcrab.servers.cron import build_server as cron_server
from hermitcrab.servers.exec import Policy
from hermitcrab.servers.exec import build_server as exec_server
from hermitcrab.servers.memory.server import build_server as memory_server
from hermitcrab.servers.spawn import Commands, Limits
from hermitcrab.servers.spawn import build_server as spawn_server
from tests.support.fuzzing import Tree
from tests.support.spawn import FAKE_CLI


def browser(tree: Tree) -> MCPServer:
    config = BrowserConfig(state_dir=tree.state, roots=(tree.root,), call_timeout_s=10, navigation_timeout_ms=5_000)
    return browser_server(config)


SERVERS: dict[str, Callable[[Tree], MCPServer]] = {
    "memory": lambda tree: memory_server(workspace=tree.root, state=tree.state, embedder=None, watch=False),
    "exec": lambda tree: exec_server(roots=[tree.root], state=tree.state, policy=Policy(ask="off")),
    "cron": lambda tree: cron_server(tree.state, poll_s=0.1),
    "spawn": lambda tree: spawn_server(
        tree.state, Commands(None, {"echo": (sys.executable, FAKE_CLI, "{task}")}), Limits(timeout_s=5)
    ),
    "browser": browser,
}
