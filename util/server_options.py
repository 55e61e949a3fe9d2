"""Each of our servers' command-line options, declared once.

A server builds its argparse parser from its table here (`hermitcrab.servers._common.cli`), and the installer
(`hermitcrab.install`) reads the same table for the host's launch arguments, the Claude Desktop bundle's settings
and the MCP registry entry. It lives in `util` because that is the one layer both servers and the installer may
import; so it holds data only and imports nothing of ours.

An `Ask` says how an installer offers an option; its default, unless given, is the option's own. An option that
names a folder of the hermitcrab home says which (`home_folder`), so the host pins it to its home and an installer
offers `${HOME}/.hermitcrab/...`. A default that the server's own code also uses (a dataclass field, a constant)
stays the server's, which passes it in when it builds its parser; such an option is never offered by an installer.
Help may name `{workspace}` and `{state}`, the server's default folders, and other `{fields}` the server fills in.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

HOME = "${HOME}/.hermitcrab"  # the home a server run alone defaults to (HERMITCRAB_HOME unset), as installers say it
MAX_CALL_SECONDS = 3600
# What running without a sandbox means, said the same way by the exec server and by `hermitcrab doctor`.
NO_SANDBOX = "commands run with the server's own rights; only the allowlist stands between the model and the system"


@dataclass(frozen=True)
class Ask:
    """How an installer asks for an option: a title, one line, and a default that is not the option's own (None:
    it must be chosen at install)."""

    title: str
    description: str
    default: str | None = None
    required: bool = False


@dataclass(frozen=True)
class Option:
    """One command-line option: `ArgumentParser.add_argument`'s arguments, and how installers treat it.

    `exclusive` names a group of options that exclude one another; `install` is an `Ask`, or "on" for a switch
    every install passes (a bundle substitutes values as text, so a flag that takes none cannot follow a checkbox).
    """

    flags: tuple[str, ...]
    help: str
    default: Any = None
    type: Callable[[str], Any] | None = None
    action: Literal["store_true", "store_false", "store_const", "append"] | None = None
    const: Any = None
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    dest: str | None = None
    nargs: Literal["?"] | None = None
    exclusive: str | None = None
    home_folder: Literal["workspace", "state", "uploads"] | None = None
    install: Ask | Literal["on"] | None = None

    @property
    def key(self) -> str:
        """What argparse stores it under, and an installer's name for it."""
        return self.dest or self.flags[0].lstrip("-").replace("-", "_")

    @property
    def flag(self) -> str:
        return self.flags[0]


@dataclass(frozen=True)
class ServerOptions:
    """A server's command line (`prog`, `description`, `options` in `--help` order) and how installers present it:
    a title, one line (`summary`, at most 100 characters) and the keys of the options they ask for, in their order."""

    name: str
    description: str
    options: tuple[Option, ...]
    title: str
    summary: str
    asked: tuple[str, ...] = ()

    @property
    def prog(self) -> str:
        return f"hermitcrab-{self.name}"

    def option(self, key: str) -> Option:
        return next(option for option in self.options if option.key == key)

    @property
    def switches(self) -> tuple[str, ...]:
        """The switches every install passes."""
        return tuple(option.flag for option in self.options if option.install == "on")


def seconds_of_a_call(value: str) -> float:
    """An argparse type: seconds between 1 and `MAX_CALL_SECONDS`."""
    seconds = float(value)
    if not 1 <= seconds <= MAX_CALL_SECONDS:
        raise argparse.ArgumentTypeError(f"give between 1 and {MAX_CALL_SECONDS} seconds, not {value}")
    return seconds


def at_least_one(kind: Callable[[str], float]) -> Callable[[str], float]:
    """An argparse type: a number of `kind` that is at least 1."""

    def parse(text: str) -> float:
        value = kind(text)
        if value < 1:
            raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
        return value

    return parse


def _state(what: str, description: str) -> Option:
    return Option(
        ("--state",),
        what,
        type=Path,
        metavar="DIR",
        home_folder="state",
        install=Ask("State folder", description),
    )


