"""hermitcrab's browser MCP server: Chromium via Playwright, playwright-mcp-compatible tools."""

from .config import BrowserConfig
from .server import build_server
from .session import Session

__all__ = ["BrowserConfig", "Session", "build_server"]
