"""File tools confined to the roots: read with line numbers, atomic write, exact-match edit, tree listing.

Every path goes through `resolve_inside`, which follows symlinks before comparing, so `..`, absolute paths outside
and links that lead out are all refused; the server's own state directory is refused even when inside a root.
Files are then opened through fsio, so a symlink swapped in after that check is not followed either.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Generator, Sequence
from pathlib import Path

from mcp.server.mcpserver.exceptions import ToolError

from hermitcrab.servers._common.arguments import quote
from hermitcrab.servers._common.paths import PathOutsideRoots, PathUnresolvable, resolve_inside

from . import fsio
from .output import cut_line
from .paths import Secrets, git_dir_problem
from .protected import is_persona_file
from .protected import write_problem as protected_problem

MAX_ENTRIES = 1_000
MAX_BYTES = 32 * 1024 * 1024  # read_file/edit_file load the whole file; bigger ones are refused, not buffered
GIT_DIR = ".git"  # writes inside it (config, hooks, a `.git` file naming another dir) could make git run code
_SNIFF = 8_192


class PathRefused(ValueError):
    """A path outside the roots, in the server's state, or (for writing) among git's own files."""


class Files:
    """The roots the file tools may touch, and the paths inside them they must not."""

    def __init__(self, roots: Sequence[Path], protected: Sequence[Path] = (), hidden: Sequence[Path] = ()) -> None:
        self.roots = list(roots)
        self.real_roots = [root.resolve() for root in roots]
        self.protected = [p.resolve() for p in protected]
        self.secrets = Secrets(hidden, self.real_roots)  # the sandbox's hidden list: credentials, hermitcrab home

    def resolve(self, path: str, *, write: bool = False, owner_approved: bool = False) -> Path:
        """The real path of `path`, or a ToolError when the file tools may not read (or `write`) it; a persona
        file only for a write the owner approved."""
        try:
            return self._locate(path, write, owner_approved)
        except PathRefused as exc:
            raise ToolError(f"Refused: {exc}.") from exc

    def write_problem(self, path: str) -> str | None:
        """Why `path` may not be written, by a file tool or a command (see policy.py), or None when it may."""
        try:
            self._locate(path, write=True)
        except PathRefused as exc:
            return str(exc)
        return None

    def persona_file(self, path: str) -> Path | None:
        """The real path of `path` when it is a persona file the owner must approve writing, else None."""
        try:
            real = resolve_inside(path, self.roots)
        except (PathUnresolvable, PathOutsideRoots):
            return None
        return real if is_persona_file(real, self.real_roots) else None

    def _locate(self, path: str, write: bool, owner_approved: bool = False) -> Path:
        try:
            real = resolve_inside(path, self.roots)
        except PathUnresolvable as exc:
            raise PathRefused(str(exc)) from exc
        except PathOutsideRoots as exc:
            raise PathRefused(f"{exc}; use a path inside the workspace") from exc
        if any(real == p or real.is_relative_to(p) for p in self.protected):
            raise PathRefused(f"{quote(path)} is the exec server's own state, which the assistant may not touch")
        if self.secrets.covers(str(real)):
            raise PathRefused(f"{quote(path)} is among the credentials hidden from the assistant")
        if write and (GIT_DIR in real.parts or GIT_DIR in Path(path).parts):
            raise PathRefused(
                f"{quote(path)} is inside git's own files, whose config and hooks can make git run programs; "
                "change them with git commands instead"
            )
        problem = (
            (protected_problem(real, self.real_roots, owner_approved=owner_approved) or git_dir_problem(real))
            if write
            else None
        )
        if problem is not None:
            raise PathRefused(problem)
        return real

    def read(self, path: str, offset: int, limit: int) -> str:
        target = self._existing_file(path)
        with self._opened(target.parent) as fd:
            data = self._load(fd, target.name, path)
        if _is_binary(data[:_SNIFF]):
            raise ToolError(
                f"{quote(path)} looks like a binary file ({len(data)} bytes); "
                "inspect it with exec (e.g. `file` or `xxd`)."
            )
        lines = data.decode("utf-8", errors="replace").splitlines()
        start = max(offset, 1)
        chosen = lines[start - 1 : start - 1 + limit]
        body = "\n".join(f"{n:>6}\t{cut_line(line)}" for n, line in enumerate(chosen, start=start))
        end = start + len(chosen) - 1
        if not lines:
            return f"{path} is empty."
        if start > len(lines):
            raise ToolError(f"{quote(path)} has {len(lines)} lines; offset {offset} is past the end.")
        if end < len(lines):
            body += f"\n[lines {start}-{end} of {len(lines)}; pass offset={end + 1} to read on]"
        return body

    def write(self, path: str, content: str, overwrite: bool = False, owner_approved: bool = False) -> str:
        target = self.resolve(path, write=True, owner_approved=owner_approved)
        if target.is_dir():
            raise ToolError(f"{quote(path)} is a directory; give a file path.")
        size = target.stat().st_size if target.is_file() else 0
        if not content and size and not overwrite:
            raise ToolError(
                f"{quote(path)} holds {size} bytes and content is empty, which would erase it; give the new content, "
                "or pass overwrite=true if it should really be emptied."
            )
        with self._opened(target.parent, create=True) as fd:
            fsio.replace(fd, target.name, content.encode("utf-8"))
        return f"Wrote {len(content.encode('utf-8'))} bytes to {target}."

    def footprint(self, path: str, owner_approved: bool = False) -> list[Path]:
        """What writing `path` may change, for undo to look at: each folder below its root (write creates missing
        ones), then the file."""
        target = self.resolve(path, write=True, owner_approved=owner_approved)
        root = next(r for r in self.real_roots if target.is_relative_to(r))
        return [*reversed(target.parents[: len(target.relative_to(root).parts) - 1]), target]

    def edit(self, path: str, old_text: str, new_text: str, replace_all: bool, owner_approved: bool = False) -> str:
        target = self._existing_file(path, write=True, owner_approved=owner_approved)
        with self._opened(target.parent) as fd:
            text = self._load(fd, target.name, path).decode("utf-8", errors="surrogateescape")
            if not old_text:
                raise ToolError("old_text is empty; give the exact text to replace.")
            count = text.count(old_text)
            if count == 0:
                raise ToolError(
                    f"old_text was not found in {quote(path)}; read the file again and copy the text exactly."
                )
            if count > 1 and not replace_all:
                raise ToolError(
                    f"old_text occurs {count} times in {quote(path)}; "
                    "include more surrounding lines or pass replace_all=true."
                )
            updated = text.replace(old_text, new_text) if replace_all else text.replace(old_text, new_text, 1)
            fsio.replace(fd, target.name, updated.encode("utf-8", errors="surrogateescape"))
        return f"Replaced {count if replace_all else 1} occurrence(s) in {target}."

    def list(self, path: str, depth: int) -> str:
        target = self.resolve(path)
        if not target.is_dir():
            raise ToolError(f"{quote(path)} is not a directory.")
        lines: list[str] = [f"{target}/"]
        self._walk(target, depth, "  ", lines)
        if len(lines) > MAX_ENTRIES:
            lines = [*lines[:MAX_ENTRIES], f"[... listing cut at {MAX_ENTRIES} entries; list a subdirectory ...]"]
        return "\n".join(lines)

    def _walk(self, directory: Path, depth: int, indent: str, lines: list[str]) -> None:
        try:
            entries = sorted(os.scandir(directory), key=lambda e: (not e.is_dir(follow_symlinks=False), e.name))
        except OSError as exc:
            lines.append(f"{indent}[unreadable: {exc.strerror}]")
            return
        for entry in entries:
            if len(lines) > MAX_ENTRIES:
                return
            if entry.is_symlink():
                lines.append(f"{indent}{entry.name} -> {os.readlink(entry.path)}")
            elif entry.is_dir():
                lines.append(f"{indent}{entry.name}/")
                if depth > 1 and entry.name not in (".git", "node_modules", "__pycache__", ".venv"):
                    self._walk(Path(entry.path), depth - 1, indent + "  ", lines)
            else:
                lines.append(f"{indent}{entry.name}  ({_size(entry.stat(follow_symlinks=False).st_size)})")

    def _existing_file(self, path: str, write: bool = False, owner_approved: bool = False) -> Path:
        target = self.resolve(path, write=write, owner_approved=owner_approved)
        if not target.exists():
            raise ToolError(f"{quote(path)} does not exist; list_dir shows what is there.")
        if not target.is_file():
            raise ToolError(f"{quote(path)} is not a regular file.")
        return target

    @staticmethod
    def _load(dir_fd: int, name: str, path: str) -> bytes:
        try:
            return fsio.read_regular(dir_fd, name, MAX_BYTES)
        except fsio.FileTooLarge as exc:
            raise ToolError(
                f"{quote(path)} has {exc.size} bytes, more than {MAX_BYTES}; look at parts of it with exec."
            ) from exc

    @contextlib.contextmanager
    def _opened(self, directory: Path, create: bool = False) -> Generator[int]:
        """A descriptor for the checked `directory`, reached again without following any symlink."""
        root = next(r for r in self.real_roots if directory == r or directory.is_relative_to(r))
        try:
            with fsio.directory(root, directory, create) as fd:
                yield fd
        except fsio.PathChanged as exc:
            raise ToolError(f"Refused: {exc}; a path changed while the file tool used it.") from exc


def _is_binary(sample: bytes) -> bool:
    if b"\x00" in sample:
        return True
    try:
        sample.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start < len(sample) - 4  # a character cut at the sample's end is fine
    return False


def _size(size: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024:
            return f"{size} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024  # type: ignore[assignment]  # reporting only
    return f"{size:.1f} TB"
