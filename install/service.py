"""Keep `hermitcrab run` running for months: a systemd user unit (Linux) or a launchd agent (macOS).

Install writes one file and asks the service manager to (re)start it; uninstall stops it and removes that file
only (logs and `HERMITCRAB_HOME` stay). The service sees none of the installing shell's variables except `PATH`,
so API keys belong in `config.toml` (`api_key = ...`), which `hermitcrab init` makes private to its owner.
"""

from __future__ import annotations

import dataclasses
import getpass
import os
import plistlib
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from hermitcrab.host.config import ENVIRONMENT, PROVIDER_VARIABLES, Settings, home_dir, load_settings
from hermitcrab.host.errors import ConfigError, HermitcrabError
from hermitcrab.util.files import atomic_write_text

UNIT_NAME = "hermitcrab.service"
AGENT_LABEL = "local.hermitcrab"
RESTART_DELAY_S = 10
STOP_TIMEOUT_S = 120  # `run` finishes the running turn on SIGTERM before it exits


class ServiceError(HermitcrabError):
    """The service cannot be installed, removed or queried here."""


@dataclass(frozen=True)
class Program:
    """What the service runs: this installation's `hermitcrab run`, pinned to one home."""

    script: Path
    home: Path
    path: str  # the installing shell's PATH: servers and skills find the same binaries under the service

    @property
    def argv(self) -> list[str]:
        return [str(self.script), "run"]


@dataclass(frozen=True)
class Command:
    argv: tuple[str, ...]
    may_fail: bool = False  # e.g. stopping a service that is not loaded

    def __str__(self) -> str:
        return shlex.join(self.argv)


@dataclass(frozen=True)
class State:
    """What the service manager says about the service: running or not (None: it could not be asked)."""

    running: bool | None
    lines: list[str]


class ServiceManager(Protocol):
    """One platform's service manager: its file, the commands around it (`run_commands` runs them), its state."""

    path: Path  # the one file install writes and uninstall removes
    logs: str  # how to read the service's output
    tool: str  # the command that starts and stops it

    def render(self, program: Program) -> str:
        """The file's content: `program` restarted on failure, its output where `logs` finds it."""
        ...

    def start(self) -> list[Command]:
        """(Re)start the service from the file just written."""
        ...

    def stop(self) -> list[Command]:
        """Stop it and keep it from starting again, before the file is removed."""
        ...

    def forget(self) -> list[Command]:
        """Tell the manager the file is gone."""
        ...

    def state(self) -> State:
        """Whether it runs and how it last exited, as the manager says now."""
        ...

    def notes(self) -> list[str]:
        """What the user may still want to do once it is installed."""
        ...


class Systemd:
    """A systemd user unit: `systemctl --user` starts it, the journal keeps its output."""

    logs = "journalctl --user -u hermitcrab -f"
    tool = "systemctl"

    def __init__(self, environ: Mapping[str, str]) -> None:
        config = environ.get("XDG_CONFIG_HOME", "")
        base = Path(config) if os.path.isabs(config) else Path.home() / ".config"
        self.path = base / "systemd" / "user" / UNIT_NAME

    def render(self, program: Program) -> str:
        return "\n".join(
            [
                "# Written by `hermitcrab service install`; `hermitcrab service uninstall` stops and removes it.",
                "[Unit]",
                "Description=hermitcrab personal AI assistant (hermitcrab run)",
                # at most 5 starts in 10 minutes: a broken config stops flapping and shows as failed
                "StartLimitIntervalSec=600",
                "StartLimitBurst=5",
                "",
                "[Service]",
                "Type=exec",
                f"ExecStart={' '.join(_systemd_quote(arg).replace('$', '$$') for arg in program.argv)}",
                f"Environment={_systemd_quote(f'HERMITCRAB_HOME={program.home}')}",
                f"Environment={_systemd_quote(f'PATH={program.path}')}",
                "Environment=PYTHONUNBUFFERED=1",
                "Restart=on-failure",
                f"RestartSec={RESTART_DELAY_S}",
                # SIGTERM to `run` only: it finishes the running turn and stops its MCP servers itself
                "KillMode=mixed",
                f"TimeoutStopSec={STOP_TIMEOUT_S}",
                "SyslogIdentifier=hermitcrab",
                "",
                "[Install]",
                "WantedBy=default.target",
                "",
            ]
        )

    def start(self) -> list[Command]:
        return [
            _systemctl("daemon-reload"),
            _systemctl("enable", UNIT_NAME),
            _systemctl("restart", UNIT_NAME),
        ]

    def stop(self) -> list[Command]:
        return [_systemctl("disable", "--now", UNIT_NAME, may_fail=True)]

    def forget(self) -> list[Command]:
        return [_systemctl("daemon-reload", may_fail=True)]

    def state(self) -> State:
        keys = "ActiveState,SubState,MainPID,NRestarts,ExecMainStatus,ExecMainExitTimestamp,Result"
        try:
            return systemd_state(_query(_systemctl("show", UNIT_NAME, f"--property={keys}")))
        except ServiceError as exc:
            return State(None, [f"running: unknown ({exc})"])

    def notes(self) -> list[str]:
        user = getpass.getuser()
        if (Path("/var/lib/systemd/linger") / user).exists():
            return []
        return [
            "it runs while you are logged in; to start it at boot and keep it after you log out: "
            f"sudo loginctl enable-linger {user}"
        ]


