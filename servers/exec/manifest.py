"""What the roots hold, entry by entry: the manifest undo compares before and after a call.

A walk costs one stat per entry. An entry whose stat (inode, ctime, mtime, size) matches the previous manifest is
kept as it was; any other file is read and saved again (`Blobs`), so every file in a manifest has its content
saved, or is marked as not saved (too big, unreadable). ctime is in the stat because no program can set it back:
a rewrite that restores size and mtime (`cp -p`, `tar -x`, `touch -r`) still shows, and so does a chmod. Walks go
from each root's descriptor with `O_NOFOLLOW`, so a symlink is recorded as a link and never followed, even one
swapped in mid-walk.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from . import fsio
from .blobs import Blobs

Kind = Literal["file", "dir", "link", "special"]
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(frozen=True)
class Entry:
    """One path as a walk found it. `digest` names a file's saved content (None: not saved); `target` is a
    link's; a `special` entry (FIFO, socket, device) is recorded but cannot be recreated."""

    kind: Kind
    mode: int
    size: int = 0
    mtime_ns: int = 0
    ino: int = 0
    ctime_ns: int = 0
    digest: str | None = None
    target: str | None = None

    @property
    def restorable(self) -> bool:
        return self.kind in ("dir", "link") or (self.kind == "file" and self.digest is not None)

    def same_stat(self, info: os.stat_result) -> bool:
        """Whether the path is still what this entry recorded: any write or chmod moves ctime, a new file or kind
        is a new inode."""
        return (self.ino, self.ctime_ns, self.mtime_ns, self.size) == (
            info.st_ino,
            info.st_ctime_ns,
            info.st_mtime_ns,
            info.st_size,
        )

    def same_content(self, other: Entry | None) -> bool:
        """Whether `other` is this entry as undo sees it: kind, mode, content or link target (times may differ)."""
        if other is None:
            return False
        if self.kind in ("file", "special") and self.digest is None:
            return self == other  # content not saved: only the stat can tell
        return (self.kind, self.mode, self.digest, self.target) == (other.kind, other.mode, other.digest, other.target)

    def to_json(self) -> list[Any]:
        return [self.kind, self.mode, self.size, self.mtime_ns, self.ino, self.ctime_ns, self.digest, self.target]

    @classmethod
    def from_json(cls, data: list[Any]) -> Entry:
        return cls(*data)


Manifest = dict[str, Entry]  # absolute path -> entry


def manifest_to_json(manifest: Manifest) -> dict[str, list[Any]]:
    return {path: entry.to_json() for path, entry in manifest.items()}


def manifest_from_json(data: dict[str, list[Any]]) -> Manifest:
    return {path: Entry.from_json(entry) for path, entry in data.items()}


class TooManyEntries(RuntimeError):
    """The roots hold more entries than a walk may visit."""


class Scanner:
    """Walks the roots (all of them, or given paths only), skipping the `skip` paths (hidden credentials), and
    stopping with TooManyEntries past `max_entries` (a walk costs about 10 µs an entry, twice a command)."""

    def __init__(self, roots: Sequence[Path], skip: Iterable[Path], blobs: Blobs, max_entries: int) -> None:
        self.roots = [root.resolve() for root in roots]
        self.skip = {str(path) for path in skip}
        self.blobs = blobs
        self.max_entries = max_entries
        self.building: Manifest = {}  # the walk in progress: its copies must survive a prune it causes

    def walk(self, reference: Manifest) -> Manifest:
        """Everything under the roots (not the roots themselves)."""
        self.building = {}
        try:
            for root in self.roots:
                fd = os.open(root, _DIR_FLAGS)
                try:
                    self._walk(fd, str(root), reference)
                finally:
                    os.close(fd)
            return self.building
        finally:
            self.building = {}

    def look(self, paths: Iterable[str], reference: Manifest) -> Manifest:
        """Just `paths` (absolute, inside a root), without descending: those that exist."""
        self.building = {}
        by_parent: dict[str, list[str]] = {}
        for path in paths:
            by_parent.setdefault(os.path.dirname(path), []).append(path)
        for parent, children in by_parent.items():
            root = next((r for r in self.roots if Path(parent) == r or Path(parent).is_relative_to(r)), None)
            if root is None:
                continue
            try:
                with fsio.directory(root, Path(parent)) as fd:
                    for path in children:
                        self._visit(fd, os.path.basename(path), path, reference)
            except OSError:  # the parent is gone or is no longer a directory: none of them exists as recorded
                continue
        found, self.building = self.building, {}
        return found

    def _walk(self, fd: int, prefix: str, reference: Manifest) -> None:
        for name in _names(fd):
            path = f"{prefix}/{name}"
            if path in self.skip:
                continue
            entry = self._visit(fd, name, path, reference)
            if len(self.building) > self.max_entries:
                raise TooManyEntries(f"the roots hold more than {self.max_entries} files and folders")
            if entry is None or entry.kind != "dir":
                continue
            try:
                inner = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError:  # replaced since the stat: the next walk sees what it became
                continue
            try:
                self._walk(inner, path, reference)
            finally:
                os.close(inner)

    def _visit(self, fd: int, name: str, path: str, reference: Manifest) -> Entry | None:
        try:
            info = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except OSError:
            return None
        entry = reference.get(path)
        if entry is None or not entry.same_stat(info):  # the common case, unchanged, costs the stat alone
            entry = self._entry(fd, name, info)
        if entry is not None:
            self.building[path] = entry
        return entry

    def _entry(self, fd: int, name: str, info: os.stat_result) -> Entry | None:
        mode, stamp = stat.S_IMODE(info.st_mode), (info.st_size, info.st_mtime_ns, info.st_ino, info.st_ctime_ns)
        if stat.S_ISDIR(info.st_mode):
            return Entry("dir", mode, *stamp)
        if stat.S_ISLNK(info.st_mode):
            try:
                return Entry("link", mode, *stamp, target=os.readlink(name, dir_fd=fd))
            except OSError:
                return None
        if not stat.S_ISREG(info.st_mode):
            return Entry("special", mode, *stamp)
        saved = self.blobs.save(fd, name)
        if saved is None:  # unreadable, or replaced since the stat: recorded, as what cannot be undone
            return Entry("file", mode, *stamp)
        read, digest = saved
        return Entry(
            "file", stat.S_IMODE(read.st_mode), read.st_size, read.st_mtime_ns, read.st_ino, read.st_ctime_ns, digest
        )


def _names(fd: int) -> Iterator[str]:
    try:
        with os.scandir(fd) as entries:
            names = [entry.name for entry in entries]
    except OSError:
        return
    yield from names
