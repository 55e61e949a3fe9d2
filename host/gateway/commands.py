"""Slash commands that work in every channel: /new, /reset, /status, /context, /compact, /skills, /usage, /help.

`/<skill>` and `/<server>:<prompt>` are not here: they run turns (invocation.py, through `Agent.respond`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from ..events import Event
from ..hooks.events import HookEvent, about
from ..inbox.deadletters import FOLDER, DeadLetters
from ..mcp.pool import ServerHandle
from ..session.transcript import CHARS_PER_TOKEN
from ..skills.catalog import report
from ..skills.invocation import prompt_usage
from ..turn.agent import Agent, private_turn
from ..turn.compaction import Budget
from ..turn.flush import Unattended
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
    context = agent.last_context_chars.get(event.session_key)
    budget = Budget.of(agent.settings.agent)
    limits = f" of {budget.window:,}; compacts at {budget.threshold:,}"
    if counted:
        context_text = f"~{counted:,} tokens (the provider's count plus what came since){limits}"
    elif context:
        context_text = f"~{context // CHARS_PER_TOKEN:,} tokens ({context:,} chars){limits}"
    else:
        context_text = "not measured yet (no turn so far)"
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


async def context(agent: Agent, event: Event) -> str:
    persona = agent.last_persona.get(event.session_key) or agent.persona(event)
    lines = ["Bootstrap files injected:"]
    for file in persona:
        if file.missing:
            lines.append(f"- {file.name}: missing")
        else:
            cut = f", truncated to {len(file.text):,}" if file.truncated else ""
            lines.append(f"- {file.name}: {file.chars:,} chars{cut}")
    lines.append(f"Total: {sum(len(f.text) for f in persona):,} chars")
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
