"""Turn `config.toml`, an optional Claude Desktop JSON file and the environment into frozen settings.

The settings classes are pydantic dataclasses, and each is also the shape of its table in `config.toml`: the loader
validates the file straight into them, so a default is written once, next to its bounds. They are dataclasses rather
than `BaseModel`s because callers build them positionally and derive variants with `dataclasses.replace`, which
validates again. What the environment may override is declared in `ENVIRONMENT` and `PROFILE_VARIABLES`.

This is the only module that reads `os.environ` (through the `environ` mapping the CLI passes in).
"""

from __future__ import annotations

import datetime as dt
import difflib
import json
import os
import re
import tomllib
import types
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, Literal, Self, TypeVar, Union, cast, get_args, get_origin
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from pydantic import (
    AfterValidator,
    AliasChoices,
    BeforeValidator,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.dataclasses import dataclass, is_pydantic_dataclass
from pydantic.fields import FieldInfo

from hermitcrab.util.outbound import OUTBOUND_VARIABLE, Outbound, allow_entries
from hermitcrab.util.persona_files import HOOKS_FOLDER

from .errors import ConfigError
from .events import Rights
from .session.routing import DmScope
from .trust.policy import DEFAULT_POLICIES, ToolPolicy
from .turn.budget import DEFAULT_LIMITS, TOTAL, Limit
from .turn.windows import DEFAULT_WINDOW, context_window

ProviderKind = Literal["openai", "anthropic"]

DEFAULT_MODELS: dict[str, str] = {"openai": "gpt-4o-mini", "anthropic": "claude-sonnet-4-5"}
DEFAULT_BASE_URLS: dict[str, str] = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
}
VENDOR_KEYS: dict[str, str] = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
MISSING_PROVIDER_HELP = """No LLM provider is configured. Set one of:
  OPENAI_API_KEY=sk-...                      (OpenAI)
  ANTHROPIC_API_KEY=sk-ant-...               (Anthropic)
  HERMITCRAB_PROVIDER=openai HERMITCRAB_LLM_BASE_URL=http://127.0.0.1:11434/v1 HERMITCRAB_MODEL=llama3.1
                                             (a local OpenAI-compatible server: Ollama, vLLM, LM Studio)
or add a [[providers]] table to {config}."""

ENVIRONMENT: Mapping[str, tuple[str, str]] = {
    "HERMITCRAB_CONTEXT_WINDOW": ("agent", "context_window_tokens"),
    "HERMITCRAB_RESERVE_TOKENS": ("agent", "reserve_tokens"),
    "HERMITCRAB_WEBHOOK_LISTEN": ("webhook", "listen"),
    "HERMITCRAB_DASHBOARD_LISTEN": ("dashboard", "listen"),
    "HERMITCRAB_WEBHOOK_TOKEN": ("webhook", "token"),
    "DISCORD_TOKEN": ("discord", "token"),
    "HERMITCRAB_DISCORD_API_BASE": ("discord", "api_base"),
    "HERMITCRAB_DISCORD_GATEWAY_URL": ("discord", "gateway_url"),
    "HERMITCRAB_DISCORD_STREAM": ("discord", "stream"),
    "HERMITCRAB_DISCORD_STREAM_IN_GUILDS": ("discord", "stream_in_guilds"),
    "TELEGRAM_BOT_TOKEN": ("telegram", "token"),
    "HERMITCRAB_TELEGRAM_API_BASE": ("telegram", "api_base"),
    "HERMITCRAB_TELEGRAM_STREAM": ("telegram", "stream"),
    "HERMITCRAB_TELEGRAM_STREAM_IN_GROUPS": ("telegram", "stream_in_groups"),
    OUTBOUND_VARIABLE: ("outbound", "allow"),
}
"""Variables that replace one key of `config.toml` (`(table, key)`) when set and not blank."""

_PROFILE_FIELDS: Mapping[str, str] = {
    "HERMITCRAB_PROVIDER": "kind",
    "HERMITCRAB_LLM_BASE_URL": "base_url",
    "HERMITCRAB_LLM_API_KEY": "api_key",
    "HERMITCRAB_MODEL": "model",
}
# What the environment may say about the model provider: the HERMITCRAB_* profile first, then the vendors' own.
PROFILE_VARIABLES = tuple(_PROFILE_FIELDS)
PROVIDER_VARIABLES = (*PROFILE_VARIABLES, "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY")

_TABLE = ConfigDict(extra="forbid")  # an unknown key is an error, never silently ignored