MEMORY = ServerOptions(
    "memory",
    "Markdown long-term memory with hybrid (BM25 + vector) search, as an MCP server.",
    (
        Option(
            ("command",),
            "serve (default) the MCP server; or index the memory files now and exit",
            default="serve",
            nargs="?",
            choices=("serve", "index"),
        ),
        Option(
            ("--workspace",),
            "folder holding MEMORY.md and memory/ (default: $HERMITCRAB_HOME/workspace)",
            type=Path,
            home_folder="workspace",
            install=Ask("Memory folder", "The folder holding MEMORY.md and memory/."),
        ),
        Option(
            ("--state",),
            "where the rebuildable index lives (default: $HERMITCRAB_HOME/state/memory)",
            type=Path,
            home_folder="state",
            install=Ask(
                "State folder", "Where the search index lives; it is rebuilt from the files whenever it is missing."
            ),
        ),
        Option(
            ("--embedder",),
            "{embedder_help}",
            default="use",
            install=Ask("Embedder", "use (default, no download), e5, openai:MODEL@BASE_URL, or none (BM25 only)."),
        ),
        Option(
            ("--embedder-idle-s",),
            "drop a local embedding model after this many seconds unused (default %(default)g; it loads again in "
            "under a second)",
            type=float,
        ),
        Option(
            ("--extra-path",),
            "another Markdown file or folder to index (repeatable)",
            default=[],
            type=Path,
            action="append",
        ),
        Option(
            ("--search",),
            "which legs to rank with (text-only and vector-only are for comparison)",
            default="hybrid",
            choices=("hybrid", "text", "vector"),
        ),
    ),
    "hermitcrab memory",
    "Long-term memory in Markdown files with hybrid (BM25 + vector) search that follows your edits.",
    ("workspace", "state", "embedder"),
)

EXEC = ServerOptions(
    "exec",
    "MCP server: shell commands, background processes and file tools under an allowlist policy.",
    (
        Option(
            ("--root",),
            "directory the tools may work in (repeatable; default {workspace})",
            type=Path,
            action="append",
            metavar="DIR",
            home_folder="workspace",
            # chosen at install: the server refuses a root that does not exist, and no default folder surely does
            install=Ask("Working folder", "The folder the tools may work in.", required=True),
        ),
        Option(
            ("--security",),
            "deny: no exec; allowlist: allowed binaries run unasked; full: anything (default allowlist)",
            default="allowlist",
            choices=("deny", "allowlist", "full"),
            install=Ask(
                "Security mode",
                "deny (no commands), allowlist (allowed programs run unasked, others are asked about) or full.",
            ),
        ),
        Option(
            ("--allow",),
            "allow a binary: a name on PATH, an absolute path or a glob (repeatable)",
            default=[],
            action="append",
            metavar="NAME",
        ),
        Option(
            ("--no-default-allow",),
            "start from an empty allowlist instead of the read-only set ({default_allow}, ...)",
            action="store_true",
        ),
        Option(
            ("--ask",),
            "when to ask the user through MCP elicitation: on-leave (default; in the sandbox only what it would "
            "refuse, e.g. writing outside the roots; without a sandbox on-miss), on-miss (a command the parser "
            "cannot prove allowed), on-change (also every change, with the plan), always, or off (refuse instead)",
            default="on-leave",
            choices=("off", "on-miss", "on-leave", "on-change", "always"),
            install=Ask(
                "When to ask",
                "on-leave (only what leaves the sandbox), on-miss, on-change (before every change), always or off.",
            ),
        ),
        Option(
            ("--risk-tiers",),
            "the same as --ask on-change (kept for older configs)",
            action="store_const",
            const="on-change",
            dest="ask",
        ),
        Option(
            ("--approval-timeout",),
            "an unanswered approval counts as deny after this (default %(default)g)",
            type=float,
            metavar="SECONDS",
        ),
        Option(
            ("--sandbox",),
            "auto: bubblewrap when it works here; bwrap: require it; none: never (default auto)",
            default="auto",
            choices=("auto", "bwrap", "none"),
            install=Ask("Sandbox", "auto (bubblewrap when it works here), bwrap (required) or none."),
        ),
        Option(
            ("--network",),
            "let sandboxed commands reach the network (default: no network; unsandboxed commands always can)",
            action="store_true",
        ),
        Option(("--no-network",), argparse.SUPPRESS, action="store_true"),  # the default now; kept for old configs
        Option(
            ("--allow-domain",),
            "sandboxed commands may reach this domain through the proxy (repeatable; *.example.com for it and its "
            "subdomains); domains the user approves are added and kept in the state directory",
            default=[],
            action="append",
            metavar="DOMAIN",
        ),
        Option(
            ("--allow-outbound",),
            "the proxy may also reach these destinations on this machine or its network (repeatable or "
            "';'-separated: host, host:port, *.domain, 10.0.0.0/8; default $HERMITCRAB_OUTBOUND_ALLOW); public "
            "addresses always may",
            action="append",
            metavar="ENTRY",
        ),
        Option(
            ("--memory-mb",),
            "address-space limit per command; 0 for none (default %(default)s)",
            type=int,
            metavar="MB",
        ),
        Option(
            ("--processes",),
            "processes one command may run at once (more: it is killed); 0 for no cap (default %(default)s)",
            type=int,
            metavar="N",
        ),
        Option(
            ("--file-size-mb",),
            "largest file a command may write; writing past it kills the command; 0 for none (default %(default)s)",
            type=int,
            metavar="MB",
        ),
        Option(
            ("--undo-keep",),
            "undo keeps the newest N changes (oldest dropped first); 0 turns undo off (default %(default)s)",
            type=int,
            metavar="N",
        ),
        Option(
            ("--undo-mb",),
            "undo keeps at most this much saved file content (oldest changes dropped first); 0 turns undo off "
            "(default %(default)s)",
            type=int,
            metavar="MB",
        ),
        _state(
            "state directory (default {state})",
            "Where approvals you gave for always are kept; must not be inside the working folder.",
        ),
    ),
    "hermitcrab exec",
    "A shell, background processes and file tools inside one folder, under an allowlist that asks.",
    ("root", "security", "ask", "sandbox", "state"),
)

