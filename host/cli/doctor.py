"""`hermitcrab doctor`: check the config, the provider, every MCP server, and optional system tools."""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import os
import shutil
import stat
import subprocess
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import anyio
import httpx
import typer
from mcp.client.stdio import get_default_environment
from mcp.shared.exceptions import MCPError
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from hermitcrab.dashboard.serve import serving_url
from hermitcrab.install.service import ServiceError, has_tool, manager_for
from hermitcrab.util.private import is_open_to_others
from hermitcrab.util.server_options import NO_SANDBOX

from ..config import DiscordSettings, ProviderProfile, Settings, TelegramSettings, load_settings
from ..errors import ConfigError
from ..gateway.heartbeat import has_tasks, last_beat
from ..hooks.dispatch import Hooks
from ..inbox.deadletters import FOLDER, DeadLetters
from ..inbox.lock import running
from ..mcp.oauth import login_state
from ..mcp.pool import MAX_SAME_FAILURES, McpPool, ServerHandle
from ..providers.base import Usage
from ..skills.catalog import discover, pool_tools
from ..turn.persona import BOOTSTRAP_ORDER
from ..usage.prices import Prices
from ..usage.tally import price_hints
from .options import McpConfigOption
from .run import check_listen

console = Console()
_MODELS_SHOWN = 12
_NARROW = 120
DISCORD_API = "https://discord.com/api/v10"
TELEGRAM_API = "https://api.telegram.org"
# Application flags of the privileged intent that the Discord channel asks for (verified bots, and others).
_MESSAGE_CONTENT_FLAGS = (1 << 18) | (1 << 19)


@dataclass(frozen=True)
class Check:
    area: str
    name: str
    ok: bool
    detail: str
    fatal: bool = True


def doctor(
    mcp_config: McpConfigOption = None,
) -> None:
    """Check configuration, provider reachability and each MCP server's start-up and tool list."""
    try:
        settings = load_settings(mcp_config=mcp_config)
    except ConfigError as exc:
        console.print(f"[red]config error:[/red] {exc}", soft_wrap=True, highlight=False)
        console.print(
            f"fix: correct the key or value named above in {mcp_config or 'config.toml'}, then run doctor again"
        )
        raise typer.Exit(1) from exc
    with console.status("checking…") as status:

        def show(line: str) -> None:
            status.update(escape(line))

        checks = anyio.run(run_checks, settings, show)
    table = Table("", "area", "check", "detail")
    for column in table.columns[1:]:  # a word longer than its column (a path) folds inside its cell, never cut
        column.overflow = "fold"
    if console.width < _NARROW:  # the detail column gets the room, so its sentences keep their words whole
        table.columns[1].max_width, table.columns[2].max_width = 14, 18
    for check in checks:
        mark = "[green]ok[/green]" if check.ok else ("[red]FAIL[/red]" if check.fatal else "[yellow]warn[/yellow]")
        table.add_row(mark, check.area, escape(check.name), escape(check.detail))  # details quote [sections]
    console.print(table)
    if any(not c.ok and c.fatal for c in checks):
        raise typer.Exit(1)


async def run_checks(settings: Settings, progress: Callable[[str], None] = lambda line: None) -> list[Check]:
    """Every check, in the table's order; those that wait on something (the provider, Discord, Telegram, the
    servers, bubblewrap) run at once, `progress` told which are still running."""
    checks = [_home_check(settings), _private_check(settings), *_workspace_checks(settings)]
    if not settings.providers:
        checks.append(Check("provider", "configured", False, settings_help(settings)))
    async with httpx.AsyncClient() as client:
        waits = {
            "provider": lambda: _provider_checks(client, settings),
            "Discord": lambda: _discord_checks(client, settings),
            "Telegram": lambda: _telegram_checks(client, settings.telegram),
            "MCP servers": lambda: _server_checks(settings),
            "exec sandbox": lambda: anyio.to_thread.run_sync(lambda: [_sandbox_check()]),
        }
        found = await _concurrently(waits, progress)
    checks.extend([*found["provider"], *found["Discord"], *found["Telegram"], *_login_checks(settings)])
    checks.extend([*found["MCP servers"], *_subagent_checks(settings), _run_check(settings)])
    checks.extend([_webhook_check(settings), _heartbeat_check(settings)])
    checks.append(_deadletters_check(settings))
    checks.extend(_hook_checks(settings))
    checks.append(_dashboard_check(settings))
    checks.extend(found["exec sandbox"])
    checks.append(_optional_tool("chromium", "browser", "apt-get install chromium (needed by the browser server)"))
    checks.append(_service_check())
    return checks