def _known_zone(zone: str) -> str:
    try:
        ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {zone!r}{_nearest(zone, available_timezones())}") from None
    return zone


def _hours(span: object) -> object:
    """`'08:00-22:00'` as two times; anything else is left to the field's type."""
    if not isinstance(span, str):
        return span
    match = re.fullmatch(r"(\d\d):(\d\d)-(\d\d):(\d\d)", span.strip())
    try:
        if match is None:
            raise ValueError
        h1, m1, h2, m2 = map(int, match.groups())
        return dt.time(h1, m1), dt.time(h2 % 24, m2)
    except ValueError:
        raise ValueError(f"active_hours {span!r} should look like '08:00-22:00'") from None


def _host_and_port(listen: str) -> str:
    host, _, port = listen.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"listen address {listen!r} should be HOST:PORT, e.g. 127.0.0.1:8787")
    return listen


Zone = Annotated[str, AfterValidator(_known_zone)]


def _free_or_table(price: object) -> object:
    """`price = 0` is a free model; any other price is a table of the four rates."""
    if isinstance(price, int | float) and not isinstance(price, bool):
        if price != 0:
            raise ValueError("a bare number can only be 0 (free); give {input = ..., output = ...}, USD per 1M tokens")
        return ModelPrice(0, 0)
    return price


@dataclass(frozen=True, config=_TABLE)
class ModelPrice:
    """A profile's own price in USD per million tokens, for a local or unknown model (`hermitcrab usage`, the money
    budget); cached reads and cache writes cost the input price unless given."""

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cached_input: float | None = Field(default=None, ge=0)
    cache_write: float | None = Field(default=None, ge=0)


@dataclass(frozen=True, config=_TABLE)
class ProviderProfile:
    """One way to reach a model, as a `[[providers]]` table writes it; several give failover across keys or vendors.

    Loaded, a profile is complete: an empty `model` or `base_url` and a missing `api_key` are filled from
    `api_key_env` and the vendor's usual variables and defaults.
    """

    kind: ProviderKind = "openai"
    model: str = ""
    base_url: str = ""
    api_key: str | None = Field(default=None, repr=False)
    name: str = ""
    max_tokens: int = Field(default=4096, gt=0)
    """The longest answer asked for, in tokens."""
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] | None = None
    """Which field carries `max_tokens` to an OpenAI-compatible server. Unset: `max_completion_tokens` for
    api.openai.com (its o-series and gpt-5 models refuse `max_tokens`, and every chat model there takes the newer
    field), `max_tokens` elsewhere (what vLLM, llama.cpp, Ollama and most proxies know)."""
    timeout_s: float = Field(default=120.0, gt=0)
    max_retries: int = Field(default=3, ge=0)
    api_key_env: str | None = None
    stream: bool = True
    """Ask for the answer as a stream when someone watches the turn; false for a server that streams badly."""
    prompt_cache_key: bool | None = None
    """Send an OpenAI-compatible server a `prompt_cache_key` per session, so one session's calls reach the machine
    that cached its prompt; unset, only to api.openai.com (other servers may refuse a field they do not know)."""
    price: Annotated[ModelPrice | None, BeforeValidator(_free_or_table)] = None
    """What its answers cost, when genai-prices does not know its model; a loopback `base_url` costs 0 anyway."""
    images: bool | None = None
    """Whether its model takes images (tool results' screenshots, photos sent in a chat) beside the text; else
    each image is stated in text only. Unset: yes for `anthropic` (every Claude model does) and for api.openai.com,
    no for other OpenAI-compatible servers, whose text-only models refuse a request that holds one."""

    @property
    def label(self) -> str:
        base = f"{self.kind}:{self.model}"
        return f"{base} ({self.name})" if self.name else base


@dataclass(frozen=True, config=_TABLE)
class ServerOAuth:
    """How hermitcrab presents itself to the authorisation server of a remote server with `"auth": "oauth"`. All of
    it is optional: without `client_id` the first login registers a client (a client ID metadata document when
    `client_metadata_url` is given and the server accepts those, else dynamic registration). `redirect_port` fixes
    the loopback port of the login's redirect, for a client registered by hand with one exact redirect URI. There
    is no scope setting: the MCP spec has the client ask for the scopes the server names in its challenge."""

    client_id: str | None = None
    client_secret: str | None = Field(default=None, repr=False)
    redirect_port: int = Field(default=0, ge=0, le=65535)
    client_metadata_url: str | None = None