BROWSER = ServerOptions(
    "browser",
    "MCP server driving a real Chromium through accessibility snapshots with refs.",
    (
        Option(("--headless",), "run without a window (default)", default=True, action="store_true"),
        Option(("--headed", "--no-headless"), "show the browser window", action="store_false", dest="headless"),
        Option(
            ("--profile",),
            "persistent profile keeping cookies and logins (default: STATE/profile)",
            type=Path,
            metavar="DIR",
            exclusive="profile",
        ),
        Option(("--isolated",), "a throw-away profile: nothing is kept", action="store_true", exclusive="profile"),
        Option(
            ("--executable",),
            "Chromium or Chrome to run (default: Playwright's, then the system's)",
            type=Path,
            metavar="PATH",
        ),
        Option(
            ("--allowed-origins",),
            "only these origins or hosts may load, separated by ';' (e.g. 'https://a.com;*.b.org')",
            metavar="LIST",
            install=Ask("Allowed sites", "Only these origins or hosts may load, separated by ';' (empty: any).", ""),
        ),
        Option(("--blocked-origins",), "these origins or hosts never load, ';'-separated", metavar="LIST"),
        Option(
            ("--allow-outbound",),
            "the browser may also reach these destinations on this machine or its network (repeatable or "
            "';'-separated: host, host:port, *.domain, 10.0.0.0/8; default $HERMITCRAB_OUTBOUND_ALLOW); public "
            "addresses always may",
            action="append",
            metavar="ENTRY",
        ),
        Option(
            ("--root",),
            "a directory files may be uploaded from (repeatable; default: {workspace}/uploads)",
            type=Path,
            action="append",
            metavar="DIR",
            home_folder="uploads",  # the workspace's uploads/, never its persona or memory files
            install=Ask("Upload folder", "The folder files may be uploaded from (never the whole workspace)."),
        ),
        Option(
            ("--state",),
            "directory for the profile and saved files (default: $HERMITCRAB_HOME/state/browser)",
            type=Path,
            metavar="DIR",
            home_folder="state",
            install=Ask("State folder", "Where the browser profile (cookies, logins) and saved files live."),
        ),
        Option(("--enable-evaluate",), "offer browser_evaluate (runs model-written JS)", action="store_true"),
        Option(
            ("--snapshot-max-chars",),
            "cut snapshots longer than this (default: %(default)s)",
            type=int,
            metavar="N",
        ),
        Option(
            ("--call-timeout",),
            "every tool call ends within this; a page that does not answer by then is closed and replaced "
            "(default: %(default)g, under the host's usual 60)",
            type=seconds_of_a_call,
            metavar="SECONDS",
        ),
    ),
    "hermitcrab browser",
    "A real Chromium driven through accessibility snapshots with refs, with logins that persist.",
    ("root", "allowed_origins", "state"),
)