def systemd_state(show: str) -> State:
    """`systemctl show`'s Key=Value lines as two readable lines."""
    values = dict(line.split("=", 1) for line in show.splitlines() if "=" in line)
    running = values.get("ActiveState") == "active"
    if running:
        now = f"yes (pid {values.get('MainPID', '?')})"
    else:
        now = f"no ({values.get('ActiveState', 'unknown')}/{values.get('SubState', '?')})"
    lines = [f"running: {now}, {values.get('NRestarts', '0')} automatic restarts since it was last started"]
    if exited := values.get("ExecMainExitTimestamp"):
        lines.append(f"last exit: status {values.get('ExecMainStatus', '?')} at {exited} ({values.get('Result')})")
    return State(running, lines)


class Launchd:
    """A launchd agent in the user's GUI domain: starts at login, restarted when it exits with an error."""

    tool = "launchctl"

    def __init__(self, uid: int) -> None:
        self.domain = f"gui/{uid}"
        self.path = Path.home() / "Library" / "LaunchAgents" / f"{AGENT_LABEL}.plist"
        self.log_file = Path.home() / "Library" / "Logs" / "hermitcrab.log"  # the folder Console.app shows
        self.logs = f"tail -f {shlex.quote(str(self.log_file))}"

    def render(self, program: Program) -> str:
        agent = {
            "Label": AGENT_LABEL,
            "ProgramArguments": program.argv,
            "EnvironmentVariables": {
                "HERMITCRAB_HOME": str(program.home),
                "PATH": program.path,
                "PYTHONUNBUFFERED": "1",
            },
            "RunAtLoad": True,
            "KeepAlive": {"SuccessfulExit": False},
            "ThrottleInterval": RESTART_DELAY_S,
            "ExitTimeOut": STOP_TIMEOUT_S,
            "StandardOutPath": str(self.log_file),
            "StandardErrorPath": str(self.log_file),
        }
        return plistlib.dumps(agent).decode()

    def start(self) -> list[Command]:
        return [*self.stop(), Command(("launchctl", "bootstrap", self.domain, str(self.path)))]

    def stop(self) -> list[Command]:
        return [Command(("launchctl", "bootout", f"{self.domain}/{AGENT_LABEL}"), may_fail=True)]

    def forget(self) -> list[Command]:
        return []

    def state(self) -> State:
        try:
            return launchd_state(_query(Command(("launchctl", "print", f"{self.domain}/{AGENT_LABEL}"))))
        except ServiceError as exc:
            return State(False, [f"running: no (not loaded: {exc})"])

    def notes(self) -> list[str]:
        return []


def launchd_state(printed: str) -> State:
    """The few lines of `launchctl print` that matter."""
    fields = dict(re.findall(r"^\t(state|pid|last exit code) = (.+)$", printed, re.MULTILINE))
    running = fields.get("state") == "running"
    now = f"yes (pid {fields.get('pid', '?')})" if running else f"no ({fields.get('state', 'unknown')})"
    return State(running, [f"running: {now}", f"last exit: {fields.get('last exit code', 'unknown')}"])


def manager_for(environ: Mapping[str, str], platform: str = sys.platform) -> ServiceManager:
    if platform.startswith("linux"):
        return Systemd(environ)
    if platform == "darwin":
        return Launchd(os.getuid())
    raise ServiceError(
        f"`hermitcrab service` knows systemd (Linux) and launchd (macOS), not {platform}; "
        "run `hermitcrab run` under your own supervisor, or in the container (see the README)"
    )


def program_for(environ: Mapping[str, str]) -> Program:
    """This installation's `hermitcrab` script: beside this Python (an unactivated venv), else on PATH."""
    beside = Path(sys.executable).parent / "hermitcrab"
    found = str(beside) if beside.exists() else shutil.which("hermitcrab")
    if found is None:
        raise ServiceError(f"cannot find the `hermitcrab` script beside {sys.executable} or on PATH")
    return Program(Path(found).absolute(), home_dir(environ), environ.get("PATH", os.defpath))