@dataclass(frozen=True, config=_TABLE)
class ServerConfig:
    """One MCP server in the Claude Desktop shape: a command to spawn, or a streamable HTTP url.

    `type` and `disabled` are that shape's keys too: `type` is checked against the transport, and the loader leaves
    a disabled server out. The loader sets `name` from the entry's key.
    """

    name: str = ""
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = Field(default_factory=dict[str, str], repr=False)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = Field(default_factory=dict[str, str], repr=False)
    enabled_tools: tuple[str, ...] | None = None
    disabled_tools: tuple[str, ...] = ()
    timeout_s: float = Field(default=60.0, validation_alias=AliasChoices("timeout_s", "timeout"), gt=0)
    protocol: Literal["auto", "legacy"] = "auto"
    type: Literal["stdio", "http", "streamable-http"] | None = None
    disabled: bool = False
    auth: Literal["oauth"] | None = None
    """`oauth`: an HTTP server whose requests carry the OAuth tokens `hermitcrab mcp login NAME` stored."""
    oauth: ServerOAuth = ServerOAuth()

    @model_validator(mode="after")
    def _one_transport(self) -> Self:
        if bool(self.command) == bool(self.url):
            raise ValueError("needs exactly one of 'command' or 'url'")
        if self.auth == "oauth" and not self.url:
            raise ValueError("auth 'oauth' needs a 'url': only HTTP servers log in")
        if self.type is not None and (self.type == "stdio") != bool(self.command):
            raise ValueError(f"type {self.type!r} does not match {'command' if self.command else 'url'!r}")
        return self

    def allows(self, tool: str) -> bool:
        if tool in self.disabled_tools:
            return False
        return self.enabled_tools is None or tool in self.enabled_tools


@dataclass(frozen=True, config=_TABLE)
class AgentSettings:
    """Knobs of the agent loop (`[agent]`). Loaded, the context window is the smallest of the configured models'
    unless the file or the environment sets it."""

    max_iterations: int = Field(default=20, gt=0)
    max_tool_result_chars: int = Field(default=20_000, gt=100)
    image_max_side: int = Field(default=1568, ge=64)
    """Images are downscaled to this longest side, in pixels (about what the vision APIs shrink them to anyway)."""
    image_max_bytes: int = Field(default=1_000_000, ge=10_000)
    """...and re-encoded to at most this size, so a photo or a full-page screenshot cannot bloat every request."""
    ask_timeout_s: float = Field(default=300.0, gt=0)
    timezone: Zone | None = None
    context_window_tokens: int = Field(default=DEFAULT_WINDOW, ge=4_000)
    reserve_tokens: int = Field(default=20_000, ge=0)
    keep_recent_tokens: int = Field(default=20_000, ge=0)
    flush_margin_tokens: int = Field(default=4_000, ge=0)
    memory_flush: bool = True
    compaction_timeout_s: float = Field(default=180.0, gt=0)
    max_attempts: int = Field(default=3, ge=1)
    retry_wait_s: float = Field(default=5.0, ge=0)


@dataclass(frozen=True, config=_TABLE)
class HeartbeatSettings:
    """When the heartbeat beats: every `every_minutes` (0: never), only inside `active_hours` if set."""

    every_minutes: float = Field(default=30.0, ge=0)
    active_hours: Annotated[tuple[dt.time, dt.time] | None, BeforeValidator(_hours)] = None
    timezone: Zone | None = None

    def active_at(self, now: dt.datetime) -> bool:
        if self.active_hours is None:
            return True
        start, end = self.active_hours
        local = (now.astimezone(ZoneInfo(self.timezone)) if self.timezone else now).time()
        return start <= local < end if start <= end else (local >= start or local < end)


@dataclass(frozen=True, config=_TABLE)
class WebhookSettings:
    """The webhook endpoint of `hermitcrab run`; it starts only when a token is configured."""

    listen: Annotated[str, AfterValidator(_host_and_port)] = "127.0.0.1:8787"
    token: str | None = Field(default=None, repr=False)
    owner: bool = False
    """Whether a hook call acts with the owner's rights (its own session, the owner's tools); off, it is data."""

    @property
    def host(self) -> str:
        return self.listen.rpartition(":")[0]

    @property
    def port(self) -> int:
        return int(self.listen.rpartition(":")[2])


