"""The agent: builds the system prompt for an event and runs one turn in the event's session."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import InitVar, dataclass, field, replace
from importlib.resources import files
from zoneinfo import ZoneInfo

from anyio.abc import ObjectReceiveStream

from ..config import Settings
from ..events import Event
from ..hooks.dispatch import Hooks
from ..mcp.pool import McpPool, ServerEvent
from ..mcp.subagents import Subagent, SubagentWatch, runtime_fact
from ..providers.base import Provider, Usage, cache_scope
from ..session.routing import shared
from ..session.transcript import Session, SessionStore
from ..skills.catalog import Catalog, SkillShelf, discover, pool_tools, prompt_section
from ..skills.invocation import invoke
from ..trust.untrusted import fence
from .budget import Budget
from .compaction import Compacted
from .context import ContextKeeper
from .flush import FlushTarget
from .loop import TurnResult, run_turn
from .persona import PersonaFile, PersonaReader, load_persona, render_persona
from .stream import TurnStream
from .toolbox import Conversation, HostToolbox

SYSTEM_TEMPLATE = files("hermitcrab.host.turn").joinpath("system_prompt.md").read_text(encoding="utf-8")
NOTE_TEMPLATE = files("hermitcrab.host.turn").joinpath("runtime_note.md").read_text(encoding="utf-8").strip()

Clock = Callable[[], dt.datetime]
UNKNOWN_DISPLAY = "not known to the host: plain text of moderate length is safest"


@dataclass
class Agent:
    """Everything a turn needs, wired once by the CLI."""

    settings: Settings
    provider: Provider
    pool: McpPool | None
    store: SessionStore
    server_events: ObjectReceiveStream[ServerEvent] | None = None
    clock: Clock = field(default=lambda: dt.datetime.now().astimezone())
    last_persona: dict[str, list[PersonaFile]] = field(default_factory=dict[str, list[PersonaFile]])
    budget: Budget | None = None
    subagents: SubagentWatch = field(init=False)
    shelf: SkillShelf = field(default_factory=SkillShelf)
    persona_reader: PersonaReader = field(default_factory=PersonaReader)
    hooks: Hooks = field(init=False)
    """The lifecycle hooks: `with_hooks`, else those `settings` enable (the session-end capture by default)."""
    with_hooks: InitVar[Hooks | None] = None

    def __post_init__(self, with_hooks: Hooks | None) -> None:
        self.subagents = SubagentWatch(self.pool)
        self.hooks = with_hooks if with_hooks is not None else Hooks.load(self.settings, self.store)
        self.hooks.attach(now=self.now)

    def now(self) -> dt.datetime:
        zone = self.settings.agent.timezone
        return self.clock().astimezone(ZoneInfo(zone)) if zone else self.clock()

    def persona(self, event: Event) -> list[PersonaFile]:
        """The bootstrap files as they would be injected now for this event (private ones only in private turns)."""
        today, private = self.now().date(), private_turn(event)
        return load_persona(self.settings.workspace, today=today, private=private, reader=self.persona_reader)

    def skills(self) -> Catalog:
        """The skills found now, their requirements checked against the environment and the servers' tools."""
        return discover(self.settings.skill_dirs, self.settings.skills.environ, pool_tools(self.pool), self.shelf)

    def system_prompt(self, event: Event, toolbox: HostToolbox) -> str:
        """The part of the prompt that stays byte-identical from turn to turn (a provider caches its prefix): the
        tools, skills and persona, nothing that changes with the time, the speaker or the channel."""
        persona = self.persona(event)
        self.last_persona[event.session_key] = persona
        return SYSTEM_TEMPLATE.format(
            tools=", ".join(sorted(spec.name for spec in toolbox.specs())),
            skills=prompt_section(toolbox.skills, self.settings.skills.prompt_chars),
            persona=render_persona(persona),
        )

    def runtime_note(self, event: Event, subagents: Sequence[Subagent] = (), display: str | None = None) -> str:
        """What changes per turn, at the head of the turn's own message, so it comes after the cached prefix, and
        is kept with that message (`loop.run_turn`): the history a later turn sends stays the same bytes."""
        now = self.now()
        return NOTE_TEMPLATE.format(
            now=now.strftime("%A %Y-%m-%d %H:%M"),
            timezone=now.tzname() or "local time",
            channel=event.target.channel,
            display=display or UNKNOWN_DISPLAY,
            session=event.session_key,
            user=_sender(event),
            subagents=runtime_fact(list(subagents)),
        )

    def session(self, key: str) -> Session:
        return self.store.open(key)

    async def respond(
        self, event: Event, conversation: Conversation, stream: TurnStream | None = None, display: str | None = None
    ) -> TurnResult:
        """Run one turn; `/<skill>` and `/<server>:<prompt>` messages run the workflow they name (`invocation.py`).

        `display` is what the event's channel can show, told to the model so replies fit it; `stream` hears what
        the turn does as it happens."""
        catalog = self.skills()
        invoked = await invoke(event.text, catalog, self.pool, event.session_key) if event.kind == "message" else None
        if invoked is not None and invoked.reply is not None:
            return TurnResult(invoked.reply, Usage(), 0)
        spent = self.budget.spent(event.principal.rights, self.now().date()) if self.budget else None
        if spent is not None:
            return TurnResult(spent.reply, Usage(), 0, spent)
        toolbox = self.toolbox(event, conversation, catalog)
        subagents = await self.subagents.running(event.session_key)
        session = self.session(event.session_key)
        text = invoked.message if invoked is not None and invoked.message else event.text
        settings = self.settings.agent
        scope = cache_scope.set(event.session_key)
        try:
            result = await run_turn(
                provider=self.provider,
                toolbox=toolbox,
                session=session,
                system=self.system_prompt(event, toolbox),
                user_text=fence(text, event.principal.label) if event.principal.data else text,
                note=self.runtime_note(event, subagents, display),
                settings=settings if private_turn(event) else replace(settings, memory_flush=False),
                stream=stream,
                flush_target=self.flush_target(),
                inbound=event.inbound_id,
                trigger=event.kind,
                attachments=event.attachments,
                hooks=self.hooks,
            )
        finally:
            cache_scope.reset(scope)
        if self.budget is not None:
            self.budget.charge(
                event.principal.rights, self.now().date(), result.model_calls, result.usage, result.answers
            )
        return result

    def toolbox(self, event: Event, conversation: Conversation, catalog: Catalog | None = None) -> HostToolbox:
        """The tools of a turn for `event`: cut to its principal's policy, never to what the model asks for."""
        policy = self.settings.policy(event.principal.rights)
        return HostToolbox(self.pool, conversation, event, catalog or self.skills(), policy, self.hooks)

    def flush_target(self) -> FlushTarget:
        return FlushTarget(self.now().date(), self.settings.workspace)

    async def compact(self, event: Event, conversation: Conversation) -> tuple[Compacted, list[str]]:
        """`/compact`: the memory flush, then compaction of the event's session; what it did and what to tell."""
        toolbox = self.toolbox(event, conversation)
        session = self.session(event.session_key)
        system = self.system_prompt(event, toolbox)
        settings, target = self.settings.agent, self.flush_target()
        keeper = ContextKeeper(session, self.provider, toolbox, system, settings, target, hooks=self.hooks)
        return await keeper.compact_now(), keeper.notices


def private_turn(event: Event) -> bool:
    """Whether the owner's private files (MEMORY.md, USER.md, the daily logs) belong in this turn's prompt: a turn
    with the owner's rights outside any group conversation, whose transcript others read."""
    return event.principal.is_owner and event.chat in (None, "direct") and not shared(event.session_key)


def _sender(event: Event) -> str:
    """Who the event comes from, as the model should address them (decided by the host, never by the text)."""
    principal = event.principal
    where = f" in conversation {event.target.conversation!r}" if event.target.user else ""
    if principal.kind == "system":
        return f"no person: {principal.label} ({event.kind} event)"
    return f"{principal.label}{where}"
