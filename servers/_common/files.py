"""Opening only regular files: a server must never read or write a FIFO, device, socket or a link swapped in.

Crash-safe writes are `hermitcrab.util.files`, shared with the host.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

_KINDS = {
    stat.S_IFIFO: "a named pipe (FIFO)",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFDIR: "a directory",
    stat.S_IFLNK: "a symbolic link",
}


class NotRegularFile(OSError):
    """The path is a FIFO, device, socket, directory or symlink, which a server must neither read nor write."""


def open_regular(path: Path, flags: int, mode: int = 0o644) -> int:
    """A descriptor for the regular file `path`, opened with `flags`; NotRegularFile for anything else.

    O_NONBLOCK keeps a FIFO from blocking the open (forever, if nobody writes to it), and O_NOFOLLOW keeps a
    symlink swapped in after a path check from being followed.
    """
    fd = os.open(path, flags | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    kind = stat.S_IFMT(os.fstat(fd).st_mode)
    if kind != stat.S_IFREG:
        os.close(fd)
        raise NotRegularFile(f"not a regular file but {_KINDS.get(kind, 'a special file')}")
    return fd


def describe_kind(path: Path) -> str | None:
    """What `path` is when it is not a regular file (e.g. "a named pipe (FIFO)"), else None; never follows links."""
    try:
        kind = stat.S_IFMT(path.lstat().st_mode)
    except OSError:
        return None
    return None if kind == stat.S_IFREG else _KINDS.get(kind, "a special file")
