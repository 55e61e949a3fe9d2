"""The memory files on disk: which ones count, reading them safely, dating them and appending to them."""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import re
import time
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from stat import S_ISDIR, S_ISLNK, S_ISREG
from typing import Any, NamedTuple, cast

from filelock import FileLock

from hermitcrab.servers._common.files import NotRegularFile, open_regular
from hermitcrab.servers._common.paths import PathOutsideRoots, PathUnresolvable, resolve_inside
from hermitcrab.util.files import fsync_dir
from hermitcrab.util.store import JsonFile

EVERGREEN = ("MEMORY.md", "USER.md")
MEMORY_DIR = "memory"
LINKED = "it has other hard links, so it may be a file outside memory under another name"
REPEAT_WINDOW_S = 600  # an identical append within this long is taken as a retry, not a new note
_DATED = re.compile(r"^(\d{4})-(\d{2})-(\d{2})")
_MAX_BYTES = 2_000_000
# Control characters (all but tab and newline), DEL, C1 controls and lone surrogates: none belong in a note.
_UNWANTED = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_BINARY_CONTROLS = 0.05  # a file with more control characters than this share is binary, not text with a bad byte
_BINARY_UNDECODED = 0.3


class UnreadableFile(ValueError):
    """The file is not a regular file, binary, too large or vanished while being read."""


class HardLinked(UnreadableFile):
    """The file has other names (hard links), so it may be a file outside the roots, or a private one, reached
    through a path inside them: no path check can tell, so such a file is neither read nor written."""


@dataclass(frozen=True)
class Written:
    """Where an append landed (1-based lines), and whether it was a retry of one already written."""

    start: int
    end: int
    repeated: bool = False


class FileStat(NamedTuple):
    """What tells us a file changed without reading it (a tuple: every search makes one a file)."""

    mtime_ns: int
    size: int
    inode: int
    links: int = 1  # a new hard link changes no other field, and makes the file unreadable


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
            raise PathOutsideRoots("not a Markdown memory file")
        candidate = Path(rel)
        if not candidate.is_absolute():
            candidate = self.workspace / candidate
        return resolve_inside(str(candidate), self.roots())

    def escape(self, path: Path) -> str | None:
        """Why `path` may not be used when its real path (symlinks followed) lies outside the roots; else None."""
        try:
            resolve_inside(str(path), self.roots())
        except PathUnresolvable:
            return None  # not followed at all: reading it fails on its own, with its own reason
        except PathOutsideRoots:
            return f"its real path {path.resolve()} is outside the memory roots"
        return None


def discover(roots: MemoryRoots) -> dict[str, FileStat]:
    """Every memory Markdown file with its stat; hidden files and folders are skipped, and so are symlinks, except
    those that lead out of the roots: they are found, so that indexing lists them as skipped, with the reason.

    Every search runs this, so it costs one `lstat` a file and no `Path` objects: years of daily logs must not
    slow a search down (1,000 files took 15 ms with pathlib's walk, 4-5 ms this way, ~2 of them the lstats)."""
    found: dict[str, FileStat] = {}
    for root in roots.roots():
        try:
            stat = root.lstat()
        except OSError:
            continue
        if S_ISDIR(stat.st_mode):
            _scan(root, roots, found)
        elif root.suffix == ".md" and (S_ISREG(stat.st_mode) or (S_ISLNK(stat.st_mode) and roots.escape(root))):
            found[roots.relative(root)] = FileStat(stat.st_mtime_ns, stat.st_size, stat.st_ino, stat.st_nlink)
    return found


def _scan(folder: Path, roots: MemoryRoots, found: dict[str, FileStat]) -> None:
    """Add the Markdown files under `folder` to `found`: its own files by name, then its folders."""
    rel = roots.relative(folder)  # once a folder, not once a file; a folder may be the workspace itself ("."),
    prefix = "" if rel == "." else f"{rel}/"  # or hold it, when an extra path does
    try:
        with os.scandir(folder) as listing:
            entries = sorted(listing, key=lambda entry: entry.name)
    except OSError:
        return
    folders: list[Path] = []
    for entry in entries:
        if entry.name.startswith("."):
            continue
        if entry.is_symlink():
            if entry.name.endswith(".md") and roots.escape(folder / entry.name):
                with suppress(OSError):
                    stat = entry.stat(follow_symlinks=False)
                    found[prefix + entry.name] = FileStat(stat.st_mtime_ns, stat.st_size, stat.st_ino, stat.st_nlink)
            continue
        if entry.is_dir(follow_symlinks=False):
            folders.append(folder / entry.name)
        elif entry.name.endswith(".md"):
            try:
                stat = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            found[prefix + entry.name] = FileStat(stat.st_mtime_ns, stat.st_size, stat.st_ino, stat.st_nlink)
    for subfolder in folders:
        _scan(subfolder, roots, found)


