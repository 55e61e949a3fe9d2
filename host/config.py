"""Turn `config.toml`, an optional Claude Desktop JSON file and the environment into frozen settings.

This is the only module that reads `os.environ` (through the `environ` mapping the CLI passes in).
"""

from __future__ import annotations

import datetime as dt
import difflib
import json
import os
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar, get_args, get_origin
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

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
MISSING_PROVIDER_HELP = """No LLM provider is configured. Set one of:
  OPENAI_API_KEY=sk-...                      (OpenAI)
  ANTHROPIC_API_KEY=sk-ant-...               (Anthropic)
  HERMITCRAB_PROVIDER=openai HERMITCRAB_LLM_BASE_URL=http://127.0.0.1:11434/v1 HERMITCRAB_MODEL=llama3.1
                                             (a local OpenAI-compatible server: Ollama, vLLM, LM Studio)
or add a [[providers]] table to {config}."""


@dataclass(frozen=True)
class ProviderProfile:
    """One way to reach a model; several profiles give failover across keys or vendors."""

    kind: ProviderKind
    model: str
    base_url: str
    api_key: str | None = field(default=None, repr=False)
    name: str = ""
    max_tokens: int = 4096
    timeout_s: float = 120.0
    max_retries: int = 3

    @property
    def label(self) -> str:
        base = f"{self.kind}:{self.model}"
        return f"{base} ({self.name})" if self.name else base


@dataclass(frozen=True)
class ServerConfig:
    """One MCP server in the Claude Desktop shape: a command to spawn, or a streamable HTTP url."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict[str, str], repr=False)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict[str, str], repr=False)
    enabled_tools: tuple[str, ...] | None = None
    disabled_tools: tuple[str, ...] = ()
    timeout_s: float = 60.0
    protocol: Literal["auto", "legacy"] = "auto"

    def allows(self, tool: str) -> bool:
        if tool in self.disabled_tools:
            return False
        return self.enabled_tools is None or tool in self.enabled_tools


@dataclass(frozen=True)
class AgentSettings:
    """Knobs of the agent loop."""

    max_iterations: int = 20
    max_tool_result_chars: int = 20_000
    ask_timeout_s: float = 300.0
    timezone: str | None = None
    context_window_tokens: int = 128_000
    reserve_tokens: int = 20_000
    keep_recent_tokens: int = 20_000
    flush_margin_tokens: int = 4_000
    memory_flush: bool = True
    compaction_timeout_s: float = 180.0
    max_attempts: int = 3
    retry_wait_s: float = 5.0


@dataclass(frozen=True)
class HeartbeatSettings:
    """When the heartbeat beats: every `every_minutes` (0: never), only inside `active_hours` if set."""

    every_minutes: float = 30.0
    active_hours: tuple[dt.time, dt.time] | None = None
    timezone: str | None = None

    def active_at(self, now: dt.datetime) -> bool:
        if self.active_hours is None:
            return True
        start, end = self.active_hours
        local = (now.astimezone(ZoneInfo(self.timezone)) if self.timezone else now).time()
        return start <= local < end if start <= end else (local >= start or local < end)


@dataclass(frozen=True)
class WebhookSettings:
    """The webhook endpoint of `hermitcrab run`; it starts only when a token is configured."""

    host: str = "127.0.0.1"
    port: int = 8787
    token: str | None = field(default=None, repr=False)
    owner: bool = False
    """Whether a hook call acts with the owner's rights (its own session, the owner's tools); off, it is data."""


DmPolicy = Literal["pairing", "allowlist", "open", "disabled"]


@dataclass(frozen=True)
class DiscordChannelRule:
    """One guild channel: left out with `allow = false`; `require_mention` None means the guild's setting."""

    allow: bool = True
    require_mention: bool | None = None


@dataclass(frozen=True)
class DiscordGuildRule:
    """An allowlisted guild: its channels (none listed: all of them), the mention rule, who may talk (none: all)."""

    require_mention: bool = True
    users: tuple[str, ...] = ()
    channels: Mapping[str, DiscordChannelRule] = field(default_factory=dict[str, DiscordChannelRule])


@dataclass(frozen=True)
class DiscordSettings:
    """The Discord channel of `hermitcrab run`; it starts only when a token is configured."""

    token: str | None = field(default=None, repr=False)
    owners: tuple[str, ...] = ()
    dm_policy: DmPolicy = "pairing"
    allow_from: tuple[str, ...] = ()
    guilds: Mapping[str, DiscordGuildRule] = field(default_factory=dict[str, DiscordGuildRule])
    max_text_attachment_bytes: int = 100_000
    api_base: str | None = None
    gateway_url: str | None = None


