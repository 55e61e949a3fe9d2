"""Slash words that name a workflow: `/<skill> args` runs a skill, `/<server>:<prompt> args` an MCP server's prompt.

A skill's body and the arguments become the turn's message; a skill marked `context: fork` is handed to the spawn
server's `sessions_spawn` instead (when one is connected), so its result comes back to the conversation by itself.
"""

from __future__ import annotations

import json
import logging
import re
import shlex
from dataclasses import dataclass

from mcp import types
from mcp.shared.exceptions import MCPError

from ..mcp.pool import McpPool, ServerHandle
from .catalog import Catalog, Skill

logger = logging.getLogger(__name__)
SPAWN_TOOL = "sessions_spawn"
ARGUMENTS = "$ARGUMENTS"
COMMAND_WORD = re.compile(r"/[\w.-]+(:[\w.-]+)?")
"""`/name` or `/server:prompt`; a path such as `/usr/bin` (a second slash) is an ordinary message."""


@dataclass(frozen=True)
class Invoked:
    """A turn on `message`, or a `reply` with no turn (a sub-agent started, a usage error)."""

    message: str | None = None
    reply: str | None = None


async def invoke(text: str, catalog: Catalog, pool: McpPool | None, session_key: str) -> Invoked | None:
    """What `text` invokes, or None when it is an ordinary message.

    A slash word that names nothing is answered without a turn: sent to the model it would be read as a request
    and answered by a guess at what the user meant."""
    words = text.split(maxsplit=1)
    if not words or not COMMAND_WORD.fullmatch(words[0]):
        return None
    word, args = words[0], words[1].strip() if len(words) > 1 else ""
    name = word[1:]
    if ":" in name:
        server, _, prompt = name.partition(":")
        handle = pool.handles.get(server) if pool else None
        found = next((p for p in handle.prompts if p.name == prompt), None) if handle else None
        return await _run_prompt(handle, found, args) if handle and found else Invoked(reply=_unknown(word))
    skill = catalog.get(name)
    if skill is None or not skill.user_invocable:
        return Invoked(reply=_not_offered(word, catalog))
    message = skill_message(skill, args)
    spawn = _spawn_tool(pool)
    if skill.fork and pool is not None and spawn is not None:
        outcome = await pool.call(spawn, {"task": message, "label": skill.name}, session_key)
        if outcome.is_error:
            return Invoked(reply=f"Could not start the skill {skill.name} as a sub-agent: {outcome.text}")
        run = _run_id(outcome.text)
        return Invoked(reply=f"Started the skill {skill.name} as a sub-agent{run}; its result will come here.")
    return Invoked(message=message)


def _unknown(word: str) -> str:
    return f"Unknown command {word}, see /help."


def _not_offered(word: str, catalog: Catalog) -> str:
    """Why `/name` runs nothing: a skill left out says why, one that is no command says so."""
    name = word[1:]
    left_out = next((item for item in catalog.left_out if item.name == name), None)
    if left_out is not None:
        return f"The skill {name} is left out: {left_out.reason}. /skills lists the skills."
    if any(skill.name == name for skill in catalog.skills):
        return f"The skill {name} is not a command (its SKILL.md says user-invocable: false)."
    return _unknown(word)


def skill_message(skill: Skill, args: str) -> str:
    """The turn's message for `/<skill> args`: the skill's instructions with the arguments in place of $ARGUMENTS
    (or after them)."""
    body = skill.body.replace(ARGUMENTS, args) if ARGUMENTS in skill.body else skill.body
    tail = f"\n\nArguments: {args}" if args and ARGUMENTS not in skill.body else ""
    header = f'[The user ran the skill "{skill.name}" ({skill.file}); follow its instructions.]'
    return f"{header}\n\n{body}{tail}"


def prompt_usage(server: str, prompt: types.Prompt) -> str:
    """`/<server>:<prompt> name=... [name=...]`, required arguments first, as `/skills` and errors show it."""
    parts = [f"{a.name}=..." if a.required else f"[{a.name}=...]" for a in prompt.arguments or []]
    return " ".join([f"/{server}:{prompt.name}", *parts])


def parse_arguments(prompt: types.Prompt, args: str) -> dict[str, str]:
    """`name=value` words fill the named argument; other words fill the declared arguments in order, the last one
    taking the rest of the line."""
    declared = [a.name for a in prompt.arguments or []]
    try:
        words = shlex.split(args)
    except ValueError:  # an unclosed quote: take the words as typed
        words = args.split()
    values: dict[str, str] = {}
    loose: list[str] = []
    for word in words:
        key, equals, value = word.partition("=")
        if equals and key in declared:
            values[key] = value
        else:
            loose.append(word)
    open_names = [name for name in declared if name not in values]
    for name in open_names[:-1]:
        if loose:
            values[name] = loose.pop(0)
    if open_names and loose:
        values[open_names[-1]] = " ".join(loose)
    return values


async def _run_prompt(handle: ServerHandle, prompt: types.Prompt, args: str) -> Invoked:
    server = handle.config.name
    arguments = parse_arguments(prompt, args)
    missing = [a.name for a in prompt.arguments or [] if a.required and a.name not in arguments]
    if missing:
        return Invoked(reply=f"Missing {', '.join(missing)}. Usage: {prompt_usage(server, prompt)}")
    try:
        result = await handle.get_prompt(prompt.name, arguments)
    except (MCPError, TimeoutError, OSError) as exc:
        logger.warning("prompt %s:%s failed", server, prompt.name, exc_info=True)
        return Invoked(reply=f"The {server} server could not give the prompt {prompt.name}: {type(exc).__name__}.")
    return Invoked(message=_render(result.messages))


def _render(messages: list[types.PromptMessage]) -> str:
    roles = {m.role for m in messages}
    parts: list[str] = []
    for message in messages:
        content = message.content
        if isinstance(content, types.TextContent):
            text = content.text
        elif isinstance(content, types.EmbeddedResource):
            text = getattr(content.resource, "text", None) or f"[resource {content.resource.uri}]"
        else:
            text = f"[{content.type}]"
        parts.append(f"[{message.role}] {text}" if len(roles) > 1 else text)
    return "\n\n".join(parts)


def _spawn_tool(pool: McpPool | None) -> str | None:
    return next(iter(pool.ready_routes(SPAWN_TOOL)), None) if pool is not None else None


def _run_id(text: str) -> str:
    try:
        return f" (run {json.loads(text)['run_id']})"
    except (ValueError, KeyError, TypeError):
        return ""