async def _concurrently(
    waits: Mapping[str, Callable[[], Awaitable[list[Check]]]], progress: Callable[[str], None]
) -> dict[str, list[Check]]:
    """Run each wait at once; `progress` hears which are left after each one ends."""
    found: dict[str, list[Check]] = {}
    left = list(waits)
    progress(f"checking {', '.join(left)}…")

    async def one(name: str) -> None:
        found[name] = await waits[name]()
        left.remove(name)
        progress(f"checking {', '.join(left)}…" if left else "done")

    async with anyio.create_task_group() as group:
        for name in waits:
            group.start_soon(one, name)
    return found


async def _provider_checks(client: httpx.AsyncClient, settings: Settings) -> list[Check]:
    prices = Prices(settings.providers)
    checks: list[Check] = []
    for profile in settings.providers:
        checks.extend([*await _provider_check(client, profile), _price_check(prices, profile)])
    return checks


def _run_check(settings: Settings) -> Check:
    """Whether a `hermitcrab run` holds this home now: a second one would be refused."""
    pid = running(settings.state)
    if pid is None:
        return Check("run", "running", True, "no `hermitcrab run` for this home now", fatal=False)
    return Check("run", "running", True, f"`hermitcrab run` is running for this home (pid {pid})", fatal=False)


def _webhook_check(settings: Settings) -> Check:
    """Off without a token; else served by a running `run`, or its port free (one another program holds fails
    `run` at start)."""
    webhook = settings.webhook
    if not webhook.token:
        return Check("webhook", "served", True, "off (no [webhook] token or HERMITCRAB_WEBHOOK_TOKEN)", fatal=False)
    if running(settings.state) is not None:
        return Check("webhook", "served", True, f"http://{webhook.listen}/hooks/agent, by the running run")
    try:
        check_listen(webhook.host, webhook.port, "webhook")
    except ConfigError as exc:
        return Check("webhook", "served", False, str(exc))
    return Check("webhook", "served", True, f"{webhook.listen} is free: `hermitcrab run` serves /hooks/agent")


def _heartbeat_check(settings: Settings) -> Check:
    """How often the heartbeat beats, whether HEARTBEAT.md gives it anything to do, and the last beat."""
    every = settings.heartbeat.every_minutes
    if every <= 0:
        return Check("heartbeat", "beats", True, "off ([heartbeat] every_minutes = 0)", fatal=False)
    path = settings.workspace / "HEARTBEAT.md"
    tasks = path.exists() and has_tasks(path.read_text(encoding="utf-8", errors="replace"))
    idle = "" if tasks else f"; {path.name} has no tasks, so no beat calls the model"
    return Check("heartbeat", "beats", True, f"every {every:g} min{idle}; {last_beat(settings.state)}", fatal=False)


def _dashboard_check(settings: Settings) -> Check:
    """Off, served by a running `run`, or free to be served: a port another program holds fails `run` at start."""
    if not settings.dashboard.enabled:
        return Check("dashboard", "served", True, "off ([dashboard] enabled = false)", fatal=False)
    url = serving_url(settings)
    if url is not None:
        return Check("dashboard", "served", True, f"{url} (hermitcrab dashboard prints a login link)")
    try:
        check_listen(settings.dashboard.host, settings.dashboard.port, "dashboard")
    except ConfigError as exc:
        return Check("dashboard", "served", False, str(exc))
    return Check("dashboard", "served", True, f"{settings.dashboard.listen} is free: `hermitcrab run` serves it")


def settings_help(settings: Settings) -> str:
    try:
        settings.require_provider()
    except ConfigError as exc:
        return str(exc)
    return ""


