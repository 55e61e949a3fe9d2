"""The configuration a `git` call will really read, asked from git itself, and the keys in it that run programs.

environment.git_environment pins every single-valued key that names a program (the command scope comes last and
wins) and drops the system and global files, so what is left is the repository's own config and what it includes.
Keys there that the command scope cannot override -- per-driver filters, textconv and merge drivers (the driver
is chosen by a `.gitattributes` file anyone can write), `diff.external` (any value runs), `include.path`,
`core.worktree`, per-remote upload packs, remote helpers -- make the call a miss, and so does, for a subcommand that
talks to remotes, a configured remote whose URL is local (it would start that repository's hooks without the
hardening). git is asked (`git config --list`) rather than its files parsed: only git knows which worktree,
commondir, includes and conditions apply.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Sequence

from . import gitrules
from .environment import GIT_HARDENING, git_environment
from .shell import Word

_TIMEOUT_S = 5.0
_PINNED = frozenset(key.lower() for key in GIT_HARDENING)
# Keys (section and name lowercased by git, the subsection as written) whose value is a program, a file git
# writes, or another place to read config or a repository from.
_RUNS = re.compile(
    r"^(?:diff\.external|core\.worktree|core\.gitproxy|include\.path|includeif\..*\.path"
    r"|diff\..*\.(?:textconv|command)|filter\..*\.(?:clean|smudge|process)|merge\..*\.driver"
    r"|remote\..*\.(?:uploadpack|receivepack|vcs)|credential\..*\.helper|url\..*\.(?:insteadof|pushinsteadof)"
    r"|protocol\..*|hook\..*|trace2\..*|gpg\..*\.program)$",
    re.IGNORECASE,
)
_URLS = re.compile(r"^(?:remote\..*\.(?:url|pushurl)|branch\..*\.(?:remote|pushremote)|remote\.pushdefault)$")
_BOOLEAN = frozenset({"", "true", "false", "yes", "no", "on", "off", "1", "0"})

Entry = tuple[str, str, str]  # scope, key, value


class GitConfigs:
    """Reads the effective config of the repositories git calls on a line use (memoized for one line)."""

    def __init__(self, search_path: str, home: str) -> None:
        self.env = {"PATH": search_path, "HOME": home, "LANG": "C.UTF-8", **git_environment()}
        self._memo: dict[tuple[str, str, tuple[str, ...]], list[Entry] | None] = {}

    def forget(self) -> None:
        """Drop what was read: the next line may run after a `git remote add`."""
        self._memo.clear()

    def problem(self, binary: str, args: Sequence[Word], cwd: str | None) -> str | None:
        """Why `git args` run from `cwd` may start a program its repository's config names, or None."""
        sub, chosen = gitrules.repository_options(args)
        if sub is None or sub in ("version", "config"):  # reading config runs nothing
            return None
        if cwd is None:
            return "`git` runs in a directory that cannot be followed, so its config cannot be read"
        entries = self._read(binary, cwd, tuple(chosen))
        if entries is None:
            return "`git` could not report the config this call reads, so what it runs cannot be checked"
        named = gitrules.named_repository(args)
        remotes = {key[7:-4] for _, key, _ in entries if key.startswith("remote.") and key.endswith(".url")}
        if named is not None and named not in remotes and not gitrules.network_url(named):
            return (
                f"`git {sub} {named}` reaches a local repository, whose hooks and config would run without the "
                "hardening"
            )
        for scope, key, value in entries:
            if scope == "command" or key.lower() in _PINNED:
                continue  # ours, or overridden by ours
            if _RUNS.match(key) or _runs_value(key, value):
                return f"the repository's config sets `{key}` ({scope}), which can make `git {sub}` run a program"
            if gitrules.uses_remotes(sub) and _URLS.match(key.lower()) and gitrules.local_url(value):
                return (
                    f"the repository's config points `{key}` at the local repository {value!r}, whose hooks "
                    f"`git {sub}` would run without the hardening"
                )
        return None

    def _read(self, binary: str, cwd: str, chosen: tuple[str, ...]) -> list[Entry] | None:
        key = (binary, cwd, chosen)
        if key not in self._memo:
            self._memo[key] = _list(binary, cwd, chosen, self.env)
        return self._memo[key]


def _runs_value(key: str, value: str) -> bool:
    """Keys that run a program only with some values: `submodule.*.update = !cmd`, `pager.<cmd> = cmd`."""
    lowered = key.lower()
    if lowered.startswith("submodule.") and lowered.endswith(".update"):
        return value.startswith("!")
    return lowered.startswith("pager.") and value.lower() not in _BOOLEAN


def _list(binary: str, cwd: str, chosen: tuple[str, ...], env: dict[str, str]) -> list[Entry] | None:
    """`git config --list --show-scope -z` as git would read it for this call; None when git cannot say."""
    if not os.path.isdir(cwd):
        return None
    command = [binary, *chosen, "config", "--list", "--show-scope", "-z"]
    try:
        done = subprocess.run(
            command, cwd=cwd, env=env, capture_output=True, timeout=_TIMEOUT_S, stdin=subprocess.DEVNULL, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    fields = done.stdout.decode("utf-8", "replace").split("\0")
    entries: list[Entry] = []
    for scope, item in zip(fields[0::2], fields[1::2], strict=False):
        key, _, value = item.partition("\n")
        entries.append((scope, key, value))
    return entries