def preflight(program: Program, shell: Mapping[str, str]) -> list[str]:
    """Why `run` would fail or do less under the service, which sees only HERMITCRAB_HOME and PATH of the `shell`
    installing it: warnings, not errors."""
    if not (program.home / "config.toml").exists():
        return [f"no config.toml in {program.home}: run `hermitcrab init` before the service starts"]
    service = {"HERMITCRAB_HOME": str(program.home), "PATH": program.path}
    try:
        settings = load_settings(service)
    except ConfigError as exc:
        return [f"`hermitcrab run` will stop at once: {exc}"]
    warnings: list[str] = []
    if not settings.providers:
        warnings.append(
            "with only HERMITCRAB_HOME and PATH no model provider is configured: add a [[providers]] table with "
            f"api_key = ... to {settings.config_file}"
        )
    missed = shell_only(service, settings, shell)
    if missed:
        where = "; ".join(f"{name} as {missed[name]}" for name in sorted(missed))
        warnings.append(
            f"set only in this shell, so the service will not see {', '.join(sorted(missed))}: put each in "
            f"{settings.config_file} ({where})"
        )
    return warnings


def shell_only(service: Mapping[str, str], settings: Settings, shell: Mapping[str, str]) -> dict[str, str]:
    """The variables `shell` sets that would change what `run` does and that the `service` environment lacks, each
    with the config key to hold its value instead (the values themselves are never shown). One that changes
    nothing that `run` uses (a vendor key beside a profile with its own) is no loss."""
    keys = {name: f"[{table}] {key}" for name, (table, key) in ENVIRONMENT.items()}
    keys |= {name: "api_key (or base_url, model) in a [[providers]] table" for name in PROVIDER_VARIABLES}
    keys |= {p.api_key_env: "api_key in its [[providers]] table" for p in settings.providers if p.api_key_env}
    keys |= {name: "the matching config.toml key" for name in shell if name.startswith("HERMITCRAB_")}
    missed: dict[str, str] = {}
    for name, where in keys.items():
        if name in service or not shell.get(name, "").strip():
            continue
        try:
            changes = _in_use(load_settings({**service, name: shell[name]})) != _in_use(settings)
        except ConfigError:
            changes = True  # a value the config cannot take still reaches `run` from this shell
        if changes:
            missed[name] = where
    return missed


def _in_use(settings: Settings) -> Settings:
    """What `run` goes by, for telling whether a variable matters: a profile after the first is a spare for failover
    (a vendor key seen only in the shell adds one at the end), and the server entries that pass a provider variable
    on (`${OPENAI_API_KEY:-}`, as init writes spawn's) do so for sub-agents, which read the same config; the whole
    environment kept for skills' requirements always differs."""
    skills = dataclasses.replace(settings.skills, environ={})
    return dataclasses.replace(settings, providers=settings.providers[:1], servers=(), skills=skills)


def has_tool(manager: ServiceManager) -> bool:
    """Whether this machine has the service manager's command (`systemctl`, `launchctl`)."""
    return shutil.which(manager.tool) is not None


def require_tool(manager: ServiceManager) -> None:
    """Refuse before writing anything when nothing here could start the service (a container, another init)."""
    if not has_tool(manager):
        raise ServiceError(
            f"no {manager.tool} on PATH, so nothing here can start the service; "
            "`--no-start` only writes the file, and in a container the runtime keeps `hermitcrab run` running"
        )


def write(manager: ServiceManager, program: Program) -> bool:
    """Write the unit file; False when it already holds exactly this content."""
    content = manager.render(program)
    if manager.path.exists() and manager.path.read_text(encoding="utf-8") == content:
        return False
    manager.path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(manager.path, content)
    return True


def run_commands(commands: list[Command], echo: Callable[[str], None]) -> None:
    """Run each command, echoing it first; a failure that matters stops here with the tool's own words."""
    for command in commands:
        echo(f"$ {command}")
        done = _run(command, 60, f"`{command}` could not run")
        if done.returncode != 0 and not command.may_fail:
            said = (done.stderr or done.stdout).strip().splitlines()
            raise ServiceError(f"`{command}` failed (exit {done.returncode}): {said[-1] if said else 'no output'}")


def _query(command: Command) -> str:
    """The service manager's answer on stdout; ServiceError says why it could not answer."""
    done = _run(command, 30, command.argv[0])
    if done.returncode != 0:
        said = done.stderr.strip().splitlines()
        raise ServiceError(f"{command.argv[0]}: {said[-1] if said else f'exit {done.returncode}'}")
    return done.stdout


def _run(command: Command, timeout: float, failed: str) -> subprocess.CompletedProcess[str]:
    """`command`'s outcome; a command that cannot start or does not finish is a ServiceError led by `failed`."""
    try:
        return subprocess.run(command.argv, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ServiceError(f"{failed}: {exc}") from exc


def _systemctl(*args: str, may_fail: bool = False) -> Command:
    return Command(("systemctl", "--user", *args), may_fail)


def _systemd_quote(word: str) -> str:
    """One word for a unit file: quoted with C-style escapes, `%` doubled so systemd expands no specifier."""
    escaped = word.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
    return f'"{escaped}"'
