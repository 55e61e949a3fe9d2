"""The host tool `skill {name, file?}`: read a skill's instructions or a file next to them, and nothing else.

It lives in the host rather than in a server because it reads the host's own prompt material: the skills the
system prompt lists are found by the host (by precedence, with their requirements checked), so only the host can
say which folder a name means. It is read-only and confined to that folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..mcp.pool import ToolOutcome
from ..providers.base import ToolSpec
from .catalog import SKILL_FILE, Catalog

MAX_LISTED_FILES = 50

SKILL = ToolSpec(
    "skill",
    "Read a skill listed under Skills in the system prompt: its instructions (SKILL.md) and the files in its "
    "folder, or one of those files with `file`. Read-only; only files inside that skill's folder.",
    {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The skill's name, as listed."},
            "file": {"type": "string", "description": "Optional: a path relative to the skill's folder."},
        },
        "required": ["name"],
    },
)


def read(catalog: Catalog, arguments: dict[str, Any]) -> ToolOutcome:
    name = arguments.get("name")
    skill = catalog.get(name) if isinstance(name, str) else None
    if skill is None:
        known = ", ".join(s.name for s in catalog.skills) or "none"
        return ToolOutcome(f"no skill named {name!r}; available: {known}", True)
    wanted = arguments.get("file")
    if wanted in (None, "", SKILL_FILE):
        others = _files(skill.folder)
        listing = f"\n\nFiles in {skill.folder}: {', '.join(others)}" if others else ""
        return ToolOutcome(f"Skill {skill.name} ({skill.file})\n\n{skill.body}{listing}")
    if not isinstance(wanted, str):
        return ToolOutcome("'file' must be a path relative to the skill's folder", True)
    folder = skill.folder.resolve()
    target = (folder / wanted).resolve()
    if not target.is_relative_to(folder):
        return ToolOutcome(
            f"{wanted!r} is outside the folder of skill {skill.name}; only its own files can be read", True
        )
    if not target.is_file():
        return ToolOutcome(f"no file {wanted!r} in skill {skill.name}; it has: {', '.join(_files(folder))}", True)
    try:
        return ToolOutcome(target.read_text(encoding="utf-8", errors="replace"))
    except OSError as exc:
        return ToolOutcome(f"cannot read {wanted!r}: {exc.strerror or exc}", True)


def _files(folder: Path) -> list[str]:
    """The folder's files besides SKILL.md, relative and sorted (hidden ones left out)."""
    found: list[str] = []
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if path.is_file() and str(relative) != SKILL_FILE and not any(p.startswith(".") for p in relative.parts):
            found.append(str(relative))
            if len(found) >= MAX_LISTED_FILES:
                break
    return found
