"""Read the persona bootstrap files from the workspace, every turn, within a character budget; a `PersonaReader`
reads a file again only when a stat says it changed."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path

from hermitcrab.util.files import Stamp, stamp
from hermitcrab.util.persona_files import BOOTSTRAP_ORDER

from ..text import cut_middle

SUBAGENT_FILES = frozenset({"AGENTS.md", "SOUL.md", "TOOLS.md", "IDENTITY.md", "USER.md"})
PRIVATE_FILES = frozenset({"USER.md", "MEMORY.md"})
"""The owner's own: with the daily logs, injected only into the owner's private turns."""
OPTIONAL_FILES = frozenset({"BOOTSTRAP.md"})
MAX_FILE_CHARS = 20_000
MAX_TOTAL_CHARS = 150_000


@dataclass(frozen=True)
class PersonaFile:
    """One injected file; `chars` is its size on disk, `text` what was injected (maybe truncated)."""

    name: str
    text: str
    chars: int
    missing: bool = False

    @property
    def truncated(self) -> bool:
        return not self.missing and len(self.text) < self.chars


@dataclass
class PersonaReader:
    """The persona files' texts as last read, each read again only when its inode, size or time changed: the files
    go into every turn's prompt, and most turns change none of them."""

    _texts: dict[Path, tuple[Stamp | None, str]] = field(default_factory=dict[Path, tuple[Stamp | None, str]])

    def read(self, path: Path) -> str:
        seen = stamp(path)
        known = self._texts.get(path)
        if known is not None and known[0] == seen:
            return known[1]
        text = path.read_text(encoding="utf-8", errors="replace")
        self._texts[path] = (seen, text)
        return text


def load_persona(
    workspace: Path,
    *,
    today: dt.date,
    private: bool = True,
    subagent: bool = False,
    max_file_chars: int = MAX_FILE_CHARS,
    max_total_chars: int = MAX_TOTAL_CHARS,
    reader: PersonaReader | None = None,
) -> list[PersonaFile]:
    """The bootstrap files in injection order, then yesterday's and today's daily memory logs.

    USER.md, MEMORY.md and the daily logs are the owner's: only a `private` turn gets them (the owner's own
    sessions, never a group's or another person's); BOOTSTRAP.md is injected only while it exists and is not empty
    (the first-run ritual empties it); sub-agents get only the files that describe who they are and how to work.
    """
    names = [name for name in BOOTSTRAP_ORDER if private or name not in PRIVATE_FILES]
    if subagent:
        names = [name for name in names if name in SUBAGENT_FILES]
    days = (today - dt.timedelta(days=1), today)
    daily = [f"memory/{day.isoformat()}.md" for day in days] if private and not subagent else []
    files: list[PersonaFile] = []
    budget = max_total_chars
    for name in [*names, *daily]:
        path = workspace / name
        if not path.is_file():
            if name not in OPTIONAL_FILES and not name.startswith("memory/"):
                files.append(PersonaFile(name, "", 0, missing=True))
            continue
        if (why := _not_the_workspaces(path, workspace)) is not None:
            files.append(PersonaFile(name, f"[{name} omitted: {why}]", 0))
            continue
        text = reader.read(path) if reader is not None else path.read_text(encoding="utf-8", errors="replace")
        if name in OPTIONAL_FILES and not text.strip():
            continue  # emptied: the first-run ritual is over (commands may not delete it, see docs/exec.md)
        limit = min(max_file_chars, budget)
        if limit <= 0:
            files.append(
                PersonaFile(
                    name, f"[{name} omitted: the {max_total_chars:,}-char bootstrap budget is used up]", len(text)
                )
            )
            continue
        kept = cut_middle(text, limit, f"read {name} for the rest")
        budget -= len(kept)
        files.append(PersonaFile(name, kept, len(text)))
    return files


def _not_the_workspaces(path: Path, workspace: Path) -> str | None:
    """Why `path` may be another file in disguise, or None: a link made inside the workspace (by a tool, a page the
    browser saved) must not put a file from elsewhere (a key, another user's notes) into every prompt."""
    if not path.resolve().is_relative_to(workspace.resolve()):
        return "it leads outside the workspace"
    if path.stat().st_nlink > 1:
        return "it has more than one hard link, so it may be a file from elsewhere"
    return None


def render_persona(files: list[PersonaFile]) -> str:
    sections: list[str] = []
    for file in files:
        if file.missing:
            sections.append(f"## {file.name}\n[missing: {file.name} does not exist in the workspace]")
        else:
            sections.append(f"## {file.name}\n{file.text.strip()}")
    return "\n\n".join(sections)
