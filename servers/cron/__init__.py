"""hermitcrab-cron: scheduled jobs whose firings wait on `cron://events` until the host acknowledges them."""

from hermitcrab.servers._common.extra import exit_for_missing_extra

try:
    from .server import DEFAULT_GRACE_S, build_server
except ModuleNotFoundError as missing:
    exit_for_missing_extra("cron", missing)

__all__ = ["DEFAULT_GRACE_S", "build_server"]