async def _discord_checks(client: httpx.AsyncClient, settings: Settings) -> list[Check]:
    """With a bot token: the extra is installed, Discord takes the token, and the bot may read messages (without
    the Message Content Intent, Discord refuses the channel's connection). No token, no rows."""
    config = settings.discord
    if not config.token:
        return []
    if importlib.util.find_spec("discord") is None:
        return [Check("discord", "extra", False, "a bot token is set: pip install 'hermitcrab[discord]'")]
    where = "Discord: Settings → Advanced → Developer Mode, then right-click your name → Copy User ID"
    return [_owner_check("discord", config.owners, where), *await _discord_login_checks(client, config)]


def _owner_check(channel: str, owners: tuple[str, ...], where: str) -> Check:
    if owners:
        return Check(channel, "owner", True, f"owners: {', '.join(owners)}")
    fix = (
        f'nobody is the owner, so everyone is a peer: set owners = ["<your user id>"] under [{channel}] in '
        f"config.toml ({where})"
    )
    return Check(channel, "owner", False, fix, fatal=False)


async def _discord_login_checks(client: httpx.AsyncClient, config: DiscordSettings) -> list[Check]:
    """Discord takes the token, and the bot may read messages."""
    base = (config.api_base or DISCORD_API).rstrip("/")
    headers = {"Authorization": f"Bot {config.token}"}
    try:
        me = await client.get(f"{base}/users/@me", headers=headers, timeout=10)
        if me.status_code in (401, 403):
            fix = "reset it in the Developer Portal (Bot → Reset Token) and set DISCORD_TOKEN or [discord] token"
            return [Check("discord", "token", False, f"Discord refused the bot token (HTTP {me.status_code}): {fix}")]
        me.raise_for_status()
        application = await client.get(f"{base}/oauth2/applications/@me", headers=headers, timeout=10)
        application.raise_for_status()
    except httpx.HTTPError as exc:
        return [Check("discord", "reachable", False, f"cannot reach Discord at {base}: {type(exc).__name__}")]
    user = me.json()
    intent = bool(int(application.json().get("flags", 0)) & _MESSAGE_CONTENT_FLAGS)
    intent_detail = "on" if intent else "off: turn on Message Content Intent (Developer Portal → Bot)"
    return [
        Check("discord", "token", True, f"logs in as {user.get('username')} ({user.get('id')})"),
        Check("discord", "message content intent", intent, intent_detail),
    ]


async def _telegram_checks(client: httpx.AsyncClient, config: TelegramSettings) -> list[Check]:
    """With a bot token: the extra is installed, Telegram takes the token (getMe), no webhook is set (getUpdates is
    refused while one is), and privacy mode lets the bot see what groups set to answer without a mention say."""
    if not config.token:
        return []
    if importlib.util.find_spec("telegram") is None:
        return [Check("telegram", "extra", False, "a bot token is set: pip install 'hermitcrab[telegram]'")]
    owner = _owner_check("telegram", config.owners, "Telegram: message @userinfobot for your numeric id")
    base = (config.api_base or TELEGRAM_API).rstrip("/")
    try:
        me = await client.get(f"{base}/bot{config.token}/getMe", timeout=10)
        if me.status_code in (401, 404):
            fix = "copy it again from @BotFather (/token) into TELEGRAM_BOT_TOKEN or [telegram] token"
            return [owner, Check("telegram", "token", False, f"Telegram refused the bot token: {fix}")]
        me.raise_for_status()
        hook = await client.get(f"{base}/bot{config.token}/getWebhookInfo", timeout=10)
        hook.raise_for_status()
    except httpx.HTTPError as exc:  # the URL holds the token: only the error's kind is said
        return [owner, Check("telegram", "reachable", False, f"cannot reach Telegram at {base}: {type(exc).__name__}")]
    bot = me.json().get("result", {})
    checks = [owner, Check("telegram", "token", True, f"logs in as @{bot.get('username')} ({bot.get('id')})")]
    if url := hook.json().get("result", {}).get("url"):
        detail = f"a webhook is set ({url.split('?')[0]}), so Telegram refuses getUpdates: remove it (deleteWebhook)"
        checks.append(Check("telegram", "webhook", False, detail))
    unmentioned = [chat for chat, rule in config.groups.items() if not rule.require_mention]
    if unmentioned and not bot.get("can_read_all_group_messages"):
        detail = (
            f"privacy mode is on, so in {', '.join(unmentioned)} (require_mention = false) the bot sees only "
            "commands, mentions and replies: @BotFather → /setprivacy → Disable, then re-add the bot to the group"
        )
        checks.append(Check("telegram", "privacy mode", False, detail, fatal=False))
    return checks


