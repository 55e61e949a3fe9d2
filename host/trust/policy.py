"""Which tools a turn may use: one policy per kind of principal (`[policy.<rights>]`), decided by the host.

The model never picks its policy: the host derives it from the event's principal (`events.Principal.rights`). A
tool outside the policy is not offered at all, and a call to it anyway is refused with a sentence saying why.
Patterns are shell globs over a tool's name (`cron_*`) or over `<server>:<tool>` (`exec:*`, `host:message`), so a
policy can name one server's tools whatever they are called; deny wins over allow.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase

from ..events import Rights

HOST_SERVER = "host"
"""The server name of the host's own tools (`ask_user`, `message`, `skill`) in `<server>:<tool>` patterns."""

NOT_FOR_OTHERS = (
    # scheduling and sub-agents act later, as the owner's system, on the owner's machine
    "cron_*",
    "sessions_*",
    # the shell and files: a sandbox still reads the workspace, where MEMORY.md and USER.md live
    "exec",
    "exec_*",  # exec_undo changes files, exec_changes lists what the owner's commands did
    "process",
    "read_file",
    "write_file",
    "edit_file",
    "list_dir",
    "apply_patch",
    # the browser carries the owner's logins
    "browser_*",
)
"""What nobody but the owner gets by default. Memory tools stay: hermitcrab-memory keeps the owner's private files
out of reach of a non-owner call (it reads `hermitcrab/principal`); deny `memory_*` when using another memory server."""


@dataclass(frozen=True)
class ToolPolicy:
    """Allow and deny globs; a tool is offered when some allow pattern matches and no deny pattern does."""

    allow: tuple[str, ...] = ("*",)
    deny: tuple[str, ...] = ()

    def allows(self, tool: str, server: str) -> bool:
        names = (tool, f"{server}:{tool}")
        if any(fnmatchcase(name, pattern) for pattern in self.deny for name in names):
            return False
        return any(fnmatchcase(name, pattern) for pattern in self.allow for name in names)


DEFAULT_POLICIES: Mapping[Rights, ToolPolicy] = {
    "owner": ToolPolicy(),
    "peer": ToolPolicy(deny=NOT_FOR_OTHERS),
    "group": ToolPolicy(deny=NOT_FOR_OTHERS),
    "system": ToolPolicy(deny=NOT_FOR_OTHERS),
}


def refusal(tool: str, rights: Rights) -> str:
    """What the model is told when it calls a tool its turn's policy leaves out."""
    who = {"peer": "an approved friend", "group": "a group conversation", "system": "a program without owner rights"}
    return (
        f"{tool} is not available in this conversation: the turn acts for {who.get(rights, 'someone')}, not the owner, "
        f"and [policy.{rights}] in the owner's config leaves it out."
    )
