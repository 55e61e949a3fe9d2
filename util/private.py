"""Keep what the agent stores to its owner: files 0600 in folders 0700.

The workspace, the state and the logs hold conversations, memories, tokens and the people the owner let in. Rather
than each writer choosing a mode, the host and every server narrow their umask at start, so whatever they and the
processes they start create is private; `make_private` fixes what an earlier version left open.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

PRIVATE_UMASK = 0o077
OPEN_TO_OTHERS = stat.S_IRWXG | stat.S_IRWXO

logger = logging.getLogger(__name__)


def keep_private(*paths: Path) -> None:
    """From now on files this process creates are 0600 and folders 0700; `paths` are made so now (`make_private`)."""
    os.umask(PRIVATE_UMASK)
    for path in paths:
        make_private(path)


def make_private(path: Path, *, recursive: bool = True, level: int = logging.WARNING) -> list[Path]:
    """Take group and other access away from `path` and, for a folder, everything in it; return what changed.

    A note goes to the log (at `level`) for each path that needed it. Symlinks are neither changed nor followed, a
    file with another hard link is left alone (its mode is that of a file elsewhere too), as is one that cannot be
    changed."""
    changed = [entry for entry in _entries(path, recursive) if _narrow(entry)]
    if changed:
        logger.log(
            level,
            "made %d files and folders in %s private to the owner (they were open to others), e.g. %s",
            len(changed),
            path,
            changed[0],
        )
    return changed


def is_open_to_others(path: Path) -> bool:
    """Whether a user other than the owner may read, write or enter `path`."""
    return bool(path.stat().st_mode & OPEN_TO_OTHERS)


def _entries(path: Path, recursive: bool) -> list[Path]:
    if not path.exists() or path.is_symlink():
        return []
    if not recursive or not path.is_dir():
        return [path]
    found = [path]
    for folder, folders, files in os.walk(path):
        found.extend(Path(folder, name) for name in [*folders, *files])
    return found


def _narrow(path: Path) -> bool:
    try:
        status = path.lstat()
        if stat.S_ISLNK(status.st_mode) or not status.st_mode & OPEN_TO_OTHERS:
            return False
        if stat.S_ISREG(status.st_mode) and status.st_nlink > 1:
            return False
        path.chmod(stat.S_IMODE(status.st_mode) & ~OPEN_TO_OTHERS)
    except OSError:
        return False
    return True
