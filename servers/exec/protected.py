"""What must not change inside the roots, though commands may write everything else there: declared once here.

The persona and memory files at a root's top are the model's own instructions next turn, and a git repository's
config, hooks and commondir name programs git runs (for the owner too, outside the sandbox). The sandbox binds
them read-only (`Protection`s, from `Protected.current`), the file tools refuse to write them (`write_problem`),
and without the sandbox the policy refuses the same writes through the file tools' rule.

A bind mount guards a path, not a name: a directory holding it can still be renamed away and a new one made in
its place, so every directory between a root and a git directory is pinned (bound onto itself, still writable:
a mount point cannot be renamed or removed). A protected path that does not exist yet gets a stand-in bound
read-only there, so it cannot be created either; bwrap makes the mount point on the host, and `STAND_INS` removes
it again when the last command binding it has ended.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from hermitcrab.util.files import atomic_write_text
from hermitcrab.util.persona_files import BOOT_FILE, BOOTSTRAP_ORDER, HOOKS_FOLDER, MEMORY_FOLDER

logger = logging.getLogger(__name__)

# What is bound at a path: read-only (an empty file or folder stands in while it is missing; git reads a
# commondir naming "." as the git directory itself, i.e. as none), or "pin": the directory onto itself, writable.
Kind = Literal["file", "folder", "commondir", "pin"]
GIT_FILES: tuple[tuple[str, Kind], ...] = (
    ("config", "file"),
    ("config.worktree", "file"),  # read when the config enables extensions.worktreeConfig (only then bound)
    ("hooks", "folder"),
    ("commondir", "commondir"),  # would make git read another directory's config
)
STAND_IN_TEXT: dict[Kind, str] = {"file": "", "commondir": ".\n"}
# Names only a hermitcrab (OpenClaw-style) workspace has; AGENTS.md alone is any coding agent's project file.
WORKSPACE_MARKERS = ("SOUL.md", "IDENTITY.md", "HEARTBEAT.md", "BOOTSTRAP.md")
MAX_DIRECTORIES = 20_000  # over all roots: the walk stops there, and repositories beyond are not found
MAX_DEPTH = 8
_SKIPPED = frozenset({"node_modules", ".venv", "venv", "__pycache__", ".tox", ".mypy_cache", ".cache"})
_RACY_NS = 2_000_000_000  # a directory changed this recently may change again within its mtime's granularity


@dataclass(frozen=True)
class Protection:
    path: Path
    kind: Kind


def write_problem(real: Path, roots: Sequence[Path], *, owner_approved: bool = False) -> str | None:
    """Why the file tools (and, without the sandbox, commands) may not write `real`, or None.

    Git's files are refused by the file tools' own `.git` rule; this names what the sandbox adds. A persona file
    may be written by a file tool call the owner approved (`owner_approved`, see persona_edits.py).
    """
    for root in roots:
        guarded = {p.path for p in persona(root)}
        if real in guarded and real.name not in (MEMORY_FOLDER, HOOKS_FOLDER):
            if owner_approved:
                continue
            return (
                f"{real} is a persona file, read as the assistant's own instructions; only the owner changes it "
                "(write_file or edit_file ask them; commands may not)"
            )
        if root / MEMORY_FOLDER in guarded and real.is_relative_to(root / MEMORY_FOLDER):
            return f"{real} is in the memory folder; add notes with the memory tools (memory_append) instead"
        if root / HOOKS_FOLDER in guarded and real.is_relative_to(root / HOOKS_FOLDER):
            return (
                f"{real} is in the workspace's hooks folder, whose commands run on the host outside the sandbox; "
                "only the owner changes hooks, by hand"
            )
    return None


def is_persona_file(real: Path, roots: Sequence[Path]) -> bool:
    """Whether `real` is one of the persona files (not the memory folder) of a hermitcrab workspace root."""
    return any(real == p.path and p.kind == "file" for root in roots for p in persona(root))


def persona(root: Path) -> list[Protection]:
    """The persona and memory files, BOOT.md and the hooks folder at the top of `root`, when it is a hermitcrab
    workspace (holds one of WORKSPACE_MARKERS): in a project, AGENTS.md or memory/ are the project's own, and
    stand-ins for the missing ones would show up there as strange new files."""
    if not any(os.path.lexists(root / name) for name in WORKSPACE_MARKERS):
        return []
    files = [Protection(root / name, "file") for name in (*BOOTSTRAP_ORDER, BOOT_FILE)]
    return [*files, Protection(root / MEMORY_FOLDER, "folder"), Protection(root / HOOKS_FOLDER, "folder")]


@dataclass
class _Scanned:
    mtime_ns: int
    subdirectories: list[str]  # names, not descended into a repository's git directory
    repository: Literal["git folder", "git file", "bare"] | None  # what this directory is or holds


class Protected:
    """The protections of some roots, the git part found by a bounded walk kept between calls.

    A refresh stats every directory the last walk saw and lists again only those whose mtime changed (an entry
    was added, removed or renamed there), so finding the repositories of an unchanged tree costs one stat each.
    Paths are strings inside the walk: building and hashing a Path per directory cost more than the stat.
    """

    def __init__(self, roots: Sequence[Path]) -> None:
        self.roots = [root.resolve() for root in roots]
        self._scans: dict[str, _Scanned] = {}
        self._lock = threading.Lock()
        self._warned: set[Path] = set()

    def current(self) -> list[Protection]:
        """Every protection of the roots as they are now (a few ms for an unchanged tree; call it off the loop)."""
        with self._lock:
            protections: list[Protection] = []
            seen: dict[str, _Scanned] = {}
            for root in self.roots:
                protections += persona(root)
                protections += self._walk(root, seen)
            self._scans = seen
            return protections

    def _walk(self, root: Path, seen: dict[str, _Scanned]) -> list[Protection]:
        found: list[Protection] = []
        pinned: set[Path] = set()
        stack: list[tuple[str, int]] = [(str(root), 0)]
        now = time.time_ns()
        while stack:
            directory, depth = stack.pop()
            if len(seen) >= MAX_DIRECTORIES:
                self._warn_once(root)
                break
            scan = self._scan(directory, now)
            if scan is None:
                continue
            seen[directory] = scan
            if scan.repository == "git folder":
                found += _pins(root, Path(directory), pinned) + _git_dir(Path(directory, ".git"), pinned)
            elif scan.repository == "bare":
                found += _pins(root, Path(directory), pinned) + _git_dir(Path(directory), pinned)
            elif scan.repository == "git file":
                found += [*_pins(root, Path(directory), pinned), Protection(Path(directory, ".git"), "file")]
            if depth < MAX_DEPTH:
                stack += [(f"{directory}/{name}", depth + 1) for name in scan.subdirectories]
        return found

    def _scan(self, directory: str, now: int) -> _Scanned | None:
        try:
            mtime_ns = os.stat(directory, follow_symlinks=False).st_mtime_ns
        except OSError:
            return None
        cached = self._scans.get(directory)
        if cached is not None and cached.mtime_ns == mtime_ns and now - mtime_ns > _RACY_NS:
            return cached
        subdirectories: list[str] = []
        files: set[str] = set()
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        subdirectories.append(entry.name)
                    elif entry.name in (".git", "HEAD"):
                        files.add(entry.name)
        except OSError:
            return None
        if "HEAD" in files and "objects" in subdirectories:
            return _Scanned(mtime_ns, [], "bare")
        repository = "git folder" if ".git" in subdirectories else "git file" if ".git" in files else None
        descend = [name for name in subdirectories if name != ".git" and name not in _SKIPPED]
        return _Scanned(mtime_ns, descend, repository)

    def _warn_once(self, root: Path) -> None:
        if root not in self._warned:
            self._warned.add(root)
            logger.warning(
                "%s holds more than %d directories: git repositories past them are not bound read-only",
                root,
                MAX_DIRECTORIES,
            )


def _pins(root: Path, directory: Path, pinned: set[Path]) -> list[Protection]:
    """Every directory from just below `root` down to `directory`, not pinned yet."""
    chain = [directory, *directory.parents]
    fresh = [d for d in chain[: chain.index(root)] if d not in pinned] if root in chain else []
    pinned.update(fresh)
    return [Protection(d, "pin") for d in fresh]


def _git_dir(git_dir: Path, pinned: set[Path]) -> list[Protection]:
    """A git directory's protected files, and those of the submodules and worktrees it keeps inside."""
    found = [Protection(git_dir, "pin")] if git_dir not in pinned else []
    pinned.add(git_dir)
    found += _git_files(git_dir, _reads_worktree_config(git_dir))
    for inner in _inner_git_dirs(git_dir):
        found += _pins(git_dir, inner, pinned)
        found += _git_files(inner, _reads_worktree_config(git_dir) or _reads_worktree_config(inner))
    return found