@dataclass(frozen=True, config=_TABLE)
class DashboardSettings:
    """The owner's web dashboard that `hermitcrab run` serves; `hermitcrab dashboard` prints a login link."""

    enabled: bool = True
    listen: Annotated[str, AfterValidator(_host_and_port)] = "127.0.0.1:8790"
    """Port 0 picks a free one (`hermitcrab dashboard` reads which from the running host)."""
    hosts: tuple[str, ...] = ()
    """Host names a reverse proxy in front of it is reached by, beside the loopback names (DNS-rebinding check)."""
    public_url: str | None = None
    """Where the owner's browser reaches it through a proxy (`https://assistant.example.org`): the base of the login
    link `hermitcrab dashboard` prints, which the listen address would not be."""

    @property
    def host(self) -> str:
        return self.listen.rpartition(":")[0]

    @property
    def port(self) -> int:
        return int(self.listen.rpartition(":")[2])


DmPolicy = Literal["pairing", "allowlist", "open", "disabled"]
StreamMode = Literal["off", "partial", "progress"]
"""A Discord reply while it is written: one message at the end, a draft with the text so far, or tool lines only."""


@dataclass(frozen=True, config=_TABLE)
class DiscordChannelRule:
    """One guild channel: left out with `allow = false`; `require_mention` None means the guild's setting."""

    allow: bool = True
    require_mention: bool | None = None


@dataclass(frozen=True, config=_TABLE)
class DiscordGuildRule:
    """An allowlisted guild: its channels (none listed: all of them), the mention rule, who may talk (none: all)."""

    require_mention: bool = True
    users: tuple[str, ...] = ()
    channels: Mapping[str, DiscordChannelRule] = Field(default_factory=dict[str, DiscordChannelRule])


@dataclass(frozen=True, config=_TABLE)
class DiscordSettings:
    """The Discord channel of `hermitcrab run`; it starts only when a token is configured. `api_base` and
    `gateway_url` point it at another Discord (a test's); unset, the real one."""

    token: str | None = Field(default=None, repr=False)
    owners: tuple[str, ...] = ()
    dm_policy: DmPolicy = "pairing"
    allow_from: tuple[str, ...] = ()
    guilds: Mapping[str, DiscordGuildRule] = Field(default_factory=dict[str, DiscordGuildRule])
    max_text_attachment_bytes: int = Field(default=100_000, ge=0)
    stream: StreamMode = "partial"
    """How a reply in a DM is shown while it is written (docs/discord.md: Streaming)."""
    stream_in_guilds: StreamMode = "progress"
    """The same in guild channels and threads: tool lines only, no half-written text in front of everyone."""
    api_base: str | None = None
    gateway_url: str | None = None


@dataclass(frozen=True, config=_TABLE)
class TelegramGroupRule:
    """An allowlisted group or supergroup (by chat id): the mention rule and who may talk (none listed: all)."""

    require_mention: bool = True
    users: tuple[str, ...] = ()


@dataclass(frozen=True, config=_TABLE)
class TelegramSettings:
    """The Telegram channel of `hermitcrab run`; it starts only when a bot token is configured. `api_base` points it
    at another Bot API server (a self-hosted one, a test's); unset, api.telegram.org."""

    token: str | None = Field(default=None, repr=False)
    owners: tuple[str, ...] = ()
    dm_policy: DmPolicy = "pairing"
    allow_from: tuple[str, ...] = ()
    groups: Mapping[str, TelegramGroupRule] = Field(default_factory=dict[str, TelegramGroupRule])
    max_text_attachment_bytes: int = Field(default=100_000, ge=0)
    stream: StreamMode = "partial"
    """How a reply in a private chat is shown while it is written (docs/telegram.md: Streaming)."""
    stream_in_groups: StreamMode = "progress"
    """The same in groups and forum topics: tool lines only, no half-written text in front of everyone."""
    api_base: str | None = None


@dataclass(frozen=True, config=_TABLE)
class SkillSettings:
    """Where skills are found besides the workspace, and the environment their requirements are checked against.

    Loaded, `user_dir` is `~/.agents/skills` of the user running the host, `extra_dirs` are relative to the home and
    `environ` is the host's environment.
    """

    user_dir: Path | None = None
    extra_dirs: tuple[Path, ...] = ()
    prompt_chars: int = Field(default=3_000, ge=0)
    environ: Mapping[str, str] = Field(default_factory=dict[str, str], repr=False)


@dataclass(frozen=True, config=_TABLE)
class HookEntry:
    """`[hooks.<name>]`: one hook switched on or off, and what the owner changes of it; any other key is an option
    the hook is given (`quiet-hours`' `start`, `end`)."""

    enabled: bool | None = None
    priority: int | None = None
    timeout_s: float | None = Field(default=None, gt=0, le=600)
    on_error: Literal["allow", "deny"] | None = None
    options: Mapping[str, Any] = Field(default_factory=dict[str, Any])


