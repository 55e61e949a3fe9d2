"""hermitcrab-exec: shell, background processes and files under an allowlist policy, as an MCP server."""

from hermitcrab.servers.exec.policy import Policy
from hermitcrab.servers.exec.runner import Limits
from hermitcrab.servers.exec.server import build_server

__all__ = ["Limits", "Policy", "build_server"]
