"""What a person may set for each of our servers when installing it on its own, and the flag behind each setting.

One table, so a Claude Desktop bundle's settings (`bundle.py`) and a registry entry's arguments (`registry_entry.py`)
offer the same choices with the same defaults. A default may say `${HOME}`, which the installing app fills in.
Switches (`--risk-tiers`, `--headed`, ...) are not settings: a bundle substitutes a setting's value as text, so a
flag that takes no value cannot follow a checkbox; each server's switches are fixed here to the safe choice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

HOME = "${HOME}/.hermitcrab"  # the home a server run alone defaults to (HERMITCRAB_HOME unset)


@dataclass(frozen=True)
class Setting:
    """One user-facing setting: its key, the flag it becomes, how it is asked for, its default (None: it must be
    chosen at install) and, for a flag with fixed choices, those (a bundle can only name them in the description)."""

    key: str
    flag: str
    kind: Literal["directory", "string", "number"]
    title: str
    description: str
    default: str | int | None
    choices: tuple[str, ...] = ()


@dataclass(frozen=True)
class ServerFacts:
    """A server as an installer presents it: a title, one line (at most 100 characters), its settings and the
    switches every install gets."""

    title: str
    description: str
    settings: tuple[Setting, ...]
    switches: tuple[str, ...] = ()


def _state(name: str, what: str) -> Setting:
    return Setting("state", "--state", "directory", "State folder", what, f"{HOME}/state/{name}")


def _workspace(key: str, flag: str, title: str, description: str) -> Setting:
    return Setting(key, flag, "directory", title, description, f"{HOME}/workspace")


FACTS: dict[str, ServerFacts] = {
    "memory": ServerFacts(
        "hermitcrab memory",
        "Long-term memory in Markdown files with hybrid (BM25 + vector) search that follows your edits.",
        (
            _workspace("workspace", "--workspace", "Memory folder", "The folder holding MEMORY.md and memory/."),
            _state("memory", "Where the search index lives; it is rebuilt from the files whenever it is missing."),
            Setting(
                "embedder",
                "--embedder",
                "string",
                "Embedder",
                "use (default, no download), e5, openai:MODEL@BASE_URL, or none (BM25 only).",
                "use",
            ),
        ),
    ),
    "exec": ServerFacts(
        "hermitcrab exec",
        "A shell, background processes and file tools inside one folder, under an allowlist that asks.",
        (
            # chosen at install: the server refuses a root that does not exist, and no default folder surely does
            Setting("root", "--root", "directory", "Working folder", "The folder the tools may work in.", None),
            Setting(
                "security",
                "--security",
                "string",
                "Security mode",
                "deny (no commands), allowlist (allowed programs run unasked, others are asked about) or full.",
                "allowlist",
                ("deny", "allowlist", "full"),
            ),
            Setting(
                "ask",
                "--ask",
                "string",
                "When to ask",
                "off, on-miss (a program off the allowlist) or always.",
                "on-miss",
                ("off", "on-miss", "always"),
            ),
            Setting(
                "sandbox",
                "--sandbox",
                "string",
                "Sandbox",
                "auto (bubblewrap when it works here), bwrap (required) or none.",
                "auto",
                ("auto", "bwrap", "none"),
            ),
            _state("exec", "Where approvals you gave for always are kept; must not be inside the working folder."),
        ),
        switches=("--risk-tiers",),  # asks before changes, every time before deletes
    ),
    "browser": ServerFacts(
        "hermitcrab browser",
        "A real Chromium driven through accessibility snapshots with refs, with logins that persist.",
        (
            _workspace("root", "--root", "Upload folder", "The folder files may be uploaded from."),
            Setting(
                "allowed_origins",
                "--allowed-origins",
                "string",
                "Allowed sites",
                "Only these origins or hosts may load, separated by ';' (empty: any).",
                "",
            ),
            _state("browser", "Where the browser profile (cookies, logins) and saved files live."),
        ),
    ),
    "cron": ServerFacts(
        "hermitcrab cron",
        "Scheduled jobs (at, every, cron with time zones) whose firings wait until acknowledged.",
        (
            _state("cron", "Where the job store and run history live."),
            Setting(
                "grace_s",
                "--grace-s",
                "number",
                "Grace after downtime (seconds)",
                "An overdue job runs once if at most this late, else it is recorded as missed.",
                43200,
            ),
            Setting(
                "min_interval_s",
                "--min-interval-s",
                "number",
                "Minimum interval (seconds)",
                "A job the assistant adds or reschedules may not run more often than this; 0 allows any schedule.",
                300,
            ),
            Setting(
                "max_jobs",
                "--max-jobs",
                "number",
                "Most jobs",
                "Adding a job is refused once there are this many.",
                20,
            ),
        ),
    ),
    "spawn": ServerFacts(
        "hermitcrab spawn",
        "Sub-agents that run in the background and report back when they finish.",
        (
            Setting(
                "cli",
                "--cli",
                "string",
                "Agent CLI",
                "An agent command for runtime 'cli' as NAME=TEMPLATE; {task} becomes one argument, no shell.",
                "claude=claude -p {task}",
            ),
            _state("spawn", "Where runs and their results live."),
        ),
    ),
}