@dataclass(frozen=True, config=_TABLE)
class HookSettings:
    """`[hooks]`: which hooks run (`enabled = ["command-log", ...]`, or `enabled = true` in `[hooks.<name>]`; the
    session-end capture runs unless turned off) and where more are found (`extra_dirs`, relative to the home).
    docs/hooks.md."""

    enabled: tuple[str, ...] = ()
    extra_dirs: tuple[Path, ...] = ()
    each: Mapping[str, HookEntry] = Field(default_factory=dict[str, HookEntry])

    @model_validator(mode="before")
    @classmethod
    def _tables(cls, data: object) -> object:
        """`[hooks.<name>]` tables sit beside the keys of `[hooks]`: gathered into `each`, their own keys kept and
        the rest made the hook's options. A key that is no table stays, so a misspelt one is still named."""
        if not isinstance(data, dict) or "each" in data:
            return cast(object, data)
        given = cast(dict[str, object], data)
        own = {"enabled", "priority", "timeout_s", "on_error"}
        each: dict[str, object] = {}
        for name, table in given.items():
            if isinstance(table, dict):
                entry = cast(dict[str, object], table)
                each[name] = {
                    **{k: v for k, v in entry.items() if k in own},
                    "options": {k: v for k, v in entry.items() if k not in own},
                }
        return {**{k: v for k, v in given.items() if k not in each}, "each": each}

    def switched_on(self, name: str, by_default: bool) -> bool:
        entry = self.each.get(name)
        if entry is not None and entry.enabled is not None:
            return entry.enabled
        return by_default or name in self.enabled


@dataclass(frozen=True, config=_TABLE)
class OutboundSettings:
    """`[outbound]`: what on this machine or its network requests made for the model may reach (all public addresses
    may), e.g. `allow = ["127.0.0.1:3000", "*.internal.example"]` (`hermitcrab.util.outbound`).

    The webhook channel's callbacks use it, and every server started over stdio gets it as
    `HERMITCRAB_OUTBOUND_ALLOW` (cron's webhooks, the browser), unless its entry sets that variable itself."""

    allow: tuple[str, ...] = ()

    @field_validator("allow", mode="before")
    @classmethod
    def _split(cls, allow: object) -> object:
        """`HERMITCRAB_OUTBOUND_ALLOW` gives the entries `;`-separated, as servers read it."""
        return allow_entries(allow) if isinstance(allow, str) else allow

    @field_validator("allow")
    @classmethod
    def _entries(cls, allow: tuple[str, ...]) -> tuple[str, ...]:
        Outbound(allow)  # a bad entry raises ValueError saying which and why
        return allow


@dataclass(frozen=True)
class Settings:
    """Everything the host needs, resolved once at start-up."""

    home: Path
    providers: tuple[ProviderProfile, ...]
    servers: tuple[ServerConfig, ...]
    agent: AgentSettings = AgentSettings()
    heartbeat: HeartbeatSettings = HeartbeatSettings()
    webhook: WebhookSettings = WebhookSettings()
    dashboard: DashboardSettings = DashboardSettings()
    discord: DiscordSettings = DiscordSettings()
    telegram: TelegramSettings = TelegramSettings()
    dm_scope: DmScope = "main"
    skills: SkillSettings = SkillSettings()
    hooks: HookSettings = HookSettings()
    outbound: OutboundSettings = OutboundSettings()
    policies: Mapping[Rights, ToolPolicy] = Field(default_factory=lambda: dict(DEFAULT_POLICIES))
    budget: Mapping[str, Limit] = Field(default_factory=lambda: dict(DEFAULT_LIMITS))

    def policy(self, rights: Rights) -> ToolPolicy:
        """The tool policy of a turn with these rights (`[policy.<rights>]`, else the safe default)."""
        return self.policies.get(rights, DEFAULT_POLICIES[rights])

    @property
    def config_file(self) -> Path:
        return self.home / "config.toml"

    @property
    def workspace(self) -> Path:
        return self.home / "workspace"

    @property
    def state(self) -> Path:
        return self.home / "state"

    @property
    def oauth_logins(self) -> Path:
        """Where `hermitcrab mcp login` keeps each OAuth server's tokens, one file a server."""
        return self.state / "oauth"

    def log_file(self, name: str) -> Path:
        """`state/logs/<name>`, its folder made if missing: where the host and the servers' stderr write."""
        logs = self.state / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        return logs / name

    @property
    def skill_dirs(self) -> list[Path]:
        """Where skills are looked for, highest precedence first."""
        workspace, user = self.workspace, [self.skills.user_dir] if self.skills.user_dir else []
        return [
            workspace / "skills",
            workspace / ".agents" / "skills",
            *user,
            self.home / "skills",
            *self.skills.extra_dirs,
        ]

    @property
    def hook_dirs(self) -> list[Path]:
        """Where HOOK.md folders are looked for, highest precedence first (the bundled ones come last)."""
        return [self.workspace / HOOKS_FOLDER, self.home / "hooks", *self.hooks.extra_dirs]

    def require_provider(self) -> tuple[ProviderProfile, ...]:
        if not self.providers:
            raise ConfigError(MISSING_PROVIDER_HELP.format(config=self.config_file))
        return self.providers


