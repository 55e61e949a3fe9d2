"""hermitcrab-spawn: sub-agents that run in the background and report back through `spawn://events`."""

from .manager import Commands, Limits
from .server import build_server

__all__ = ["Commands", "Limits", "build_server"]
