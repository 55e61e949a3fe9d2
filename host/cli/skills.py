"""`hermitcrab skills`: the skills the agent is offered, and those left out with the reason."""

from __future__ import annotations

import anyio
import typer

from ..config import Settings, load_settings
from ..mcp.pool import McpPool
from ..skills.catalog import discover, needs_tools, pool_tools, report
from .options import McpConfigOption


def skills(mcp_config: McpConfigOption = None) -> None:
    """List the skills found (workspace, ~/.agents/skills, the home, skills.extra_dirs) and why any is left out.

    The MCP servers are started only when a skill requires one of their tools."""
    settings = load_settings(mcp_config=mcp_config)
    typer.echo(anyio.run(_report, settings))


async def _report(settings: Settings) -> str:
    if not needs_tools(settings.skill_dirs):
        return report(discover(settings.skill_dirs, settings.skills.environ, set()))
    with settings.log_file("servers.log").open("a", encoding="utf-8") as errlog:
        async with McpPool(settings.servers, errlog=errlog, oauth_logins=settings.oauth_logins) as pool:
            return report(discover(settings.skill_dirs, settings.skills.environ, pool_tools(pool)))


def register(app: typer.Typer) -> None:
    app.command()(skills)