@dataclass(frozen=True)
class SkillSettings:
    """Where skills are found besides the workspace, and the environment their requirements are checked against."""

    user_dir: Path | None = None
    extra_dirs: tuple[Path, ...] = ()
    prompt_chars: int = 3_000
    environ: Mapping[str, str] = field(default_factory=dict[str, str], repr=False)


@dataclass(frozen=True)
class Settings:
    """Everything the host needs, resolved once at start-up."""

    home: Path
    providers: tuple[ProviderProfile, ...]
    servers: tuple[ServerConfig, ...]
    agent: AgentSettings = AgentSettings()
    heartbeat: HeartbeatSettings = HeartbeatSettings()
    webhook: WebhookSettings = WebhookSettings()
    discord: DiscordSettings = DiscordSettings()
    dm_scope: DmScope = "main"
    skills: SkillSettings = SkillSettings()
    policies: Mapping[Rights, ToolPolicy] = field(default_factory=lambda: dict(DEFAULT_POLICIES))
    budget: Mapping[str, Limit] = field(default_factory=lambda: dict(DEFAULT_LIMITS))

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

    def require_provider(self) -> tuple[ProviderProfile, ...]:
        if not self.providers:
            raise ConfigError(MISSING_PROVIDER_HELP.format(config=self.config_file))
        return self.providers


def home_dir(environ: Mapping[str, str]) -> Path:
    return Path(environ.get("HERMITCRAB_HOME") or Path.home() / ".hermitcrab").expanduser()


class _ServerEntry(BaseModel):
    """One `mcpServers` entry as Claude Desktop writes it; an unknown key is an error, never silently ignored."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["stdio", "http", "streamable-http"] | None = None
    command: str | None = None
    args: list[str] = []
    env: dict[str, str] = {}
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = {}
    enabled_tools: list[str] | None = None
    disabled_tools: list[str] = []
    timeout_s: float = Field(default=60.0, validation_alias=AliasChoices("timeout_s", "timeout"), gt=0)
    disabled: bool = False
    protocol: Literal["auto", "legacy"] = "auto"

    @model_validator(mode="after")
    def _one_transport(self) -> _ServerEntry:
        if bool(self.command) == bool(self.url):
            raise ValueError("needs exactly one of 'command' or 'url'")
        if self.type is not None and (self.type == "stdio") != bool(self.command):
            raise ValueError(f"type {self.type!r} does not match {'command' if self.command else 'url'!r}")
        return self


class _ProviderEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: ProviderKind = "openai"
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    api_key_env: str | None = None
    name: str = ""
    max_tokens: int = Field(default=4096, gt=0)
    timeout_s: float = Field(default=120.0, gt=0)
    max_retries: int = Field(default=3, ge=0)


def _known_zone(zone: str) -> str:
    try:
        ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {zone!r}{_nearest(zone, available_timezones())}") from None
    return zone


def _hours(span: str) -> tuple[dt.time, dt.time]:
    match = re.fullmatch(r"(\d\d):(\d\d)-(\d\d):(\d\d)", span.strip())
    try:
        if match is None:
            raise ValueError
        h1, m1, h2, m2 = map(int, match.groups())
        return dt.time(h1, m1), dt.time(h2 % 24, m2)
    except ValueError:
        raise ValueError(f"active_hours {span!r} should look like '08:00-22:00'") from None


Zone = Annotated[str, AfterValidator(_known_zone)]


class _HeartbeatEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    every_minutes: float = Field(default=30.0, ge=0)
    active_hours: str | None = None
    timezone: Zone | None = None

    @field_validator("active_hours")
    @classmethod
    def _span(cls, span: str | None) -> str | None:
        if span is not None:
            _hours(span)
        return span


class _WebhookEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    listen: str = "127.0.0.1:8787"
    token: str | None = None
    owner: bool = False


class _DiscordChannelEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    allow: bool = True
    require_mention: bool | None = None


class _DiscordGuildEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    require_mention: bool = True
    users: list[str] = []
    channels: dict[str, _DiscordChannelEntry] = {}


class _DiscordEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    token: str | None = None
    owners: list[str] = []
    dm_policy: DmPolicy = "pairing"
    allow_from: list[str] = []
    guilds: dict[str, _DiscordGuildEntry] = {}
    max_text_attachment_bytes: int = Field(default=100_000, ge=0)


class _RoutingEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    dm_scope: DmScope = "main"


class _PolicyEntry(BaseModel):
    """`[policy.<rights>]`: globs over tool names or `<server>:<tool>`; an omitted key keeps that kind's default."""

    model_config = ConfigDict(extra="forbid")

    allow: list[str] | None = None
    deny: list[str] | None = None


