"""Slash commands that work in every channel: /new, /reset, /status, /context, /compact, /skills, /usage, /help.

`/<skill>` and `/<server>:<prompt>` are not here: they run turns (invocation.py, through `Agent.respond`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from ..events import Event
from ..hooks.events import HookEvent, about
from ..inbox.deadletters import FOLDER, DeadLetters
from ..mcp.pool import ServerHandle
from ..session.transcript import CHARS_PER_TOKEN
from ..skills.catalog import report
from ..skills.invocation import prompt_usage
from ..trust.policy import HOST_SERVER
from ..turn.agent import Agent, private_turn
from ..turn.compaction import Budget
from ..turn.context import message_chars, spec_chars
from ..turn.flush import Unattended
from ..turn.persona import PersonaFile
from ..usage.prices import Prices
from ..usage.tally import price_hints, tally, today_line
from .heartbeat import last_beat

Command = Callable[[Agent, Event], Awaitable[str]]


async def new_session(agent: Agent, event: Event) -> str:
    """Tell the session:new (or session:reset) hooks, the session-end capture among them, while the old transcript
    is still the session's; then point the key at a fresh one. What the hooks say back ends the reply."""
    ending = agent.session(event.session_key)
    happened: HookEvent = "session:reset" if event.text.split()[0].lower() == "/reset" else "session:new"
    fields = {**about(event), "transcript": ending.id, "private": private_turn(event)}
    said = [answer.text for answer in await agent.hooks.fire(happened, fields) if answer.text]
    session = agent.store.new(event.session_key)
    return " ".join([f"Started a new session ({session.id}).", *said])


async def status(agent: Agent, event: Event) -> str:
    session = agent.session(event.session_key)
    usage = session.usage
    counted = session.transcript.view().context_tokens()
    budget = Budget.of(agent.settings.agent)
    limits = f" of {budget.window:,}; compacts at {budget.threshold:,}"
    if counted:
        context_text = f"~{counted:,} tokens (the provider's count plus what came since){limits}"
    else:
        sent = _Sent.of(agent, event)
        context_text = f"~{_tokens(sent.total)} estimated (system prompt, tool schemas, history; /context){limits}"
    servers: list[ServerHandle] = list(agent.pool.handles.values()) if agent.pool else []
    server_text = "".join(f"\n- {h.config.name}: {h.state}" for h in servers) or " none"
    children = await agent.subagents.running(event.session_key)
    children_text = "".join(f"\n- {child.describe()}" for child in children) or " none"
    return "\n".join(
        [
            f"Model: {agent.provider.label}",
            f"Session: {event.session_key} ({session.id})",
            f"Tokens used: {usage.input_tokens:,} in / {usage.output_tokens:,} out",
            f"Context: {context_text}",
            f"MCP servers:{server_text}",
            f"Sub-agents running:{children_text}",
            last_beat(agent.settings.state),
            _dead_letters_line(agent),
        ]
    )


def _dead_letters_line(agent: Agent) -> str:
    """Items that kept failing wait in a file the CLI manages; say so, since nobody reads doctor every day."""
    count = len(DeadLetters(agent.settings.state / FOLDER).list())
    return f"Dead letters: {count} (hermitcrab deadletters list)" if count else "Dead letters: none"


@dataclass(frozen=True)
class _Sent:
    """What the session's next request sends, in characters, counted as `ContextKeeper` estimates it."""

    system: int
    persona: list[PersonaFile]
    tools: dict[str, tuple[int, int]]
    """Per server (`host` for the host's own tools): how many tools, how many characters of schema."""
    history: int
    messages: int

    @classmethod
    def of(cls, agent: Agent, event: Event) -> _Sent:
        toolbox = agent.toolbox(event, Unattended())
        system = agent.system_prompt(event, toolbox)
        tools: dict[str, tuple[int, int]] = {}
        for spec in toolbox.specs():
            server = (agent.pool.server_of(spec.name) if agent.pool else None) or HOST_SERVER
            count, chars = tools.get(server, (0, 0))
            tools[server] = (count + 1, chars + spec_chars(spec))
        messages = agent.session(event.session_key).messages()
        persona = agent.last_persona[event.session_key]
        return cls(len(system), persona, tools, sum(map(message_chars, messages)), len(messages))

    @property
    def total(self) -> int:
        return self.system + sum(chars for _, chars in self.tools.values()) + self.history


