"""The memory files on disk: which ones count, reading them safely, dating them and appending to them."""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

from hermitcrab.servers._common.files import append_bytes
from hermitcrab.servers._common.paths import PathOutsideRoots, resolve_inside

EVERGREEN = ("MEMORY.md", "USER.md")
MEMORY_DIR = "memory"
_DATED = re.compile(r"^(\d{4})-(\d{2})-(\d{2})")
_MAX_BYTES = 2_000_000


class UnreadableFile(ValueError):
    """The file is binary, not UTF-8, too large or vanished while being read."""


@dataclass(frozen=True)
class FileStat:
    """What tells us a file changed without reading it."""

    mtime_ns: int
    size: int
    inode: int


@dataclass(frozen=True)
class MemoryRoots:
    """The workspace plus any extra memory paths (files or folders) given by configuration."""

    workspace: Path
    extra: tuple[Path, ...] = ()

    def roots(self) -> list[Path]:
        """Every place `memory_get` may read from."""
        return [self.workspace / name for name in EVERGREEN] + [self.workspace / MEMORY_DIR, *self.extra]

    def relative(self, path: Path) -> str:
        """Workspace-relative POSIX path; extra paths outside the workspace stay absolute."""
        try:
            return path.relative_to(self.workspace).as_posix()
        except ValueError:
            return path.as_posix()

    def absolute(self, rel: str) -> Path:
        return Path(rel) if Path(rel).is_absolute() else self.workspace / rel

    def resolve(self, rel: str) -> Path:
        """The real path of a user-given memory path; raises PathOutsideRoots outside the memory roots."""
        if not rel.endswith(".md"):
            raise PathOutsideRoots(f"{rel!r} is not a Markdown memory file")
        candidate = Path(rel)
        if not candidate.is_absolute():
            candidate = self.workspace / candidate
        return resolve_inside(str(candidate), self.roots())


def discover(roots: MemoryRoots) -> dict[str, FileStat]:
    """Every memory Markdown file with its stat; symlinks are skipped, as are hidden files and folders."""
    found: dict[str, FileStat] = {}
    for root in roots.roots():
        for path in _walk(root):
            try:
                stat = path.stat()
            except OSError:
                continue
            found[roots.relative(path)] = FileStat(stat.st_mtime_ns, stat.st_size, stat.st_ino)
    return found


def _walk(root: Path) -> Iterator[Path]:
    if root.is_symlink():
        return
    if root.is_file():
        if root.suffix == ".md":
            yield root
        return
    if not root.is_dir():
        return
    for dirpath, dirnames, filenames in os.walk(root):
        base = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and not (base / d).is_symlink())
        for name in sorted(filenames):
            path = base / name
            if name.endswith(".md") and not name.startswith(".") and not path.is_symlink():
                yield path


def read_text(path: Path) -> str:
    """The file's text, or UnreadableFile for binary, non-UTF-8 or oversized files."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UnreadableFile(f"cannot read: {exc.strerror or exc}") from exc
    if len(data) > _MAX_BYTES:
        raise UnreadableFile(f"larger than {_MAX_BYTES // 1_000_000} MB")
    if b"\x00" in data:
        raise UnreadableFile("binary file (contains NUL bytes)")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UnreadableFile(f"not UTF-8 text (byte {exc.start})") from exc


def file_date(rel: str) -> dt.date | None:
    """The date of a daily log (`memory/2024-05-01.md`, `memory/2024-05-01-trip.md`); None for undated files."""
    if not rel.startswith(MEMORY_DIR + "/"):
        return None
    match = _DATED.match(rel.rsplit("/", 1)[-1])
    if match is None:
        return None
    try:
        return dt.date(int(match[1]), int(match[2]), int(match[3]))
    except ValueError:
        return None


def append_entry(path: Path, text: str, heading: str | None, lock_dir: Path) -> tuple[int, int]:
    """Append `text` (under `heading`, if given) to `path`; returns the 1-based line range written.

    A lock file serialises writers across processes, and the file is only ever appended to in one write,
    so two clients appending at once both land and nothing is truncated.
    """
    lock_dir.mkdir(parents=True, exist_ok=True)
    with FileLock(str(lock_dir / "append.lock"), timeout=30):
        path.parent.mkdir(parents=True, exist_ok=True)
        existing = path.read_bytes() if path.exists() else b""
        prefix = "" if not existing or existing.endswith(b"\n\n") else ("\n" if existing.endswith(b"\n") else "\n\n")
        head = prefix + (f"## {heading}\n\n" if heading else "")
        block = head + text.strip("\n") + "\n"
        start = existing.count(b"\n") + head.count("\n") + 1
        append_bytes(path, block.encode("utf-8"), mode=0o644)
    return start, start + text.strip("\n").count("\n")


def numbered(lines: Sequence[str], first: int) -> str:
    """Lines prefixed with their 1-based numbers, as `memory_get` shows them."""
    width = len(str(first + len(lines)))
    return "\n".join(f"{first + i:>{width}}| {line}" for i, line in enumerate(lines))