def _home_check(settings: Settings) -> Check:
    exists = settings.config_file.exists()
    detail = str(settings.config_file) if exists else f"{settings.config_file} missing: run `hermitcrab init`"
    return Check("home", "config.toml", exists, detail, fatal=False)


def _private_check(settings: Settings) -> Check:
    """config.toml holds tokens and the home holds conversations and memories: no other user should read them.

    Only a warning: `run` and `chat` make them private at start."""
    wanted = {settings.config_file: "600", settings.home: "700"}
    wide = [path for path in wanted if path.exists() and is_open_to_others(path)]
    if not wide:
        return Check("home", "private", True, "config.toml and the home are the owner's alone")
    found = "; ".join(f"{path} is open to other users (mode {stat.S_IMODE(path.stat().st_mode):04o})" for path in wide)
    fix = "; ".join(f"chmod {wanted[path]} {path}" for path in wide)
    return Check("home", "private", False, f"{found}: run {fix} (`run` and `chat` do it at start)", fatal=False)


def _workspace_checks(settings: Settings) -> list[Check]:
    missing = [name for name in BOOTSTRAP_ORDER if name != "BOOTSTRAP.md" and not (settings.workspace / name).exists()]
    detail = "all persona files present" if not missing else f"missing {', '.join(missing)}: run `hermitcrab init`"
    return [Check("workspace", str(settings.workspace), not missing, detail, fatal=False)]


async def _provider_check(client: httpx.AsyncClient, profile: ProviderProfile) -> list[Check]:
    """The provider answers, takes the key, and lists the profile's model (a provider without a model list, or
    one doctor cannot read, is no fault: many local servers have none)."""
    if profile.kind == "anthropic":
        url, headers = (
            f"{profile.base_url}/v1/models",
            {"x-api-key": profile.api_key or "", "anthropic-version": "2023-06-01"},
        )
    else:
        url, headers = (
            f"{profile.base_url}/models",
            {"Authorization": f"Bearer {profile.api_key}"} if profile.api_key else {},
        )
    try:
        response = await client.get(url, headers=headers, timeout=10)
    except httpx.HTTPError as exc:
        fix = "check that the server is running and the base URL (HERMITCRAB_LLM_BASE_URL, or base_url) is right"
        return [Check("provider", profile.label, False, f"cannot reach {url} ({type(exc).__name__}): {fix}")]
    if response.status_code in (401, 403):
        detail = f"{profile.base_url} rejected the API key (HTTP {response.status_code})"
        return [Check("provider", profile.label, False, detail)]
    ok = response.status_code < 500
    reached = Check("provider", profile.label, ok, f"{profile.base_url} answered HTTP {response.status_code}")
    offered = _model_ids(response) if response.status_code == 200 else None
    if offered is None:
        return [reached]
    name = f"{profile.label} model"
    if profile.model in offered:
        return [reached, Check("provider", name, True, f"{profile.model} is among the {len(offered)} it offers")]
    shown = ", ".join(sorted(offered)[:_MODELS_SHOWN]) + (", …" if len(offered) > _MODELS_SHOWN else "")
    detail = f"{profile.model} is not among the models {url} lists; it offers {shown or 'none'}: set model"
    return [reached, Check("provider", name, False, detail, fatal=False)]


def _model_ids(response: httpx.Response) -> set[str] | None:
    """The model ids of an OpenAI or Anthropic `/models` answer (`{"data": [{"id": ...}]}`), None if it is none."""
    try:
        data = response.json().get("data")
    except (ValueError, AttributeError):
        return None
    if not isinstance(data, list):
        return None
    models = [cast(dict[str, object], item) for item in cast(list[object], data) if isinstance(item, dict)]
    return {str(model["id"]) for model in models if "id" in model}


async def _server_checks(settings: Settings) -> list[Check]:
    if not settings.servers:
        none = Check("mcp", "servers", False, "no mcpServers configured: the agent has no tools", fatal=False)
        return [none, *_skill_checks(settings, set())]
    with settings.log_file("doctor-servers.log").open("w", encoding="utf-8") as errlog:
        logins = settings.oauth_logins
        async with McpPool(settings.servers, startup_timeout_s=30, errlog=errlog, oauth_logins=logins) as pool:
            servers = [_server_check(handle) for handle in pool.handles.values()]
            execs = [await _exec_check(handle) for handle in pool.handles.values() if _serves_exec(handle)]
            return [*servers, *execs, *_skill_checks(settings, pool_tools(pool))]


