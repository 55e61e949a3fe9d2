"""Run an MCPServer over stdio or streamable HTTP, as chosen by the `--http HOST:PORT` flag."""

from __future__ import annotations

import logging
import sys

from mcp.server.mcpserver import MCPServer


def parse_http(value: str) -> tuple[str, int]:
    """Split `HOST:PORT` (or just `PORT`, meaning 127.0.0.1) into its parts."""
    host, _, port = value.rpartition(":")
    if not port.isdigit():
        raise ValueError(f"--http expects HOST:PORT, got {value!r}")
    return host or "127.0.0.1", int(port)


def serve(server: MCPServer, http: str | None) -> None:
    """Serve on stdio (the default) or streamable HTTP at `http`; logs go to stderr, never stdout."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if http is None:
        server.run()
        return
    host, port = parse_http(http)
    server.run("streamable-http", host=host, port=port)
