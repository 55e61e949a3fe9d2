"""A sub-agent's one turn: the task as its only message, a short prompt of its own, the pool's tools and no user."""

from __future__ import annotations

from dataclasses import replace
from importlib.resources import files
from typing import Any

from .agent import Agent
from .config import Settings
from .loop import TurnResult, run_turn
from .persona import load_persona, render_persona
from .pool import McpPool, ToolOutcome
from .providers.base import ToolSpec

SUBAGENT_TEMPLATE = files("hermitcrab.host").joinpath("subagent_prompt.md").read_text(encoding="utf-8")


class PoolTools:
    """The pool's tools called on behalf of one session; no `ask_user` or `message`, since a sub-agent has no user
    (and no elicitation can be answered: nobody is asked, so servers' questions are declined)."""

    def __init__(self, pool: McpPool | None, session_key: str) -> None:
        self.pool = pool
        self.session_key = session_key

    def specs(self) -> list[ToolSpec]:
        return self.pool.tool_specs() if self.pool else []

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        if self.pool is None:
            return ToolOutcome(f"unknown tool {name!r}", True)
        return await self.pool.call(name, arguments, self.session_key)


def subagent_settings(settings: Settings, model: str | None, hidden_tools: list[str]) -> Settings:
    """The parent's settings with another model (when given) and the tools a sub-agent must not see removed."""
    providers = tuple(replace(profile, model=model) for profile in settings.providers) if model else settings.providers
    servers = tuple(
        replace(server, disabled_tools=(*server.disabled_tools, *hidden_tools)) for server in settings.servers
    )
    return replace(settings, providers=providers, servers=servers)


async def run_subagent(agent: Agent, task: str, session_key: str, label: str) -> TurnResult:
    """Run `task` to its end in `session_key`: the minimal persona (no MEMORY, no HEARTBEAT, no daily logs)."""
    now = agent.now()
    toolbox = PoolTools(agent.pool, session_key)
    persona = load_persona(agent.settings.workspace, today=now.date(), main_session=False, subagent=True)
    system = SUBAGENT_TEMPLATE.format(
        now=now.strftime("%A %Y-%m-%d %H:%M"),
        timezone=now.tzname() or "local time",
        label=label,
        session=session_key,
        tools=", ".join(spec.name for spec in toolbox.specs()) or "none",
        persona=render_persona(persona),
    )
    return await run_turn(
        provider=agent.provider,
        toolbox=toolbox,
        session=agent.session(session_key),
        system=system,
        user_text=task,
        settings=agent.settings.agent,
    )