def _git_files(git_dir: Path, worktree_config: bool) -> list[Protection]:
    # Every bind costs bwrap ~0.2-0.5 ms, so config.worktree only where git would read it.
    return [
        Protection(git_dir / name, kind) for name, kind in GIT_FILES if name != "config.worktree" or worktree_config
    ]


def _reads_worktree_config(git_dir: Path) -> bool:
    """Whether the config enables extensions.worktreeConfig (then git also reads config.worktree)."""
    try:
        return b"worktreeconfig" in (git_dir / "config").read_bytes().lower()
    except OSError:
        return False


def _inner_git_dirs(git_dir: Path) -> Iterable[Path]:
    for holder in ("modules", "worktrees"):
        top = git_dir / holder
        if not top.is_dir():
            continue
        for directory, subdirectories, files in os.walk(top):
            if "HEAD" in files:
                yield Path(directory)
                subdirectories[:] = [d for d in subdirectories if d == "modules"]


class StandIns:
    """The mount points bwrap makes on the host for protected paths that did not exist, counted by the commands
    binding them, and removed when the last one ends: removing one sooner would lift the read-only mount of a
    command still running (the kernel drops a mount whose mount point is removed in another namespace)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users: dict[Path, int] = {}

    def claim(self, protections: Sequence[Protection]) -> list[Path]:
        """The stand-ins one command will bind (missing now, or another command's); release them when it ends."""
        with self._lock:
            claimed = [
                p.path
                for p in protections
                if p.kind != "pin" and (p.path in self._users or not os.path.lexists(p.path))
            ]
            for path in claimed:
                self._users[path] = self._users.get(path, 0) + 1
            return claimed

    def release(self, claimed: Sequence[Path]) -> None:
        with self._lock:
            for path in claimed:
                self._users[path] -= 1
                if not self._users[path]:
                    del self._users[path]
                    _remove_stand_in(path)


def _remove_stand_in(path: Path) -> None:
    """Remove what bwrap left at `path`, if it is still a stand-in (something else may have been written since)."""
    try:
        if path.is_dir() and not path.is_symlink():
            path.rmdir()  # fails, and so stays, when no longer empty
        elif path.is_file() and not path.is_symlink() and path.read_bytes() in (b"", b".\n"):
            path.unlink()
    except OSError:
        pass  # a stand-in something else has taken over stays


STAND_INS = StandIns()


def make_blanks(folder: Path) -> Path:
    """The sources stand-ins are bound from (`folder/<kind>`), made once in the server's state."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    (folder / "folder").mkdir(mode=0o700, exist_ok=True)
    for kind, text in STAND_IN_TEXT.items():
        if not (folder / kind).is_file():
            atomic_write_text(folder / kind, text)
    return folder