def read_text(path: Path) -> str:
    """The file's text with bytes that are not text (NUL, invalid UTF-8) shown as U+FFFD; UnreadableFile for
    anything but a regular file, a binary file or one over 2 MB. Never blocks (a FIFO is refused, not opened
    for reading). A file with other hard links raises HardLinked, checked on the open file."""
    try:
        fd = open_regular(path, os.O_RDONLY)
    except NotRegularFile as exc:
        raise UnreadableFile(str(exc)) from exc
    except OSError as exc:
        raise UnreadableFile(f"cannot read: {exc.strerror or exc}") from exc
    if _linked(fd):
        os.close(fd)
        raise HardLinked(LINKED)
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(_MAX_BYTES + 1)
    if len(data) > _MAX_BYTES:
        raise UnreadableFile(f"larger than {_MAX_BYTES // 1_000_000} MB")
    text = data.decode("utf-8-sig", errors="replace")
    controls = len(_CONTROL.findall(text))
    undecoded = text.count("\ufffd")
    if controls > len(text) * _BINARY_CONTROLS or undecoded > len(text) * _BINARY_UNDECODED:
        raise UnreadableFile(f"binary file ({controls + undecoded} of {len(text)} characters are not text)")
    return _CONTROL.sub("\ufffd", text) if controls else text


def clean_note(text: str) -> tuple[str, int]:
    """`text` without control characters (tabs and newlines stay, CRLF becomes LF), and how many were removed."""
    text = text.replace("\r\n", "\n")
    cleaned, removed = _UNWANTED.subn("", text)
    return cleaned, removed


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


def append_entry(path: Path, text: str, heading: str | None, lock_dir: Path) -> Written:
    """Append `text` (under `heading`, if given) to the regular file `path`, durably (fsync) before returning.

    A lock file serialises writers across processes, and the file is only ever appended to in one write,
    so two clients appending at once both land and nothing is truncated. The same text appended to the same
    file again within REPEAT_WINDOW_S, while still there, is a retry: nothing is written and `repeated` is set.
    Raises NotRegularFile for a FIFO, device or other special file, HardLinked for a file with other hard links,
    and OSError when the write fails.
    """
    body = text.strip("\n")
    lock_dir.mkdir(parents=True, exist_ok=True)
    recent_file = JsonFile(lock_dir / "recent-appends.json")
    with FileLock(str(lock_dir / "append.lock"), timeout=30):
        path.parent.mkdir(parents=True, exist_ok=True)
        created = not path.exists()
        fd = open_regular(path, os.O_RDWR | os.O_APPEND | os.O_CREAT)
        try:
            if _linked(fd):
                raise HardLinked(LINKED)
            existing = _read_all(fd)
            now = time.time()
            recent = {k: v for k, v in _read_recent(recent_file).items() if now - float(v["at"]) < REPEAT_WINDOW_S}
            key = hashlib.blake2b(f"{path}\x00{body}".encode(), digest_size=16).hexdigest()
            if key in recent and body.encode("utf-8") in existing:
                return Written(int(recent[key]["start"]), int(recent[key]["end"]), repeated=True)
            prefix = (
                "" if not existing or existing.endswith(b"\n\n") else ("\n" if existing.endswith(b"\n") else "\n\n")
            )
            head = prefix + (f"## {heading}\n\n" if heading else "")
            start = existing.count(b"\n") + head.count("\n") + 1
            os.write(fd, (head + body + "\n").encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        if created:
            fsync_dir(path.parent)
        written = Written(start, start + body.count("\n"))
        recent[key] = {"at": now, "start": written.start, "end": written.end}
        recent_file.save(recent)
    return written


def _linked(fd: int) -> bool:
    return os.fstat(fd).st_nlink > 1


def _read_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    offset = 0
    while chunk := os.pread(fd, 1 << 20, offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def _read_recent(file: JsonFile) -> dict[str, dict[str, Any]]:
    """The appends of the last few minutes; an unreadable record only costs the retry check."""
    try:
        recent = file.load("no append counts as a retry of an earlier one")
    except OSError:
        return {}
    fields = ("at", "start", "end")
    return {
        key: entry
        for key, entry in recent.items()
        if isinstance(entry, dict) and all(isinstance(cast(dict[str, Any], entry).get(f), int | float) for f in fields)
    }


def numbered(lines: Sequence[str], first: int) -> str:
    """Lines prefixed with their 1-based numbers, as `memory_get` shows them."""
    width = len(str(first + len(lines)))
    return "\n".join(f"{first + i:>{width}}| {line}" for i, line in enumerate(lines))
