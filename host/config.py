"""Turn `config.toml`, an optional Claude Desktop JSON file and the environment into frozen settings.

This is the only module that reads `os.environ` (through the `environ` mapping the CLI passes in).
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .errors import ConfigError

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
        return self.name or f"{self.kind}:{self.model}"


@dataclass(frozen=True)
class ServerConfig:
    """One MCP server in the Claude Desktop shape: a command to spawn, or a streamable HTTP url."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    enabled_tools: tuple[str, ...] | None = None
    disabled_tools: tuple[str, ...] = ()
    timeout_s: float = 60.0

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


@dataclass(frozen=True)
class Settings:
    """Everything the host needs, resolved once at start-up."""

    home: Path
    providers: tuple[ProviderProfile, ...]
    servers: tuple[ServerConfig, ...]
    agent: AgentSettings = AgentSettings()

    @property
    def config_file(self) -> Path:
        return self.home / "config.toml"

    @property
    def workspace(self) -> Path:
        return self.home / "workspace"

    @property
    def state(self) -> Path:
        return self.home / "state"

    def require_provider(self) -> tuple[ProviderProfile, ...]:
        if not self.providers:
            raise ConfigError(MISSING_PROVIDER_HELP.format(config=self.config_file))
        return self.providers


def home_dir(environ: Mapping[str, str]) -> Path:
    return Path(environ.get("HERMITCRAB_HOME") or Path.home() / ".hermitcrab").expanduser()


def load_settings(environ: Mapping[str, str] | None = None, mcp_config: Path | None = None) -> Settings:
    """Read `$HERMITCRAB_HOME/config.toml`, apply environment overrides; `mcp_config` replaces the server set."""
    env = os.environ if environ is None else environ
    home = home_dir(env)
    raw = _read_toml(home / "config.toml")
    servers = parse_mcp_servers(raw.get("mcpServers", {}), source=str(home / "config.toml"))
    if mcp_config is not None:
        servers = parse_mcp_servers(_read_json(mcp_config).get("mcpServers", {}), source=str(mcp_config))
    return Settings(
        home=home,
        providers=_providers(raw.get("providers", []), env),
        servers=servers,
        agent=_agent(raw.get("agent", {})),
    )


def parse_mcp_servers(table: Any, *, source: str) -> tuple[ServerConfig, ...]:
    """Parse a `mcpServers` mapping as Claude Desktop writes it."""
    if not isinstance(table, dict):
        raise ConfigError(f"{source}: mcpServers must be a table of servers")
    servers = []
    for name, spec in table.items():
        if not isinstance(spec, dict):
            raise ConfigError(f"{source}: mcpServers.{name} must be a table")
        if spec.get("disabled") is True:
            continue
        if bool(spec.get("command")) == bool(spec.get("url")):
            raise ConfigError(f"{source}: mcpServers.{name} needs exactly one of 'command' or 'url'")
        enabled = spec.get("enabled_tools")
        servers.append(
            ServerConfig(
                name=name,
                command=spec.get("command"),
                args=tuple(str(arg) for arg in spec.get("args", [])),
                env={str(k): str(v) for k, v in spec.get("env", {}).items()},
                cwd=spec.get("cwd"),
                url=spec.get("url"),
                headers={str(k): str(v) for k, v in spec.get("headers", {}).items()},
                enabled_tools=None if enabled is None else tuple(enabled),
                disabled_tools=tuple(spec.get("disabled_tools", [])),
                timeout_s=float(spec.get("timeout_s", spec.get("timeout", 60.0))),
            )
        )
    return tuple(servers)


def _providers(tables: Any, env: Mapping[str, str]) -> tuple[ProviderProfile, ...]:
    """Environment profile first (tests and scripts rely on it), then config profiles, then vendor keys."""
    profiles: list[ProviderProfile] = []
    override = _env_profile(env)
    if override is not None:
        profiles.append(override)
    if not isinstance(tables, list):
        raise ConfigError("config.toml: [[providers]] must be an array of tables")
    profiles.extend(_profile_from_table(table, env) for table in tables)
    if not profiles:
        for kind, key_var in (("openai", "OPENAI_API_KEY"), ("anthropic", "ANTHROPIC_API_KEY")):
            if env.get(key_var):
                profiles.append(_profile(kind, {"api_key": env[key_var]}, env))
    return tuple(profiles)


def _env_profile(env: Mapping[str, str]) -> ProviderProfile | None:
    wanted = ("HERMITCRAB_PROVIDER", "HERMITCRAB_LLM_BASE_URL", "HERMITCRAB_LLM_API_KEY", "HERMITCRAB_MODEL")
    if not any(env.get(name) for name in wanted):
        return None
    kind = env.get("HERMITCRAB_PROVIDER") or "openai"
    values = {
        "base_url": env.get("HERMITCRAB_LLM_BASE_URL"),
        "api_key": env.get("HERMITCRAB_LLM_API_KEY"),
        "model": env.get("HERMITCRAB_MODEL"),
        "name": "environment",
    }
    return _profile(kind, {k: v for k, v in values.items() if v}, env)


def _profile_from_table(table: Any, env: Mapping[str, str]) -> ProviderProfile:
    if not isinstance(table, dict):
        raise ConfigError("config.toml: each [[providers]] entry must be a table")
    values = dict(table)
    kind = values.pop("kind", "openai")
    key_env = values.pop("api_key_env", None)
    if key_env:
        values["api_key"] = env.get(key_env)
    return _profile(kind, values, env)


def _profile(kind: str, values: dict[str, Any], env: Mapping[str, str]) -> ProviderProfile:
    if kind not in DEFAULT_MODELS:
        raise ConfigError(f"unknown provider kind {kind!r}: use 'openai' or 'anthropic'")
    vendor_key = env.get("OPENAI_API_KEY" if kind == "openai" else "ANTHROPIC_API_KEY")
    vendor_url = env.get("OPENAI_BASE_URL") if kind == "openai" else None
    known = {"model", "base_url", "api_key", "name", "max_tokens", "timeout_s", "max_retries"}
    unknown = set(values) - known
    if unknown:
        raise ConfigError(f"provider profile has unknown keys: {', '.join(sorted(unknown))}")
    return ProviderProfile(
        kind=kind,  # type: ignore[arg-type]  # checked against DEFAULT_MODELS above
        model=values.get("model") or DEFAULT_MODELS[kind],
        base_url=(values.get("base_url") or vendor_url or DEFAULT_BASE_URLS[kind]).rstrip("/"),
        api_key=values.get("api_key") or vendor_key,
        name=values.get("name", ""),
        max_tokens=int(values.get("max_tokens", 4096)),
        timeout_s=float(values.get("timeout_s", 120.0)),
        max_retries=int(values.get("max_retries", 3)),
    )


def _agent(table: Any) -> AgentSettings:
    if not isinstance(table, dict):
        raise ConfigError("config.toml: [agent] must be a table")
    defaults = AgentSettings()
    return AgentSettings(
        max_iterations=int(table.get("max_iterations", defaults.max_iterations)),
        max_tool_result_chars=int(table.get("max_tool_result_chars", defaults.max_tool_result_chars)),
        ask_timeout_s=float(table.get("ask_timeout_s", defaults.ask_timeout_s)),
        timezone=table.get("timezone"),
    )


def _read_toml(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: {exc}") from exc


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"MCP config file not found: {path}") from exc
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object with an 'mcpServers' key")
    return data
