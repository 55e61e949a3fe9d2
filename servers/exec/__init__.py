"""hermitcrab-exec: shell, background processes and files under an allowlist policy, as an MCP server."""

from .policy import Policy
from .runner import Limits
from .server import build_server

__all__ = ["Limits", "Policy", "build_server"]
