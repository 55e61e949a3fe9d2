"""File access below a root that no symlink swapped in after the path check can redirect.

`Files.resolve` checks a path once, but a command running in the background (`git checkout` can create symlinks)
could replace a directory on it with a link to `/` before the file tool opens it. So the tools open the checked
path again one component at a time from the root's descriptor with `O_NOFOLLOW`, and read and replace files
through that directory descriptor: a link appearing anywhere on the way is an error, never followed.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Generator
from pathlib import Path

from hermitcrab.util.files import atomic_write_bytes

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class PathChanged(OSError):
    """A component of a checked path is no longer what it was (a symlink, a FIFO, a missing directory)."""


class FileTooLarge(ValueError):
    """The file has more bytes than the caller is willing to load."""

    def __init__(self, name: str, size: int) -> None:
        super().__init__(f"{name!r} has {size} bytes")
        self.size = size


@contextlib.contextmanager
def directory(root: Path, path: Path, create: bool = False) -> Generator[int]:
    """A descriptor for `path` (already resolved, inside `root`), reached without following symlinks."""
    fd = os.open(root, _DIR_FLAGS)
    try:
        for part in path.relative_to(root).parts:
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o777, dir_fd=fd)
            try:
                inner = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except (NotADirectoryError, FileNotFoundError) as exc:
                raise PathChanged(f"{part!r} is not a directory (any more)") from exc
            except OSError as exc:  # ELOOP: a symlink where the check saw a directory
                raise PathChanged(f"{part!r} changed while it was being used: {exc.strerror}") from exc
            os.close(fd)
            fd = inner
        yield fd
    finally:
        os.close(fd)


def read_regular(dir_fd: int, name: str, max_bytes: int) -> bytes:
    """The bytes of the regular file `name` in `dir_fd`; PathChanged for a link, FIFO or device, FileTooLarge
    when it has more than `max_bytes`."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError as exc:
        raise PathChanged(f"{name!r} cannot be opened: {exc.strerror}") from exc
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise PathChanged(f"{name!r} is not a regular file")
        if info.st_size > max_bytes:
            raise FileTooLarge(name, info.st_size)
        return handle.read(max_bytes + 1)


def replace(dir_fd: int, name: str, data: bytes, mode: int | None = None) -> None:
    """Atomically replace `name` in `dir_fd` with the one atomic write, with permission bits `mode` (by default an
    existing file's, else what the umask leaves, as for a file any program creates)."""
    if mode is None:
        with contextlib.suppress(FileNotFoundError):
            mode = stat.S_IMODE(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    atomic_write_bytes(Path(name), data, mode=mode, dir_fd=dir_fd)
