"""hermitcrab's browser MCP server: Chromium via Playwright, playwright-mcp-compatible tools."""

from hermitcrab.servers._common.extra import exit_for_missing_extra

try:
    from .config import BrowserConfig
    from .server import build_server
    from .session import Session
except ModuleNotFoundError as missing:
    exit_for_missing_extra("browser", missing)

__all__ = ["BrowserConfig", "Session", "build_server"]