def home_dir(environ: Mapping[str, str]) -> Path:
    return Path(environ.get("HERMITCRAB_HOME") or Path.home() / ".hermitcrab").expanduser()


# The tables of config.toml that are not settings themselves: they name what changes from a default.


@dataclass(frozen=True, config=_TABLE)
class _Routing:
    dm_scope: DmScope = Settings.dm_scope


@dataclass(frozen=True, config=_TABLE)
class _PolicyChange:
    """`[policy.<rights>]`: globs over tool names or `<server>:<tool>`; an omitted key keeps that kind's default."""

    allow: tuple[str, ...] | None = None
    deny: tuple[str, ...] | None = None


@dataclass(frozen=True, config=_TABLE)
class _Policies:
    owner: _PolicyChange | None = None
    peer: _PolicyChange | None = None
    group: _PolicyChange | None = None
    system: _PolicyChange | None = None


@dataclass(frozen=True, config=_TABLE)
class _LimitChange:
    calls_per_day: int | None = Field(default=None, ge=0)
    tokens_per_day: int | None = Field(default=None, ge=0)
    usd_per_day: float | None = Field(default=None, ge=0)


@dataclass(frozen=True, config=_TABLE)
class _Budget(_LimitChange):
    """`[budget]`: the daily limits for everyone together; `[budget.<rights>]` those of one kind."""

    owner: _LimitChange | None = None
    peer: _LimitChange | None = None
    group: _LimitChange | None = None
    system: _LimitChange | None = None


@dataclass(frozen=True, config=_TABLE)
class _ConfigFile:
    agent: AgentSettings = AgentSettings()
    heartbeat: HeartbeatSettings = HeartbeatSettings()
    webhook: WebhookSettings = WebhookSettings()
    dashboard: DashboardSettings = DashboardSettings()
    discord: DiscordSettings = DiscordSettings()
    telegram: TelegramSettings = TelegramSettings()
    routing: _Routing = _Routing()
    skills: SkillSettings = SkillSettings()
    hooks: HookSettings = HookSettings()
    outbound: OutboundSettings = OutboundSettings()
    policy: _Policies = _Policies()
    budget: _Budget = _Budget()
    providers: tuple[ProviderProfile, ...] = ()
    mcpServers: Mapping[str, ServerConfig] = Field(default_factory=dict[str, ServerConfig])


@dataclass(frozen=True, config=ConfigDict(extra="ignore"))
class _DesktopFile:
    mcpServers: Mapping[str, ServerConfig] = Field(default_factory=dict[str, ServerConfig])


def load_settings(environ: Mapping[str, str] | None = None, mcp_config: Path | None = None) -> Settings:
    """Read `$HERMITCRAB_HOME/config.toml`, apply environment overrides; `mcp_config` replaces the server set."""
    env = os.environ if environ is None else environ
    home = home_dir(env)
    config_path = home / "config.toml"
    raw, overridden = _with_environment(_read_toml(config_path), env)
    config = _validate(_ConfigFile, raw, config_path, env, overridden)
    entries = config.mcpServers
    if mcp_config is not None:
        entries = _validate(_DesktopFile, _read_json(mcp_config), mcp_config).mcpServers
    providers = _providers(config.providers, env)
    agent = config.agent
    if "context_window_tokens" not in raw.get("agent", {}):
        smallest = min((context_window(p.model) for p in providers), default=DEFAULT_WINDOW)
        agent = replace(agent, context_window_tokens=smallest)
    return Settings(
        home=home,
        providers=providers,
        servers=tuple(
            _server(name, entry, env, config.outbound) for name, entry in entries.items() if not entry.disabled
        ),
        agent=agent,
        heartbeat=config.heartbeat,
        webhook=config.webhook,
        dashboard=config.dashboard,
        discord=config.discord,
        telegram=config.telegram,
        dm_scope=config.routing.dm_scope,
        skills=_skills(config.skills, home, env),
        hooks=replace(config.hooks, extra_dirs=tuple(home / p.expanduser() for p in config.hooks.extra_dirs)),
        outbound=config.outbound,
        policies=_policies(config.policy),
        budget=_budget(config.budget),
    )


