"""Run an MCPServer over stdio or streamable HTTP, as chosen by the `--http HOST:PORT` flag, logging at `--log-level`.

Over stdio, lines the SDK cannot parse are answered rather than dropped (`sdk_workarounds.serve_stdio`).
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any, Literal, cast, get_args

import anyio
from mcp.server.mcpserver import MCPServer

from .sdk_workarounds import serve_stdio

LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
LOG_LEVELS: tuple[LogLevel, ...] = get_args(LogLevel)


def parse_http(value: str) -> tuple[str, int]:
    """Split `HOST:PORT` (or just `PORT`, meaning 127.0.0.1) into its parts."""
    host, _, port = value.rpartition(":")
    if not port.isdigit():
        raise ValueError(f"--http expects HOST:PORT, got {value!r}")
    return host or "127.0.0.1", int(port)


def add_serve_flags(parser: argparse.ArgumentParser) -> None:
    """The `--http` and `--log-level` flags every server has (log level WARNING by default: INFO logs refused calls)."""
    parser.add_argument("--http", metavar="HOST:PORT", help="serve streamable HTTP instead of stdio")
    parser.add_argument(
        "--log-level", choices=LOG_LEVELS, default="WARNING", type=str.upper, help="stderr log level (default WARNING)"
    )


def serve(server: MCPServer[Any], http: str | None, log_level: str = "WARNING") -> None:
    """Serve on stdio (the default) or streamable HTTP at `http`; logs go to stderr at `log_level`, never stdout."""
    # force: MCPServer() already installed a rich handler at INFO, which would format every refused argument.
    logging.basicConfig(stream=sys.stderr, level=log_level, format="%(levelname)s %(name)s: %(message)s", force=True)
    if http is None:
        anyio.run(serve_stdio, server)
        return
    host, port = parse_http(http)
    server.settings.log_level = cast(LogLevel, log_level)  # uvicorn's own loggers follow it too
    server.run("streamable-http", host=host, port=port)