class _PoliciesEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    owner: _PolicyEntry | None = None
    peer: _PolicyEntry | None = None
    group: _PolicyEntry | None = None
    system: _PolicyEntry | None = None


class _LimitEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    calls_per_day: int | None = Field(default=None, ge=0)
    tokens_per_day: int | None = Field(default=None, ge=0)


class _BudgetEntry(_LimitEntry):
    """`[budget]`: the daily limits for everyone together; `[budget.<rights>]` those of one kind."""

    owner: _LimitEntry | None = None
    peer: _LimitEntry | None = None
    group: _LimitEntry | None = None
    system: _LimitEntry | None = None


class _SkillsEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    extra_dirs: list[str] = []
    prompt_chars: int = Field(default=3_000, ge=0)


class _AgentEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_iterations: int = Field(default=20, gt=0)
    max_tool_result_chars: int = Field(default=20_000, gt=100)
    ask_timeout_s: float = Field(default=300.0, gt=0)
    timezone: Zone | None = None
    context_window_tokens: int | None = Field(default=None, ge=4_000)
    reserve_tokens: int = Field(default=20_000, ge=0)
    keep_recent_tokens: int = Field(default=20_000, ge=0)
    flush_margin_tokens: int = Field(default=4_000, ge=0)
    memory_flush: bool = True
    compaction_timeout_s: float = Field(default=180.0, gt=0)
    max_attempts: int = Field(default=3, ge=1)
    retry_wait_s: float = Field(default=5.0, ge=0)


class _ConfigFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    agent: _AgentEntry = _AgentEntry()
    heartbeat: _HeartbeatEntry = _HeartbeatEntry()
    webhook: _WebhookEntry = _WebhookEntry()
    discord: _DiscordEntry = _DiscordEntry()
    routing: _RoutingEntry = _RoutingEntry()
    skills: _SkillsEntry = _SkillsEntry()
    policy: _PoliciesEntry = _PoliciesEntry()
    budget: _BudgetEntry = _BudgetEntry()
    providers: list[_ProviderEntry] = []
    mcpServers: dict[str, _ServerEntry] = {}


class _DesktopFile(BaseModel):
    model_config = ConfigDict(extra="ignore")

    mcpServers: dict[str, _ServerEntry] = {}


def load_settings(environ: Mapping[str, str] | None = None, mcp_config: Path | None = None) -> Settings:
    """Read `$HERMITCRAB_HOME/config.toml`, apply environment overrides; `mcp_config` replaces the server set."""
    env = os.environ if environ is None else environ
    home = home_dir(env)
    config_path = home / "config.toml"
    config = _validate(_ConfigFile, _read_toml(config_path), config_path)
    entries = config.mcpServers
    if mcp_config is not None:
        entries = _validate(_DesktopFile, _read_json(mcp_config), mcp_config).mcpServers
    beat = config.heartbeat
    providers = _providers(config.providers, env)
    return Settings(
        home=home,
        providers=providers,
        servers=tuple(_server(name, entry, env) for name, entry in entries.items() if not entry.disabled),
        agent=_agent(config.agent, providers, env),
        heartbeat=HeartbeatSettings(
            beat.every_minutes, _hours(beat.active_hours) if beat.active_hours else None, beat.timezone
        ),
        webhook=_webhook(config.webhook, env),
        discord=_discord(config.discord, env),
        dm_scope=config.routing.dm_scope,
        skills=_skills(config.skills, home, env),
        policies=_policies(config.policy),
        budget=_budget(config.budget),
    )


def _budget(entry: _BudgetEntry) -> dict[str, Limit]:
    """Each kind's daily limits and the total: the defaults, with what the config names replaced."""
    given: dict[str, _LimitEntry | None] = {
        TOTAL: entry,
        **{rights: getattr(entry, rights) for rights in get_args(Rights)},
    }
    limits = dict(DEFAULT_LIMITS)
    for key, limit in given.items():
        if limit is not None:
            default = DEFAULT_LIMITS[key]
            calls = default.calls_per_day if "calls_per_day" not in limit.model_fields_set else limit.calls_per_day
            tokens = default.tokens_per_day if "tokens_per_day" not in limit.model_fields_set else limit.tokens_per_day
            limits[key] = Limit(calls, tokens)
    return limits