def _tokens(chars: int) -> str:
    return f"{chars // CHARS_PER_TOKEN:,} tokens"


async def context(agent: Agent, event: Event) -> str:
    """Everything the next request sends, part by part: the system prompt (with the bootstrap files in it), the
    tool schemas per server, the history; tokens estimated as compaction estimates them."""
    sent = _Sent.of(agent, event)
    lines = [
        f"What the next request sends (tokens estimated at {CHARS_PER_TOKEN} characters each):",
        f"- System prompt: {sent.system:,} chars (~{_tokens(sent.system)}), with the bootstrap files:",
    ]
    for file in sent.persona:
        if file.missing:
            lines.append(f"  - {file.name}: missing")
        else:
            cut = f", truncated to {len(file.text):,}" if file.truncated else ""
            lines.append(f"  - {file.name}: {file.chars:,} chars{cut}")
    schemas = sum(chars for _, chars in sent.tools.values())
    count = sum(tools for tools, _ in sent.tools.values())
    lines.append(f"- Tool schemas: {count} tools, {schemas:,} chars (~{_tokens(schemas)}):")
    for server, (tools, chars) in sorted(sent.tools.items(), key=lambda item: -item[1][1]):
        lines.append(f"  - {server}: {tools} tools, {chars:,} chars")
    lines.append(f"- History: {sent.messages} messages, {sent.history:,} chars (~{_tokens(sent.history)})")
    lines.append(f"Total: {sent.total:,} chars (~{_tokens(sent.total)})")
    return "\n".join(lines)


async def compact_now(agent: Agent, event: Event) -> str:
    done, notices = await agent.compact(event, Unattended())
    if not done.replaced:
        return "Nothing to compact yet."
    said = f"Compacted {done.replaced} earlier entries into a summary; the latest turns stay verbatim."
    return "\n\n".join([said, *notices])


async def skills(agent: Agent, event: Event) -> str:
    """The skills offered and those left out (with why), then the servers' prompts as commands."""
    handles: list[ServerHandle] = list(agent.pool.handles.values()) if agent.pool else []
    prompts = [
        f"- {prompt_usage(h.config.name, p)}: {p.description or p.title or ''}" for h in handles for p in h.prompts
    ]
    listed = f"\nMCP prompts ({len(prompts)}):\n" + "\n".join(prompts) if prompts else ""
    return report(agent.skills()) + listed


async def usage(agent: Agent, event: Event) -> str:
    """Today's model calls and their cost across every session of the home: the owner's money, so theirs alone."""
    if not event.principal.is_owner:
        return "Only the owner can see what the model calls cost (/usage)."
    midnight = agent.now().replace(hour=0, minute=0, second=0, microsecond=0).astimezone()  # a naive clock is local
    _, total = tally(agent.settings.state, Prices(agent.settings.providers), midnight, "kind")
    return "\n".join([today_line(total), *price_hints(total.unpriced), "More: hermitcrab usage --by kind"])


async def help_text(agent: Agent, event: Event) -> str:
    names = [f"/{skill.name}" for skill in agent.skills().skills if skill.user_invocable]
    extra = f"; skills: {', '.join(names)}" if names else ""
    return "Commands: " + ", ".join(sorted(COMMANDS)) + extra + " (/skills lists skills and MCP prompts)"


COMMANDS: dict[str, Command] = {
    "/new": new_session,
    "/reset": new_session,
    "/status": status,
    "/context": context,
    "/compact": compact_now,
    "/skills": skills,
    "/usage": usage,
    "/help": help_text,
}


def find_command(text: str) -> Command | None:
    words = text.strip().split()
    return COMMANDS.get(words[0].lower()) if words else None