# What each ask mode of the exec server (exec://status's `ask`, the mode in force) asks the owner about.
_ASKS = {
    "on-leave": "only what would leave the sandbox (a write outside the workspace)",
    "on-change": "before every command that changes files or settings",
    "on-miss": "before every command the allowlist does not cover",
    "always": "before every command",
    "off": "nothing: what the allowlist does not cover is refused",
}


def _serves_exec(handle: ServerHandle) -> bool:
    return handle.ready and any(tool.name == "exec" for tool in handle.tools)


async def _exec_check(handle: ServerHandle) -> Check:
    """What a running exec server says it does (exec://status): in a sandbox or not, and what it asks."""
    name = handle.config.name
    try:
        status = json.loads(await handle.read_resource("exec://status"))
    except (MCPError, TimeoutError, ValueError) as exc:
        return Check("exec", name, False, f"exec://status could not be read: {exc}", fatal=False)
    asks = f"asks ({status.get('ask')}) {_ASKS.get(status.get('ask'), '?')}"
    if status.get("sandbox") == "none":
        why = status.get("sandbox_problem") or "--sandbox none"
        return Check("exec", name, False, f"no sandbox ({why}): {NO_SANDBOX}; it {asks}", fatal=False)
    return Check("exec", name, True, f"commands run in a sandbox; it {asks}", fatal=False)


def _login_checks(settings: Settings) -> list[Check]:
    """Each OAuth server's stored login and when its token expires, read from state/oauth (the server's own row
    below says whether it then accepted it)."""
    logins = settings.oauth_logins
    return [Check("oauth", s.name, *login_state(s, logins)) for s in settings.servers if s.auth == "oauth"]


def _subagent_checks(settings: Settings) -> list[Check]:
    """Whether a sub-agent finds a model. Our spawn server starts `hermitcrab subagent` with the environment it was
    given, and MCP hosts (this one too) give a server only PATH, HOME and the like plus its entry's `env`: a key
    exported only in this shell works for the agent but never reaches its sub-agents."""
    spawn = next((s for s in settings.servers if s.command and Path(s.command).name == "hermitcrab-spawn"), None)
    if spawn is None or not settings.providers:
        return []
    child = get_default_environment() | dict(spawn.env) | {"HERMITCRAB_HOME": str(settings.home)}
    try:
        found = load_settings(child).providers
    except ConfigError as exc:
        detail = (
            f"a sub-agent cannot read the config: {exc}; a variable a server entry uses must also be passed on in "
            f'[mcpServers.{spawn.name}] env (NAME = "${{NAME}}")'
        )
        return [Check("spawn", "sub-agent provider", False, detail, fatal=False)]
    if found:
        return [Check("spawn", "sub-agent provider", True, f"sub-agents use {found[0].label} at {found[0].base_url}")]
    detail = (
        f"sub-agents find no model provider: the key is only in this shell's environment, which servers do not "
        f'inherit; pass it on in [mcpServers.{spawn.name}] env (NAME = "${{NAME:-}}", as init writes it) or '
        f"put it in {settings.config_file} ([[providers]] api_key)"
    )
    return [Check("spawn", "sub-agent provider", False, detail, fatal=False)]


def _price_check(prices: Prices, profile: ProviderProfile) -> Check:
    """Whether `hermitcrab usage` and a money budget can price this profile's answers; a warning, not a fault."""
    name = f"{profile.label} price"
    cost = prices.cost(profile.label, profile.model, Usage(1_000_000, 1_000_000), dt.datetime.now(dt.UTC))
    if cost is None:
        return Check("provider", name, False, price_hints([(profile.label, profile.model)])[0], fatal=False)
    return Check("provider", name, True, f"${cost:,.2f} per 1M tokens in and 1M out", fatal=False)