def _policies(entry: _PoliciesEntry) -> dict[Rights, ToolPolicy]:
    """Each kind's policy: the default, with `allow` and `deny` replaced where the config names them."""
    policies = dict(DEFAULT_POLICIES)
    for rights in get_args(Rights):
        given: _PolicyEntry | None = getattr(entry, rights)
        if given is not None:
            default = DEFAULT_POLICIES[rights]
            allow = default.allow if given.allow is None else tuple(given.allow)
            policies[rights] = ToolPolicy(allow, default.deny if given.deny is None else tuple(given.deny))
    return policies


def _skills(entry: _SkillsEntry, home: Path, env: Mapping[str, str]) -> SkillSettings:
    """`~/.agents/skills` of the user running the host; extra directories relative to the home."""
    user_home = Path(env.get("HOME") or Path.home())
    extra = tuple(home / Path(d).expanduser() for d in entry.extra_dirs)
    return SkillSettings(user_home / ".agents" / "skills", extra, entry.prompt_chars, dict(env))


def _agent(entry: _AgentEntry, providers: tuple[ProviderProfile, ...], env: Mapping[str, str]) -> AgentSettings:
    """The context window is the smallest of the configured models' unless set; the environment wins."""
    window = _env_int(env, "HERMITCRAB_CONTEXT_WINDOW", 4_000) or entry.context_window_tokens
    reserve = _env_int(env, "HERMITCRAB_RESERVE_TOKENS", 0)
    return AgentSettings(
        **entry.model_dump(exclude={"context_window_tokens", "reserve_tokens"}),
        context_window_tokens=window or min((context_window(p.model) for p in providers), default=DEFAULT_WINDOW),
        reserve_tokens=entry.reserve_tokens if reserve is None else reserve,
    )


def _env_int(env: Mapping[str, str], name: str, minimum: int) -> int | None:
    value = env.get(name, "").strip().replace("_", "")
    if not value:
        return None
    if not value.isdigit() or int(value) < minimum:
        raise ConfigError(f"{name}={env[name]!r}: should be a whole number of tokens, at least {minimum}")
    return int(value)


def _webhook(entry: _WebhookEntry, env: Mapping[str, str]) -> WebhookSettings:
    listen = env.get("HERMITCRAB_WEBHOOK_LISTEN") or entry.listen
    host, _, port = listen.rpartition(":")
    if not host or not port.isdigit():
        raise ConfigError(f"webhook listen address {listen!r} should be HOST:PORT, e.g. 127.0.0.1:8787")
    return WebhookSettings(host, int(port), env.get("HERMITCRAB_WEBHOOK_TOKEN") or entry.token, entry.owner)


def _discord(entry: _DiscordEntry, env: Mapping[str, str]) -> DiscordSettings:
    guilds = {
        guild_id: DiscordGuildRule(
            guild.require_mention,
            tuple(guild.users),
            {channel_id: DiscordChannelRule(**rule.model_dump()) for channel_id, rule in guild.channels.items()},
        )
        for guild_id, guild in entry.guilds.items()
    }
    return DiscordSettings(
        token=env.get("DISCORD_TOKEN") or entry.token,
        owners=tuple(entry.owners),
        dm_policy=entry.dm_policy,
        allow_from=tuple(entry.allow_from),
        guilds=guilds,
        max_text_attachment_bytes=entry.max_text_attachment_bytes,
        api_base=env.get("HERMITCRAB_DISCORD_API_BASE") or None,
        gateway_url=env.get("HERMITCRAB_DISCORD_GATEWAY_URL") or None,
    )


def _server(name: str, entry: _ServerEntry, env: Mapping[str, str]) -> ServerConfig:
    def expand(value: str, key: str) -> str:
        return _expand_variables(value, env, f"mcpServers.{name}.{key}")

    return ServerConfig(
        name=name,
        command=expand(entry.command, "command") if entry.command else None,
        args=tuple(expand(arg, "args") for arg in entry.args),
        env={key: expand(value, f"env.{key}") for key, value in entry.env.items()},
        cwd=entry.cwd,
        url=expand(entry.url, "url") if entry.url else None,
        headers={key: expand(value, f"headers.{key}") for key, value in entry.headers.items()},
        enabled_tools=None if entry.enabled_tools is None else tuple(entry.enabled_tools),
        disabled_tools=tuple(entry.disabled_tools),
        timeout_s=entry.timeout_s,
        protocol=entry.protocol,
    )