def _with_environment(raw: dict[str, Any], env: Mapping[str, str]) -> tuple[dict[str, Any], dict[tuple[str, ...], str]]:
    """The file's tables with `ENVIRONMENT`'s variables written over their keys, and which key came from which."""
    tables = dict(raw)
    overridden: dict[tuple[str, ...], str] = {}
    for variable, (table, key) in ENVIRONMENT.items():
        value = env.get(variable, "")
        given = tables.get(table, {})
        if value.strip() and isinstance(given, dict):
            tables[table] = {**given, key: value}
            overridden[table, key] = variable
    return tables, overridden


def _budget(entry: _Budget) -> dict[str, Limit]:
    """Each kind's daily limits and the total: the defaults, with what the config names replaced."""
    given: dict[str, _LimitChange | None] = {
        TOTAL: entry,
        **{rights: getattr(entry, rights) for rights in get_args(Rights)},
    }
    limits = dict(DEFAULT_LIMITS)
    for key, limit in given.items():
        if limit is not None:
            default = DEFAULT_LIMITS[key]
            calls = default.calls_per_day if limit.calls_per_day is None else limit.calls_per_day
            tokens = default.tokens_per_day if limit.tokens_per_day is None else limit.tokens_per_day
            usd = default.usd_per_day if limit.usd_per_day is None else limit.usd_per_day
            limits[key] = Limit(calls, tokens, usd)
    return limits


def _policies(entry: _Policies) -> dict[Rights, ToolPolicy]:
    """Each kind's policy: the default, with `allow` and `deny` replaced where the config names them."""
    policies = dict(DEFAULT_POLICIES)
    for rights in get_args(Rights):
        given: _PolicyChange | None = getattr(entry, rights)
        if given is not None:
            default = DEFAULT_POLICIES[rights]
            allow = default.allow if given.allow is None else given.allow
            policies[rights] = ToolPolicy(allow, default.deny if given.deny is None else given.deny)
    return policies


def _skills(entry: SkillSettings, home: Path, env: Mapping[str, str]) -> SkillSettings:
    user_home = Path(env.get("HOME") or Path.home())
    extra = tuple(home / path.expanduser() for path in entry.extra_dirs)
    return replace(entry, user_dir=user_home / ".agents" / "skills", extra_dirs=extra, environ=dict(env))


def _server(name: str, entry: ServerConfig, env: Mapping[str, str], outbound: OutboundSettings) -> ServerConfig:
    def expand(value: str, key: str) -> str:
        return _expand_variables(value, env, f"mcpServers.{name}.{key}")

    passed = {OUTBOUND_VARIABLE: ";".join(outbound.allow)} if outbound.allow and entry.command else {}
    secret = entry.oauth.client_secret

    return replace(
        entry,
        name=name,
        command=expand(entry.command, "command") if entry.command else None,
        args=tuple(expand(arg, "args") for arg in entry.args),
        env=passed | {key: expand(value, f"env.{key}") for key, value in entry.env.items()},
        url=expand(entry.url, "url") if entry.url else None,
        headers={key: expand(value, f"headers.{key}") for key, value in entry.headers.items()},
        oauth=replace(entry.oauth, client_secret=secret and expand(secret, "oauth.client_secret")),
    )