def _deadletters_check(settings: Settings) -> Check:
    """Items that kept failing wait for the owner's say (retry or drop); nothing is broken, so only a warning."""
    count = len(DeadLetters(settings.state / FOLDER).list())
    if not count:
        return Check("deadletters", "set aside", True, "none", fatal=False)
    noun = "dead letter" if count == 1 else "dead letters"
    return Check("deadletters", "set aside", False, f"{count} {noun}: hermitcrab deadletters list", fatal=False)


def _hook_checks(settings: Settings) -> list[Check]:
    """The hooks that run, and one warning per hook that failed to load (or is enabled but nowhere), saying why."""
    found = Hooks.load(settings)
    running = ", ".join(hook.name for hook in found.hooks) or "none"
    checks = [Check("hooks", "running", True, running, fatal=False)]
    for item in found.broken:
        checks.append(Check("hooks", item.name, False, f"not loaded: {item.reason} ({item.source})", fatal=False))
    return checks


def _skill_checks(settings: Settings, tools: set[str]) -> list[Check]:
    """The skills offered, and one warning per skill left out, saying why (a missing binary, variable, tool)."""
    catalog = discover(settings.skill_dirs, settings.skills.environ, tools)
    offered = ", ".join(skill.name for skill in catalog.skills) or "none found"
    checks = [Check("skills", "offered", True, offered, fatal=False)]
    for item in catalog.left_out:
        checks.append(Check("skills", item.name, False, f"left out: {item.reason} ({item.path})", fatal=False))
    return checks


def _server_check(handle: ServerHandle) -> Check:
    if handle.ready:
        listed = ", ".join(tool.name for tool in handle.tools)
        return Check("mcp", handle.config.name, True, f"{len(handle.tools)} tools: {listed}")
    if handle.login_required is not None:
        waiting = f"waiting for a login: {handle.login_required}; a running host connects once one is stored"
        return Check("mcp", handle.config.name, False, waiting)
    error = handle.last_error or "timed out"
    if "FileNotFoundError" in error:
        fix = f"fix: install {handle.config.command!r} or correct its `command` path"
    else:
        fix = "fix: its stderr is in state/logs/doctor-servers.log"
    return Check(
        "mcp",
        handle.config.name,
        False,
        f"did not start: {error}; {fix}. A running host stops restarting a server after "
        f"{MAX_SAME_FAILURES} identical failures (see /status).",
    )


def _sandbox_check() -> Check:
    """Whether bubblewrap can make the exec server's sandbox here (it needs user namespaces)."""
    bwrap = shutil.which("bwrap")
    problem = "bubblewrap is not installed" if bwrap is None else None
    if bwrap is not None:
        try:
            probe = subprocess.run(
                [bwrap, "--unshare-user", "--ro-bind", "/", "/", "true"], capture_output=True, text=True, timeout=10
            )
            if probe.returncode != 0:
                problem = f"bubblewrap cannot start here: {probe.stderr.strip()[:120] or probe.returncode}"
        except (OSError, subprocess.TimeoutExpired) as exc:
            problem = f"bubblewrap cannot start here: {exc}"
    if problem is None:
        detail = f"{bwrap}: commands run in a sandbox; what would leave it (a write outside the workspace) is asked"
        return Check("exec sandbox", "bwrap", True, detail, fatal=False)
    return Check(
        "exec sandbox",
        "bwrap",
        False,
        f"no sandbox ({problem}): {NO_SANDBOX}, so every command off it is asked; install bubblewrap "
        "(apt-get install bubblewrap), or on macOS run the server under sandbox-exec",
        fatal=False,
    )


def _service_check() -> Check:
    """Whether `hermitcrab run` is installed as a user service, and running; optional, so never fatal."""
    try:
        manager = manager_for(os.environ)
    except ServiceError as exc:
        return Check("service", "hermitcrab run", True, str(exc), fatal=False)
    if not manager.path.exists():
        how = ": `hermitcrab service install` keeps it running"
        if not has_tool(manager):
            how = f", and no {manager.tool} here"
        return Check("service", "installed", True, f"no{how}", fatal=False)
    state = manager.state()
    return Check("service", str(manager.path), state.running is True, "; ".join(state.lines), fatal=False)


def _optional_tool(binary: str, area: str, hint: str) -> Check:
    path = shutil.which(binary)
    return Check(area, binary, path is not None, path or f"not installed: {hint}", fatal=False)


def register(app: typer.Typer) -> None:
    app.command()(doctor)
