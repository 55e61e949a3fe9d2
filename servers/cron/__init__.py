"""hermitcrab-cron: scheduled jobs whose firings wait on `cron://events` until the host acknowledges them."""

from .server import DEFAULT_GRACE_S, build_server

__all__ = ["DEFAULT_GRACE_S", "build_server"]
