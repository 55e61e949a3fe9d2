"""hermitcrab-memory: Markdown long-term memory with hybrid (BM25 + vector) search, as an MCP server."""

from hermitcrab.servers._common.extra import exit_for_missing_extra

try:
    from .server import build_server
except ModuleNotFoundError as missing:
    exit_for_missing_extra("memory", missing)

__all__ = ["build_server"]
