"""Skills: folders with a SKILL.md, found by precedence, read from their YAML frontmatter, checked for what they need.

The format is the open Agent Skills one (`name`, `description`, then instructions), so skills written for OpenClaw or
Claude Code work here: OpenClaw's `metadata.openclaw.requires` / `os` / `always` and Claude Code's `context: fork`,
`user-invocable`, `disable-model-invocation` and `argument-hint` are read too. A skill grants no permission: it is
text the model reads, and whatever it makes the model do goes through the servers' own policies.
"""

from __future__ import annotations

import re
import shutil
import sys
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import yaml

from hermitcrab.util.files import Stamp, stamp

from ..mcp.pool import McpPool

SKILL_FILE = "SKILL.md"
MAX_DESCRIPTION_CHARS = 1_024
_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
_FRONTMATTER = re.compile(r"\A\ufeff?---[ \t]*\r?\n(.*?)^---[ \t]*$\r?\n?", re.S | re.M)


class SkillError(ValueError):
    """A SKILL.md that cannot be used as written; the message says what to fix."""


@dataclass(frozen=True)
class Requirements:
    """What must be present for a skill to work: binaries (all, and one of `any_bins`), variables, MCP tools, OS."""

    bins: tuple[str, ...] = ()
    any_bins: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    os: tuple[str, ...] = ()

    def unmet(self, environ: Mapping[str, str], tools: Collection[str]) -> list[str]:
        """One phrase per requirement that is not met here; empty when the skill can run."""
        path = environ.get("PATH")
        problems: list[str] = []
        if missing := [b for b in self.bins if shutil.which(b, path=path) is None]:
            problems.append("not on PATH: " + ", ".join(missing))
        if self.any_bins and all(shutil.which(b, path=path) is None for b in self.any_bins):
            problems.append("none of these on PATH: " + ", ".join(self.any_bins))
        if unset := [name for name in self.env if not environ.get(name)]:
            problems.append("environment variable not set: " + ", ".join(unset))
        if absent := [tool for tool in self.tools if tool not in tools]:
            problems.append("no MCP server offers the tool " + ", ".join(absent))
        if self.os and sys.platform not in self.os:
            problems.append(f"only for {', '.join(self.os)} (this is {sys.platform})")
        return problems


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    folder: Path
    body: str
    requires: Requirements = Requirements()
    fork: bool = False
    """`context: fork`: `/name` runs it as a sub-agent (through the spawn server) instead of in the conversation."""
    user_invocable: bool = True
    model_invocable: bool = True
    argument_hint: str = ""
    always: bool = False
    """OpenClaw's `always: true`: requirements are not checked."""

    @property
    def file(self) -> Path:
        return self.folder / SKILL_FILE


@dataclass(frozen=True)
class LeftOut:
    """A skill that is not offered, and why (unmet requirements, a malformed SKILL.md, a name taken before)."""

    name: str
    path: Path
    reason: str


@dataclass(frozen=True)
class Catalog:
    """The skills found: the usable ones in precedence order, and those left out with their reasons."""

    skills: tuple[Skill, ...] = ()
    left_out: tuple[LeftOut, ...] = ()

    def get(self, name: str) -> Skill | None:
        return next((skill for skill in self.skills if skill.name == name), None)

    def listed(self) -> list[Skill]:
        """The skills the model is told about (not those marked `disable-model-invocation`)."""
        return [skill for skill in self.skills if skill.model_invocable]


Found = list[tuple[Path, Skill | SkillError]]


class SkillShelf:
    """The skill folders as last read, read again only when a stat pass over them finds a change (a skill root or
    folder added, removed or renamed, a SKILL.md written): a turn then parses no YAML for skills that did not change.
    """

    def __init__(self) -> None:
        self._stamp: list[object] | None = None
        self._found: Found = []

    def read(self, dirs: Sequence[Path]) -> Found:
        seen = _stamp(dirs)
        if seen != self._stamp:
            self._found, self._stamp = list(_read_all(dirs)), seen
        return self._found


def discover(
    dirs: Sequence[Path], environ: Mapping[str, str], tools: Collection[str], shelf: SkillShelf | None = None
) -> Catalog:
    """Every `<dir>/<folder>/SKILL.md`, highest precedence first; a name found twice keeps the first. Requirements
    are checked each time (PATH, variables and servers' tools change without the folders changing)."""
    skills: list[Skill] = []
    left_out: list[LeftOut] = []
    seen: dict[str, Path] = {}
    for file, skill in shelf.read(dirs) if shelf is not None else _read_all(dirs):
        if isinstance(skill, SkillError):
            left_out.append(LeftOut(file.parent.name, file, str(skill)))
        elif skill.name in seen:
            left_out.append(LeftOut(skill.name, file, f"shadowed by {seen[skill.name]}"))
        else:
            seen[skill.name] = file
            unmet = [] if skill.always else skill.requires.unmet(environ, tools)
            if unmet:
                left_out.append(LeftOut(skill.name, file, "; ".join(unmet)))
            else:
                skills.append(skill)
    return Catalog(tuple(skills), tuple(left_out))


def pool_tools(pool: McpPool | None) -> set[str]:
    """The tool names a requirement may use: as the model sees them and as their servers name them."""
    routes = pool.routes() if pool else {}
    return {*routes, *(route.tool for route in routes.values())}


def needs_tools(dirs: Sequence[Path]) -> bool:
    """Whether any skill found requires MCP tools (so checking it needs the servers running)."""
    return any(isinstance(skill, Skill) and skill.requires.tools for _, skill in _read_all(dirs))