CRON = ServerOptions(
    "cron",
    "MCP server: scheduled jobs (at, every, cron with time zones) whose firings wait on the cron://events resource "
    "until acknowledged.",
    (
        _state(
            "where the job store and run history live (default {state})", "Where the job store and run history live."
        ),
        Option(
            ("--grace-s",),
            "after downtime, an overdue job runs once if its run is at most N seconds late, else it is recorded as "
            "missed (default %(default)s: 12 hours)",
            default=12 * 3600,
            type=float,
            metavar="N",
            install=Ask(
                "Grace after downtime (seconds)",
                "An overdue job runs once if at most this late, else it is recorded as missed.",
            ),
        ),
        Option(
            ("--min-interval-s",),
            "a job added or rescheduled over MCP must not run more often than every N seconds; 0 allows any "
            "schedule (default %(default)g: 5 minutes)",
            default=300.0,
            type=float,
            metavar="N",
            install=Ask(
                "Minimum interval (seconds)",
                "A job the assistant adds or reschedules may not run more often than this; 0 allows any schedule.",
            ),
        ),
        Option(
            ("--max-jobs",),
            "cron_add is refused once the store holds N jobs (default %(default)s)",
            default=20,
            type=int,
            metavar="N",
            install=Ask("Most jobs", "Adding a job is refused once there are this many."),
        ),
        Option(
            ("--allow-outbound",),
            "webhooks may also go to these destinations on this machine or its network, ';'-separated (host, "
            "host:port, *.domain, 10.0.0.0/8; default $HERMITCRAB_OUTBOUND_ALLOW); public addresses always may",
            metavar="LIST",
        ),
    ),
    "hermitcrab cron",
    "Scheduled jobs (at, every, cron with time zones) whose firings wait until acknowledged.",
    ("state", "grace_s", "min_interval_s", "max_jobs"),
)

SPAWN = ServerOptions(
    "spawn",
    "MCP server: sub-agents (a hermitcrab agent, or an external agent CLI) that run in the background and report "
    "back through the spawn://events resource.",
    (
        _state("where runs and their results live (default {state})", "Where runs and their results live."),
        Option(
            ("--cli",),
            "an external agent CLI for runtime 'cli', e.g. 'claude=claude -p {task}'; {task} (appended when "
            "absent), {model} and {label} each stay inside their one argument; no shell is involved (repeatable)",
            default=[],
            action="append",
            metavar="NAME=TEMPLATE",
            install=Ask(
                "Agent CLI",
                "An agent command for runtime 'cli' as NAME=TEMPLATE; {task} becomes one argument, no shell.",
                "claude=claude -p {task}",
            ),
        ),
        Option(
            ("--agent",),
            "the command of runtime 'agent' (default: `hermitcrab subagent` next to this server, else on PATH)",
            metavar="COMMAND",
        ),
        Option(
            ("--max-concurrent",),
            "runs at once; more wait in a queue (default %(default)s)",
            type=at_least_one(int),
            metavar="N",
        ),
        Option(
            ("--max-children",), "active runs per session (default %(default)s)", type=at_least_one(int), metavar="N"
        ),
        Option(
            ("--max-depth",),
            "1: sub-agents cannot spawn their own (default %(default)s)",
            type=at_least_one(int),
            metavar="N",
        ),
        Option(
            ("--timeout-s",),
            "default per-run timeout (default %(default)s)",
            type=at_least_one(float),
            metavar="S",
        ),
    ),
    "hermitcrab spawn",
    "Sub-agents that run in the background and report back when they finish.",
    ("cli", "state"),
)

SERVERS: dict[str, ServerOptions] = {server.name: server for server in (MEMORY, EXEC, BROWSER, CRON, SPAWN)}
