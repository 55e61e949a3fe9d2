"""The dashboard inside `hermitcrab run`, and the login link `hermitcrab dashboard` prints for it.

The running host records where it listens (`state/dashboard/address.json`): with port 0 only it knows the port, and
the CLI that mints a link runs in another process."""

from __future__ import annotations

import ipaddress
import logging

import anyio
import httpx
from anyio.abc import TaskStatus

from hermitcrab.host.config import Settings
from hermitcrab.host.errors import ConfigError
from hermitcrab.util.http_serve import serve_app
from hermitcrab.util.store import JsonFile

from .app import create_app
from .auth import LoginLinks
from .context import Context

logger = logging.getLogger(__name__)

PUBLIC_WARNING = (
    "the dashboard listens on {listen}, beyond this machine: it speaks plain HTTP, so put it behind a TLS proxy "
    "and name the proxy's host in [dashboard] hosts"
)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_public(settings: Settings, public: bool) -> None:
    """Refuse (ConfigError) a listen address beyond loopback unless `--public` says it is meant; warn when it is."""
    listen = settings.dashboard.listen
    if is_loopback(settings.dashboard.host):
        return
    if not public:
        raise ConfigError(
            f"the dashboard would listen on {listen}, beyond this machine: give `hermitcrab run --public` if that is "
            "meant (behind a TLS proxy), or set [dashboard] listen to 127.0.0.1:PORT"
        )
    logger.warning(PUBLIC_WARNING.format(listen=listen))


def _address(settings: Settings) -> JsonFile:
    return JsonFile(settings.state / "dashboard" / "address.json")


async def serve_dashboard(
    context: Context, public: bool, *, task_status: TaskStatus[str] = anyio.TASK_STATUS_IGNORED
) -> None:
    """Serve the dashboard until cancelled; reports its URL once it listens."""
    dashboard = context.settings.dashboard
    app = create_app(context, secure_cookie=public)
    async with anyio.create_task_group() as group:
        port = await group.start(serve_app, app, dashboard.host, dashboard.port, "the dashboard")
        host = dashboard.host if ":" not in dashboard.host else f"[{dashboard.host}]"
        url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '[::]') else host}:{port}"
        (context.settings.state / "dashboard").mkdir(mode=0o700, exist_ok=True)
        _address(context.settings).save({"url": url})
        task_status.started(url)


def recorded_url(settings: Settings) -> str | None:
    """Where the last `hermitcrab run` of this home served the dashboard."""
    recorded = _address(settings).load("the link uses the configured address").get("url")
    return recorded if isinstance(recorded, str) else None


def serving_url(settings: Settings) -> str | None:
    """The dashboard's URL when a running host answers there now (a 1 s look), else None."""
    url = recorded_url(settings)
    if url is None:
        return None
    try:
        httpx.get(f"{url}/login", timeout=1.0)
    except httpx.HTTPError:
        return None
    return url


def login_url(settings: Settings) -> str:
    """A fresh one-time login link to the dashboard of the host running in this home (or of the next one started),
    through `[dashboard] public_url` when the browser reaches it through a proxy."""
    dashboard = settings.dashboard
    base = (
        (dashboard.public_url or "").rstrip("/")
        or recorded_url(settings)
        or f"http://{dashboard.host}:{dashboard.port}"
    )
    return f"{base}/login?token={LoginLinks(settings.state / 'dashboard').mint()}"