def read_skill(file: Path) -> Skill:
    """Parse one SKILL.md; raise SkillError naming what is wrong."""
    data, body = front_matter(file, "name: and description: lines")
    name, description = data.get("name"), data.get("description")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise SkillError(f"name {name!r} should be 1-64 lowercase letters, digits, '-' or '_'")
    if not isinstance(description, str) or not description.strip():
        raise SkillError("description is missing: one or two sentences saying what it does and when to use it")
    openclaw = _mapping(_mapping(data.get("metadata")).get("openclaw"))
    return Skill(
        name=name,
        description=" ".join(description.split())[:MAX_DESCRIPTION_CHARS],
        folder=file.parent,
        body=body,
        requires=_requirements(_mapping(data.get("requires")), openclaw),
        fork=data.get("context") == "fork",
        user_invocable=data.get("user-invocable", True) is not False,
        model_invocable=data.get("disable-model-invocation", False) is not True,
        argument_hint=str(data.get("argument-hint") or ""),
        always=openclaw.get("always") is True,
    )


def front_matter(file: Path, expected: str) -> tuple[dict[str, Any], str]:
    """A Markdown file's YAML frontmatter (a mapping; anything else reads as empty) and the body after it, stripped.
    The one reader of SKILL.md and HOOK.md alike: SkillError when the file cannot be read, starts with no
    frontmatter (the message says to write `expected` there) or holds bad YAML."""
    try:
        text = file.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise SkillError(f"cannot read it: {exc.strerror or exc}") from exc
    match = _FRONTMATTER.match(text)
    if match is None:
        raise SkillError(f"no YAML frontmatter: start the file with ---, {expected}, then ---")
    try:
        loaded: object = yaml.safe_load(match.group(1))
    except yaml.YAMLError as exc:
        raise SkillError(f"the frontmatter is not valid YAML ({str(exc).splitlines()[0]})") from exc
    return _mapping(loaded), text[match.end() :].strip()


def prompt_section(catalog: Catalog, budget: int) -> str:
    """The system prompt's list of skills: name, description and place, within `budget` characters; the rest are
    named only. Empty when there is no skill to offer."""
    listed = catalog.listed()
    if not listed:
        return ""
    lines: list[str] = []
    named_only: list[str] = []
    used = 0
    for skill in listed:
        line = f"- {skill.name}: {skill.description} ({skill.file})"
        if named_only or used + len(line) > budget:
            named_only.append(skill.name)
            continue
        lines.append(line)
        used += len(line) + 1
    if named_only:
        lines.append(f"- also (no room to describe them; read them with `skill`): {', '.join(named_only)}")
    intro = (
        "Skills are workflows the user set up. When one fits the request, read it first with the `skill` tool "
        "(and any file it points to with `skill` and `file`), then follow it."
    )
    return "# Skills\n" + intro + "\n" + "\n".join(lines) + "\n\n"


def _read_all(dirs: Sequence[Path]) -> Iterator[tuple[Path, Skill | SkillError]]:
    """Each `<dir>/<folder>/SKILL.md` in precedence order, read, or the reason it cannot be."""
    for directory in dirs:
        try:
            folders = sorted(entry for entry in directory.iterdir() if entry.is_dir())
        except OSError:  # missing or unreadable: no skills there
            continue
        for file in (folder / SKILL_FILE for folder in folders if (folder / SKILL_FILE).is_file()):
            try:
                yield file, read_skill(file)
            except SkillError as exc:
                yield file, exc


def _stamp(dirs: Sequence[Path]) -> list[object]:
    """What a change to the skills changes: each root's and skill folder's identity and time, each SKILL.md's
    identity, time and size (stat only, nothing read)."""
    seen: list[object] = []
    for directory in dirs:
        seen.append(_identity(directory))
        try:
            folders = sorted(entry for entry in directory.iterdir() if entry.is_dir())
        except OSError:
            continue
        seen += [(folder.name, _identity(folder), _identity(folder / SKILL_FILE)) for folder in folders]
    return seen


def _identity(path: Path) -> Stamp | None:
    try:
        return stamp(path)
    except OSError:  # unreadable counts as missing: the skill is skipped until it can be read
        return None


def _requirements(own: dict[str, Any], openclaw: dict[str, Any]) -> Requirements:
    theirs = _mapping(openclaw.get("requires"))
    return Requirements(
        bins=_strings(own.get("bins")) + _strings(theirs.get("bins")),
        any_bins=_strings(own.get("any_bins")) + _strings(theirs.get("anyBins")),
        env=_strings(own.get("env")) + _strings(theirs.get("env")),
        tools=_strings(own.get("tools")),
        os=_strings(own.get("os")) + _strings(openclaw.get("os")),
    )


def _mapping(value: object) -> dict[str, Any]:
    return {str(k): v for k, v in cast(dict[object, Any], value).items()} if isinstance(value, dict) else {}


def _strings(value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list):
        return tuple(str(item) for item in cast(list[object], value))
    return ()


def report(catalog: Catalog) -> str:
    """What `/skills`, `hermitcrab skills` and `doctor` say: the skills offered, and those left out with why."""
    lines = [f"Skills ({len(catalog.skills)}):" if catalog.skills else "Skills: none found."]
    for skill in catalog.skills:
        usage = f"/{skill.name} {skill.argument_hint}".rstrip() if skill.user_invocable else "not a command"
        notes = [
            usage,
            *(["runs as a sub-agent"] if skill.fork else []),
            *([] if skill.model_invocable else ["only by command"]),
        ]
        lines.append(f"- {skill.name}: {skill.description} [{'; '.join(notes)}] ({skill.file})")
    if catalog.left_out:
        lines.append(f"Left out ({len(catalog.left_out)}):")
        lines += [f"- {item.name} ({item.path}): {item.reason}" for item in catalog.left_out]
    return "\n".join(lines)
