"""The memory files of the owner's workspace as the Memory page lists, shows and saves them.

The files the memory server indexes are MEMORY.md, USER.md and the Markdown under memory/ (daily logs, topics,
memory/others/); the page reads them from disk, the owner's own workspace, and the server's file watcher re-indexes
what it saves. A path from the browser is refused unless it names such a file whose real path (symlinks followed)
is one too: nothing outside the workspace, nothing but `.md`, nothing hidden, no file with other hard links (which
may be a file outside under another name; the server does not read those either). Saving compares the file with
the one the owner opened, so a note the agent appended meanwhile is never overwritten unseen.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from hermitcrab.util.files import atomic_write_text

EVERGREEN = ("MEMORY.md", "USER.md")
FOLDER = "memory"
MAX_SHOWN_BYTES = 2_000_000  # what the memory server reads at most
MAX_EDIT_BYTES = 300_000  # the page's textarea takes as many characters; access.MAX_FORM_BYTES is set above that
MAX_LISTED = 200
MAX_PATH_CHARS = 1000
WHAT_IS_MEMORY = "MEMORY.md, USER.md or a .md file under memory/"


class Refused(ValueError):
    """The path or file cannot be shown or saved; the message is a sentence for the page."""


class Changed(Exception):
    """The file is no longer the one the owner opened; `current` is what it holds now."""

    def __init__(self, current: MemoryFile) -> None:
        super().__init__("the file changed since it was opened")
        self.current = current


@dataclass(frozen=True)
class MemoryFile:
    rel: str
    text: str
    lossy: bool
    """Bytes that are not UTF-8 are shown as U+FFFD: such a file is shown, never saved back."""
    size: int

    @property
    def digest(self) -> str:
        return digest(self.text)

    @property
    def editable(self) -> bool:
        return not self.lossy and self.size <= MAX_EDIT_BYTES


@dataclass(frozen=True)
class Listed:
    rel: str
    name: str
    size: int
    mtime: float


@dataclass
class Folder:
    """A folder of the tree: its files (at most `MAX_LISTED`, the last by name first: the newest daily logs) and
    its folders."""

    rel: str
    files: list[Listed] = field(default_factory=list[Listed])
    total: int = 0
    folders: list[Folder] = field(default_factory=list["Folder"])


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


def is_memory_path(rel: str) -> bool:
    """Whether `rel` (workspace-relative) names a memory file, without looking at the disk."""
    parts = PurePosixPath(rel).parts
    if not parts or rel.startswith("/") or any(part in ("..", ".") or part.startswith(".") for part in parts):
        return False
    return rel.endswith(".md") and (rel in EVERGREEN or (parts[0] == FOLDER and len(parts) > 1))


def resolve(workspace: Path, rel: str) -> Path:
    """The real path of the memory file `rel` names; Refused, saying why, for anything else."""
    if not rel or len(rel) > MAX_PATH_CHARS or "\x00" in rel or "\\" in rel:
        raise Refused("That is not a usable path.")
    if not rel.endswith(".md"):
        raise Refused(f"Only Markdown memory files are shown here: {WHAT_IS_MEMORY}.")
    if not is_memory_path(rel):
        raise Refused(f"That path is outside the workspace's memory: use {WHAT_IS_MEMORY}.")
    root = workspace.resolve()
    try:
        real = (root / rel).resolve()
    except (OSError, RuntimeError):  # RuntimeError: a loop of symlinks on Python 3.11
        raise Refused("That path goes round a loop of symbolic links.") from None
    if not real.is_relative_to(root) or not is_memory_path(real.relative_to(root).as_posix()):
        raise Refused(f"{rel} is a symbolic link to a file outside the workspace's memory: it is not shown here.")
    return real


def read(workspace: Path, rel: str) -> MemoryFile:
    """The memory file `rel`; Refused when it is missing or not a file the memory server would read."""
    real = resolve(workspace, rel)
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        raise Refused(f"There is no {rel} (any more?).") from None
    except OSError as exc:
        raise Refused(f"{rel} cannot be read: {exc.strerror or exc}.") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise Refused(f"{rel} is not a regular file.")
        if info.st_nlink > 1:
            raise Refused(f"{rel} has other hard links, so it may be a file outside memory: it is not shown here.")
        data = handle.read(MAX_SHOWN_BYTES + 1)
    if len(data) > MAX_SHOWN_BYTES:
        raise Refused(f"{rel} is larger than {MAX_SHOWN_BYTES // 1_000_000} MB: open it in an editor.")
    try:
        return MemoryFile(rel, data.decode("utf-8"), False, len(data))
    except UnicodeDecodeError:
        return MemoryFile(rel, data.decode("utf-8", errors="replace"), True, len(data))


def save(workspace: Path, rel: str, text: str, opened: str) -> None:
    """Replace `rel` with `text` atomically, if it is still the file whose digest was `opened`; else Changed.

    A browser sends a textarea's newlines as CRLF: they are saved as the file had them (LF unless it had CRLF)."""
    current = read(workspace, rel)
    if current.digest != opened:
        raise Changed(current)
    if not current.editable:
        raise Refused(f"{rel} cannot be saved from here: {why_not_editable(current)}")
    if "\r\n" not in current.text:
        text = text.replace("\r\n", "\n")
    if len(text.encode()) > MAX_EDIT_BYTES:
        raise Refused(f"The new text is larger than {MAX_EDIT_BYTES // 1000} KB: nothing was saved.")
    atomic_write_text(resolve(workspace, rel), text)


def why_not_editable(file: MemoryFile) -> str:
    if file.lossy:
        return "it holds bytes that are not UTF-8 text, which saving would lose."
    return f"it is larger than {MAX_EDIT_BYTES // 1000} KB; edit it in a text editor."


def tree(workspace: Path) -> tuple[list[Listed], Folder]:
    """MEMORY.md and USER.md (those there are), and the tree of memory/."""
    evergreen = [entry for name in EVERGREEN if (entry := _listed(workspace / name, name)) is not None]
    top = Folder(FOLDER)
    _fill(workspace / FOLDER, top)
    return evergreen, top


def _listed(path: Path, rel: str) -> Listed | None:
    try:
        info = path.lstat()
    except OSError:
        return None
    return Listed(rel, path.name, info.st_size, info.st_mtime) if stat.S_ISREG(info.st_mode) else None


def _fill(path: Path, folder: Folder) -> None:
    """The regular `.md` files and the folders under `path`, hidden ones and symlinks left out as the index does."""
    try:
        with os.scandir(path) as listing:
            entries = sorted(listing, key=lambda entry: entry.name, reverse=True)
    except OSError:
        return
    for entry in entries:
        if entry.name.startswith(".") or entry.is_symlink():
            continue
        rel = f"{folder.rel}/{entry.name}"
        if entry.is_dir(follow_symlinks=False):
            inner = Folder(rel)
            _fill(Path(entry.path), inner)
            if inner.total or inner.folders:
                folder.folders.append(inner)
        elif entry.name.endswith(".md") and entry.is_file(follow_symlinks=False):
            folder.total += 1
            if len(folder.files) < MAX_LISTED:
                info = entry.stat(follow_symlinks=False)
                folder.files.append(Listed(rel, entry.name, info.st_size, info.st_mtime))
    folder.folders.reverse()
