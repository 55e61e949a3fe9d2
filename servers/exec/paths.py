"""Where a path on a command line really leads: through /proc or /dev/fd, into hidden credentials, or past them.

The policy resolves paths in the server's process, but bash resolves them in its own: `/proc/self/cwd` is the
server's directory to one and the command's to the other, `/dev/fd/N` names different files. So a path that
passes through either, textually or through a symlink, cannot be checked and is a miss.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

# Written to or read from by ordinary commands; each is what it says in every process.
SAFE_DEVICES = frozenset(
    {"/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/fd/0", "/dev/fd/1", "/dev/fd/2"}
)
_PER_PROCESS = ("/proc", "/dev/fd")
_MAX_LINKS = 40


def through_proc(path: str) -> bool:
    """Whether the absolute `path` visits /proc or /dev/fd on the way, following symlinks as the kernel does."""
    if path in SAFE_DEVICES:
        return False
    todo = path.split("/")
    current, links = "/", 0
    while todo:
        part = todo.pop(0)
        if part in ("", "."):
            continue
        current = os.path.dirname(current) if part == ".." else os.path.join(current, part)
        if any(current == p or current.startswith(p + "/") for p in _PER_PROCESS):
            return True
        try:
            target = os.readlink(current)
        except OSError:
            continue
        links += 1
        if links > _MAX_LINKS:
            return True  # a loop bash would refuse; count it as unknown
        current = "/" if target.startswith("/") else os.path.dirname(current)
        todo = target.split("/") + todo
    return False


class Secrets:
    """Credentials hidden from commands (and the file tools); a root inside one of them shows what it holds."""

    def __init__(self, hidden: Sequence[Path], roots: Sequence[Path]) -> None:
        self.hidden = [Path(os.path.realpath(p)) for p in hidden]
        self.roots = [Path(os.path.realpath(r)) for r in roots]

    def covers(self, path: str) -> bool:
        """Whether `path` (absolute; symlinks followed) is inside a hidden path that no deeper root reopens."""
        real = Path(os.path.realpath(path))
        for secret in self.hidden:
            if real == secret or real.is_relative_to(secret):
                reopened = any(r.is_relative_to(secret) and r != secret and _under(real, r) for r in self.roots)
                if not reopened:
                    return True
        return False

    def holds(self, path: str) -> bool:
        """Whether reading `path` recursively could reach a hidden path (it is one of their ancestors)."""
        real = Path(os.path.realpath(path))
        return any(secret.is_relative_to(real) for secret in self.hidden) or self.covers(path)


def _under(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


def git_dir_problem(path: Path) -> str | None:
    """Why writing `path` could complete a git directory whose config the model wrote (a bare repository that
    `git --git-dir`, a push or a fetch would read), or None."""
    if path.name not in ("HEAD", "config", "commondir", "gitdir"):
        return None
    try:
        present = set(os.listdir(path.parent))
    except OSError:
        return None
    others = present & {"HEAD", "config", "commondir", "objects", "refs"} - {path.name}
    if others:
        shown = ", ".join(sorted(others))
        return f"{str(path)!r} would complete a git directory (it already has {shown}) whose config can run programs"
    return None