_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def _expand_variables(value: str, env: Mapping[str, str], where: str) -> str:
    """`${NAME}` and `${NAME:-default}` in a server entry filled from the environment, as Claude Code does in
    `.mcp.json`: servers get only a small default environment, so an entry passes on what it needs by name."""

    def fill(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        found = env.get(name)
        if found is not None and (found or default is None):  # like the shell: `:-` also replaces an empty value
            return found
        if default is not None:
            return default
        raise ConfigError(f"{where}: ${{{name}}} is not set; set it, or write ${{{name}:-}} for an empty value then")

    return _VARIABLE.sub(fill, value)


def _providers(entries: tuple[ProviderProfile, ...], env: Mapping[str, str]) -> tuple[ProviderProfile, ...]:
    """Environment profile first (tests and scripts rely on it), then config profiles, then vendor keys."""
    given = {field: env[variable] for variable, field in _PROFILE_FIELDS.items() if env.get(variable)}
    profiles: list[ProviderProfile] = []
    if given:
        overridden = {(field,): variable for variable, field in _PROFILE_FIELDS.items()}
        profiles.append(_validate(ProviderProfile, {**given, "name": "environment"}, None, env, overridden))
    profiles.extend(entries)
    if not profiles:
        profiles.extend(ProviderProfile(kind) for kind in get_args(ProviderKind) if env.get(VENDOR_KEYS[kind]))
    return tuple(_completed(profile, env) for profile in profiles)


def _completed(profile: ProviderProfile, env: Mapping[str, str]) -> ProviderProfile:
    """Fill what the profile leaves out from the vendor's usual variables and defaults."""
    key = env.get(profile.api_key_env) if profile.api_key_env else profile.api_key
    vendor_url = env.get("OPENAI_BASE_URL") if profile.kind == "openai" else None
    return replace(
        profile,
        model=profile.model or DEFAULT_MODELS[profile.kind],
        base_url=(profile.base_url or vendor_url or DEFAULT_BASE_URLS[profile.kind]).rstrip("/"),
        api_key=key or env.get(VENDOR_KEYS[profile.kind]),
    )


_Model = TypeVar("_Model")


def _validate(
    model: type[_Model],
    data: object,
    source: Path | None,
    env: Mapping[str, str] | None = None,
    variables: Mapping[tuple[str, ...], str] | None = None,
) -> _Model:
    """`data` as `model`; a problem names its place in `source`, or the variable in `variables` its value came from."""
    try:
        return TypeAdapter(model).validate_python(data)
    except ValidationError as exc:
        from_file: list[str] = []
        from_env: list[str] = []
        for error in exc.errors():
            variable = (variables or {}).get(tuple(str(part) for part in error["loc"]))
            if variable is None or env is None:
                from_file.append(_problem(model, error))
            else:
                from_env.append(f"{variable}={env[variable]!r}: {_message(error)}")
        problems = [*from_env, *([f"{source}: {'; '.join(from_file)}"] if from_file else [])]
        raise ConfigError("; ".join(problems)) from exc


def _message(error: Mapping[str, Any]) -> str:
    return str(error["msg"]).removeprefix("Value error, ")


def _problem(model: type[Any], error: Mapping[str, Any]) -> str:
    """One validation error as `where: what`, naming the nearest valid key for an unknown one."""
    loc = error["loc"]
    where = ".".join(str(part) for part in loc)
    if error["type"] not in ("extra_forbidden", "unexpected_keyword_argument"):
        return f"{where}: {_message(error)}"
    return f"{where}: unknown key{_nearest(str(loc[-1]), _keys_at(model, loc[:-1]))}"


def _keys_at(model: type[Any], path: tuple[int | str, ...]) -> list[str]:
    """The keys valid in the table at `path` (dict keys and list indexes pass through to their values)."""
    annotation: Any = model
    for part in path:
        annotation = _unoptional(annotation)
        if is_pydantic_dataclass(annotation):
            field_info = _fields(annotation).get(str(part))
            if field_info is None:
                return []
            annotation = field_info.annotation
        elif get_origin(annotation) in (tuple, Mapping):
            annotation = get_args(annotation)[0 if get_origin(annotation) is tuple else -1]
        else:
            return []
    annotation = _unoptional(annotation)
    return [*_fields(annotation), *_aliases(annotation)] if is_pydantic_dataclass(annotation) else []


def _unoptional(annotation: Any) -> Any:
    if get_origin(annotation) in (Union, types.UnionType):
        annotation = next(arg for arg in get_args(annotation) if arg is not type(None))
    return annotation


def _fields(model: Any) -> dict[str, FieldInfo]:
    return model.__pydantic_fields__


def _aliases(model: Any) -> list[str]:
    names: list[str] = []
    for info in _fields(model).values():
        alias = info.validation_alias
        if isinstance(alias, AliasChoices):
            names.extend(choice for choice in alias.choices if isinstance(choice, str))
    return names


def _nearest(word: str, valid: Iterable[str]) -> str:
    match = difflib.get_close_matches(word, list(valid), n=1, cutoff=0.6)
    return f" (did you mean {match[0]!r}?)" if match else ""


def _read_toml(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: {exc}") from exc


def _read_json(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"MCP config file not found: {path}") from exc
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not valid JSON: {exc}") from exc
