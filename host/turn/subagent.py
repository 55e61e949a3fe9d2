"""A sub-agent's one turn: the task as its only message, a short prompt of its own, the pool's tools and no user."""

from __future__ import annotations

from dataclasses import replace
from importlib.resources import files
from typing import Any

from ..config import Settings
from ..events import NOWHERE, OWNER, Event, Principal
from ..hooks.dispatch import Hooks, ToolDecision
from ..hooks.events import about
from ..mcp.pool import McpPool, ToolOutcome
from ..providers.base import ToolSpec, Usage
from ..trust.origin import caller_meta
from ..trust.policy import ToolPolicy, refusal
from .agent import Agent
from .loop import TurnResult, run_turn
from .persona import load_persona, render_persona
from .toolbox import hooked_call

SUBAGENT_TEMPLATE = files("hermitcrab.host.turn").joinpath("subagent_prompt.md").read_text(encoding="utf-8")


class PoolTools:
    """The pool's tools called on behalf of one session; no `ask_user` or `message`, since a sub-agent has no user
    (and no elicitation can be answered: nobody is asked, so servers' questions are declined). A sub-agent started
    for someone other than the owner gets that principal's tool policy, as its parent turn did."""

    def __init__(
        self,
        pool: McpPool | None,
        session_key: str,
        principal: Principal = OWNER,
        policy: ToolPolicy | None = None,
        hooks: Hooks | None = None,
    ) -> None:
        self.pool = pool
        self.session_key = session_key
        self.principal = principal
        self.policy = policy or ToolPolicy()
        self.hooks = hooks or Hooks()

    def specs(self) -> list[ToolSpec]:
        specs = self.pool.tool_specs() if self.pool else []
        return [spec for spec in specs if self._allowed(spec.name)]

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        if self.pool is None:
            return ToolOutcome(f"unknown tool {name!r}", True)
        if not self._allowed(name):
            return ToolOutcome(refusal(name, self.principal.rights), True)
        pool = self.pool
        meta = caller_meta(self.principal, self.session_key, NOWHERE)

        async def run(given: dict[str, Any]) -> ToolOutcome:
            return await pool.call(name, given, self.session_key, meta)

        me = Event("subagent", "", NOWHERE, session_key=self.session_key, principal=self.principal)
        fields = {**about(me), "tool": name, "server": pool.server_of(name) or "", "arguments": arguments}
        return await hooked_call(self.hooks, fields, run, _nobody_to_ask)

    def _allowed(self, name: str) -> bool:
        return self.pool is not None and self.policy.allows(name, self.pool.server_of(name) or "")


async def _nobody_to_ask(name: str, decision: ToolDecision) -> str:
    return "a hook requires the owner's approval, and a sub-agent has nobody to ask"


def subagent_settings(settings: Settings, model: str | None, hidden_tools: list[str]) -> Settings:
    """The parent's settings with another model (when given) and the tools a sub-agent must not see removed."""
    providers = tuple(replace(profile, model=model) for profile in settings.providers) if model else settings.providers
    servers = tuple(
        replace(server, disabled_tools=(*server.disabled_tools, *hidden_tools)) for server in settings.servers
    )
    return replace(settings, providers=providers, servers=servers)


async def run_subagent(
    agent: Agent, task: str, session_key: str, label: str, principal: Principal = OWNER
) -> TurnResult:
    """Run `task` to its end in `session_key`: the minimal persona (no MEMORY, no HEARTBEAT, no daily logs; no
    USER.md either when it runs for someone other than the owner)."""
    now = agent.now()
    toolbox = PoolTools(agent.pool, session_key, principal, agent.settings.policy(principal.rights), agent.hooks)
    persona = load_persona(agent.settings.workspace, today=now.date(), private=principal.is_owner, subagent=True)
    system = SUBAGENT_TEMPLATE.format(
        now=now.strftime("%A %Y-%m-%d %H:%M"),
        timezone=now.tzname() or "local time",
        label=label,
        session=session_key,
        tools=", ".join(spec.name for spec in toolbox.specs()) or "none",
        persona=render_persona(persona),
    )
    today = now.date()
    spent = agent.budget.spent(principal.rights, today) if agent.budget else None
    if spent is not None:
        return TurnResult(spent.reply, Usage(), 0, spent)
    result = await run_turn(
        provider=agent.provider,
        toolbox=toolbox,
        session=agent.session(session_key),
        system=system,
        user_text=task,
        settings=agent.settings.agent,
        hooks=agent.hooks,
    )
    if agent.budget is not None:  # a sub-agent spends from the budget of whoever started it
        agent.budget.charge(principal.rights, today, result.model_calls, result.usage, result.answers)
    return result
