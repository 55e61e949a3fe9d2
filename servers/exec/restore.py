"""Put paths back as a manifest recorded them: inside the roots, through descriptors, never through a symlink.

Every folder on the way is opened again from its root with `O_NOFOLLOW` (fsio), so a link a command swapped in
makes that path fail instead of leading out of the roots; files come back with the one atomic write.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from collections.abc import Callable, Generator, Mapping, Sequence
from functools import partial
from pathlib import Path

from . import fsio
from .blobs import Blobs
from .manifest import Entry, Manifest

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def restore(
    roots: Sequence[Path], targets: Mapping[str, Entry | None], current: Manifest, blobs: Blobs
) -> dict[str, str]:
    """Make each path of `targets` what its entry says (None: absent), `current` being what is there now; returns
    why each path that could not be restored was not."""
    problems: dict[str, str] = {}
    doomed = [p for p, want in targets.items() if p in current and _must_go(current[p], want)]
    for path in sorted(doomed, key=_depth, reverse=True):  # what is inside a folder goes before the folder
        _attempt(problems, path, partial(_remove, now=current[path]), roots)
    for path in sorted((p for p, want in targets.items() if want is not None), key=_depth):
        _attempt(problems, path, partial(_create, want=targets[path], blobs=blobs), roots)
    return problems


def _must_go(now: Entry, want: Entry | None) -> bool:
    """Whether what is at a path must be removed first: unwanted, or a folder where something else belongs (files
    and links are replaced by a rename instead)."""
    return want is None or (now.kind == "dir") != (want.kind == "dir")


def _remove(fd: int, name: str, now: Entry) -> None:
    if now.kind == "dir":
        os.rmdir(name, dir_fd=fd)
    else:
        os.unlink(name, dir_fd=fd)


def _create(fd: int, name: str, want: Entry | None, blobs: Blobs) -> None:
    assert want is not None
    if want.kind == "dir":
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, want.mode, dir_fd=fd)
        inner = os.open(name, _DIR_FLAGS, dir_fd=fd)
        try:
            os.fchmod(inner, want.mode)  # mkdir's mode passes through the umask
        finally:
            os.close(inner)
    elif want.kind == "link":
        assert want.target is not None
        temp = f".{name}.{secrets.token_hex(4)}.tmp"
        os.symlink(want.target, temp, dir_fd=fd)
        try:
            os.replace(temp, name, src_dir_fd=fd, dst_dir_fd=fd)
        except OSError:
            os.unlink(temp, dir_fd=fd)
            raise
    else:
        assert want.digest is not None  # the caller refuses entries that are not restorable
        fsio.replace(fd, name, blobs.read(want.digest), want.mode)
        os.utime(name, ns=(want.mtime_ns, want.mtime_ns), dir_fd=fd, follow_symlinks=False)


def _attempt(problems: dict[str, str], path: str, action: Callable[[int, str], None], roots: Sequence[Path]) -> None:
    parent = os.path.dirname(path)
    if parent in problems:
        problems[path] = "its folder could not be restored"
        return
    try:
        with _folder(roots, Path(parent)) as fd:
            action(fd, os.path.basename(path))
    except OSError as exc:
        problems[path] = exc.strerror or str(exc)


@contextlib.contextmanager
def _folder(roots: Sequence[Path], parent: Path) -> Generator[int]:
    root = next((r for r in roots if parent == r or parent.is_relative_to(r)), None)
    if root is None:
        raise NotADirectoryError(errno.ENOENT, "it is no longer inside a root of this server")
    with fsio.directory(root, parent) as fd:
        yield fd


def _depth(path: str) -> int:
    return path.count("/")
