"""Risk tiers (`--ask on-change`, once `--risk-tiers`): what a line does decides how the user is asked, on top of
the allowlist.

- read: reads and searches run as the allowlist says;
- change: writes inside the roots, installs and configuration changes are asked about with the plan (every
  changing step listed); allow-always remembers that exact line;
- danger: deleting, writing outside the roots and privilege escalation are asked about every time, and an answer
  is never remembered.

Tiers only add questions, never remove one: each finding is a `TierMiss` added to the policy's verdict, so the
question, `--ask off` refusals and allow-always work as for any other miss.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from . import walk
from .policy import Miss, Verdict
from .rules import SUDO_LIKE
from .shell import ShellSyntaxError, Word

Tier = Literal["change", "danger"]

_PRIVILEGED = SUDO_LIKE | {"setcap", "capsh", "chsh", "passwd", "visudo", "useradd", "usermod", "mount"}
_DELETERS = frozenset({"rm", "rmdir", "unlink", "shred", "truncate", "wipefs", "mkfs"})
_PACKAGE_TOOLS: dict[str, frozenset[str]] = {
    name: frozenset(subcommands.split())
    for names, subcommands in [
        ("pip pip3 pipx", "install uninstall download inject upgrade"),
        ("npm pnpm bun", "install i ci add uninstall remove rm update upgrade link"),
        ("yarn", "add install remove upgrade"),
        ("uv", "add remove sync"),
        ("apt apt-get aptitude dnf yum zypper", "install remove purge upgrade full-upgrade autoremove update"),
        ("apk", "add del upgrade"),
        ("brew", "install uninstall upgrade reinstall tap"),
        ("snap flatpak", "install remove refresh update"),
        ("cargo", "install uninstall add remove"),
        ("go", "install get"),
        ("gem conda mamba", "install uninstall update create remove"),
        ("poetry pdm", "add install remove update sync"),
    ]
    for name in names.split()
}
_PACKAGE_OPTIONS = {"dpkg": frozenset({"-i", "--install", "-r", "--remove", "-P", "--purge"}), "pacman": None}
_CONFIG_TOOLS: dict[str, Callable[[list[str]], bool]] = {
    "crontab": lambda w: "-l" not in w,
    "systemctl": lambda w: bool(w) and not re.match(r"(status|show|list|is-|cat$)", w[0]),
    "gsettings": lambda w: bool(w) and w[0] in ("set", "reset"),
    "defaults": lambda w: bool(w) and w[0] in ("write", "delete"),
    "update-alternatives": lambda w: True,
    "npm": lambda w: w[:1] == ["config"] and w[1:2] != ["get"] and w[1:2] != ["list"],
    "pip": lambda w: w[:1] == ["config"] and w[1:2] in (["set"], ["unset"]),
}
_GIT_READS = frozenset(
    [
        "status",
        "log",
        "diff",
        "show",
        "blame",
        "grep",
        "ls-files",
        "ls-tree",
        "ls-remote",
        "rev-parse",
        "rev-list",
        "describe",
        "shortlog",
        "cat-file",
        "reflog",
        "whatchanged",
        "version",
        "help",
        "show-ref",
        "for-each-ref",
        "name-rev",
        "count-objects",
        "check-ignore",
        "var",
    ]
)
_GIT_LISTS = {"branch": ("-l", "--list", "-a", "-r", "-v", "-vv"), "tag": ("-l", "--list"), "remote": ("-v",)}
_GIT_VALUED = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace"})
_SETUID_MODE = re.compile(r"^[0-7]?[2-7][0-7]{3}$|[ugoa]*[+=][rwxXt]*s")


@dataclass(frozen=True)
class TierMiss(Miss):
    """A step that a risk tier sends to the user, even when the allowlist would let it run."""

    tier: Tier = "change"


class RiskTiers:
    def __init__(self, roots: Sequence[Path], home: str) -> None:
        self.roots = [root.resolve() for root in roots]
        self.home = home

    def apply(self, verdict: Verdict, command: str, workdir: Path) -> Verdict:
        """`verdict` plus one miss per step of `command` that changes or endangers something."""
        found = self.steps(command, workdir)
        return replace(verdict, misses=(*verdict.misses, *found)) if found else verdict

    @staticmethod
    def every_time(verdict: Verdict) -> bool:
        """Whether the line holds a dangerous step: asked every time, allow-always not offered."""
        return any(isinstance(miss, TierMiss) and miss.tier == "danger" for miss in verdict.misses)

    def steps(self, command: str, workdir: Path) -> list[TierMiss]:
        try:
            found = [miss for step in walk.steps(command, workdir, self.home) for miss in self._step(step)]
        except ShellSyntaxError:
            return [_danger(command, "cannot be parsed")]
        return [miss for miss in found if miss.reason]

    def _step(self, step: walk.Step) -> list[TierMiss]:
        raw, name, rest = step.raw, step.name, [word.text or "" for word in step.args]
        if name in _PRIVILEGED:
            return [_danger(raw, "runs with other privileges")]
        if name in _DELETERS or (name == "find" and "-delete" in rest) or (name == "rsync" and _deletes(rest)):
            return [_danger(raw, "deletes files")]
        if name == "chmod" and rest and _SETUID_MODE.search(next((w for w in rest if not w.startswith("-")), "")):
            return [_danger(raw, "sets a setuid/setgid bit")]
        found: list[TierMiss] = []
        if name == "git":
            found.append(_git(raw, rest))
        elif _installs(name, rest):
            found.append(_change(raw, "installs or removes packages"))
        elif name in _CONFIG_TOOLS and _CONFIG_TOOLS[name](rest):
            found.append(_change(raw, "changes configuration"))
        return found + [self._write(raw, word, step.cwd) for word in step.writes]

    def _write(self, raw: str, target: Word, cwd: str | None) -> TierMiss:
        if walk.harmless(target):
            return _change(raw, "")
        real = walk.target(target, cwd, self.home)
        if real is None:
            return _danger(raw, "writes a path computed when it runs")
        if not any(real.is_relative_to(root) for root in self.roots):
            return _danger(raw, f"writes outside the workspace ({real})")
        what = "changes configuration" if real.name.startswith(".") else "writes inside the workspace"
        return _change(raw, f"{what} ({real})")


def _git(raw: str, words: list[str]) -> TierMiss:
    index = 0
    while index < len(words) and words[index].startswith("-"):
        index += 2 if words[index] in _GIT_VALUED else 1
    sub, rest = (words[index], words[index + 1 :]) if index < len(words) else ("", [])
    if (
        sub in ("clean", "rm")
        or (sub == "reset" and "--hard" in rest)
        or (sub == "stash" and rest[:1] in (["drop"], ["clear"]))
    ):
        return _danger(raw, "deletes or discards work")
    if sub in ("branch", "tag") and any(w in ("-d", "-D", "--delete") for w in rest):
        return _danger(raw, "deletes or discards work")
    if sub == "push" and any(w in ("-f", "--force", "--force-with-lease", "--delete", "-d", "--mirror") for w in rest):
        return _danger(raw, "overwrites or deletes on a remote")
    if sub == "config" and not any(w.startswith(("--get", "--list", "-l")) for w in rest):
        return _change(raw, "changes configuration")
    if sub in _GIT_READS or sub == "" or (sub in _GIT_LISTS and all(w in _GIT_LISTS[sub] for w in rest)):
        return _change(raw, "")
    if sub == "stash" and rest[:1] in (["list"], ["show"]):
        return _change(raw, "")
    return _change(raw, "changes the repository" if sub != "push" else "publishes to a remote")


def _installs(name: str, words: list[str]) -> bool:
    """Whether `name words` installs, removes or upgrades packages (`python -m pip`, `uv pip`, `uv tool` too)."""
    positional = [w for w in words if not w.startswith("-")]
    through_pip = name.startswith("python") and words[:2] == ["-m", "pip"]
    if through_pip or (name == "uv" and positional[:1] in (["pip"], ["tool"])):
        name, positional = "pip", positional[1:]
    if name in _PACKAGE_OPTIONS:
        options = _PACKAGE_OPTIONS[name]
        return any(w.startswith(("-S", "-R", "-U")) if options is None else w in options for w in words)
    return bool(positional) and positional[0] in _PACKAGE_TOOLS.get(name, frozenset())


def _deletes(words: list[str]) -> bool:
    return any(w.startswith("--delete") or w == "--remove-source-files" for w in words)


def _change(command: str, reason: str) -> TierMiss:
    """A changing step (an empty reason: nothing to ask about, dropped by `steps`)."""
    return TierMiss(command, f"`{walk.shown(command)}` {reason} (risk tier: asked with the plan)" if reason else "")


def _danger(command: str, reason: str) -> TierMiss:
    return TierMiss(command, f"`{walk.shown(command)}` {reason} (risk tier: asked every time)", None, "danger")
