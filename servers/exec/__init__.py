"""hermitcrab-exec: shell, background processes and files under an allowlist policy, as an MCP server."""

from hermitcrab.servers._common.extra import exit_for_missing_extra

try:
    from .policy import Policy
    from .runner import Limits
    from .server import build_server
except ModuleNotFoundError as missing:
    exit_for_missing_extra("exec", missing)

__all__ = ["Limits", "Policy", "build_server"]