# What the environment may say about the model provider: the HERMITCRAB_* profile first, then the vendors' own.
PROFILE_VARIABLES = ("HERMITCRAB_PROVIDER", "HERMITCRAB_LLM_BASE_URL", "HERMITCRAB_LLM_API_KEY", "HERMITCRAB_MODEL")
PROVIDER_VARIABLES = (*PROFILE_VARIABLES, "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY")
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


def _providers(entries: list[_ProviderEntry], env: Mapping[str, str]) -> tuple[ProviderProfile, ...]:
    """Environment profile first (tests and scripts rely on it), then config profiles, then vendor keys."""
    profiles: list[ProviderProfile] = []
    override = _env_profile(env)
    if override is not None:
        profiles.append(override)
    profiles.extend(_profile(entry, env) for entry in entries)
    if not profiles:
        if env.get("OPENAI_API_KEY"):
            profiles.append(_profile(_ProviderEntry(kind="openai"), env))
        if env.get("ANTHROPIC_API_KEY"):
            profiles.append(_profile(_ProviderEntry(kind="anthropic"), env))
    return tuple(profiles)


def _env_profile(env: Mapping[str, str]) -> ProviderProfile | None:
    if not any(env.get(name) for name in PROFILE_VARIABLES):
        return None
    kind = env.get("HERMITCRAB_PROVIDER") or "openai"
    if kind not in DEFAULT_MODELS:
        raise ConfigError(f"HERMITCRAB_PROVIDER={kind!r}: use 'openai' or 'anthropic'")
    entry = _ProviderEntry(
        kind=kind,  # pyright: ignore[reportArgumentType]  # checked against DEFAULT_MODELS just above
        base_url=env.get("HERMITCRAB_LLM_BASE_URL") or None,
        api_key=env.get("HERMITCRAB_LLM_API_KEY") or None,
        model=env.get("HERMITCRAB_MODEL") or None,
        name="environment",
    )
    return _profile(entry, env)


def _profile(entry: _ProviderEntry, env: Mapping[str, str]) -> ProviderProfile:
    """Fill what the entry leaves out from the vendor's usual variables and defaults."""
    openai = entry.kind == "openai"
    key = env.get(entry.api_key_env) if entry.api_key_env else entry.api_key
    vendor_key = env.get("OPENAI_API_KEY" if openai else "ANTHROPIC_API_KEY")
    vendor_url = env.get("OPENAI_BASE_URL") if openai else None
    return ProviderProfile(
        kind=entry.kind,
        model=entry.model or DEFAULT_MODELS[entry.kind],
        base_url=(entry.base_url or vendor_url or DEFAULT_BASE_URLS[entry.kind]).rstrip("/"),
        api_key=key or vendor_key,
        name=entry.name,
        max_tokens=entry.max_tokens,
        timeout_s=entry.timeout_s,
        max_retries=entry.max_retries,
    )


_Model = TypeVar("_Model", bound=BaseModel)


def _validate(model: type[_Model], data: object, source: Path) -> _Model:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(_problem(model, error) for error in exc.errors())
        raise ConfigError(f"{source}: {problems}") from exc


def _problem(model: type[BaseModel], error: Mapping[str, Any]) -> str:
    """One validation error as `where: what`, naming the nearest valid key for an unknown one."""
    loc = error["loc"]
    where = ".".join(str(part) for part in loc)
    if error["type"] != "extra_forbidden":
        return f"{where}: {error['msg'].removeprefix('Value error, ')}"
    return f"{where}: unknown key{_nearest(str(loc[-1]), _keys_at(model, loc[:-1]))}"


def _keys_at(model: type[BaseModel], path: tuple[int | str, ...]) -> list[str]:
    """The keys valid in the table at `path` (dict keys and list indexes pass through to their values)."""
    annotation: Any = model
    for part in path:
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            field_info = annotation.model_fields.get(str(part))
            if field_info is None:
                return []
            annotation = field_info.annotation
        elif get_origin(annotation) in (list, dict):
            annotation = get_args(annotation)[-1]
        else:
            return []
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [*annotation.model_fields, *_aliases(annotation)]
    return []


def _aliases(model: type[BaseModel]) -> list[str]:
    names: list[str] = []
    for info in model.model_fields.values():
        alias = info.validation_alias
        if isinstance(alias, AliasChoices):
            names.extend(choice for choice in alias.choices if isinstance(choice, str))
    return names


def _nearest(word: str, valid: Iterable[str]) -> str:
    match = difflib.get_close_matches(word, list(valid), n=1, cutoff=0.6)
    return f" (did you mean {match[0]!r}?)" if match else ""


def _read_toml(path: Path) -> dict[str, object]:
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
