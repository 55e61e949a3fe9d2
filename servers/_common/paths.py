"""Resolve user-given paths inside a set of roots, refusing anything that leads out."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from contextlib import suppress
from pathlib import Path

from .arguments import quote
from .server import describe_crash


class PathOutsideRoots(ValueError):
    """The path is absolute outside the roots, climbs out with `..`, or is a symlink that leads out."""


class PathUnresolvable(PathOutsideRoots):
    """The path cannot be followed at all: a name too long, a loop of symlinks, a NUL byte."""


def resolve_inside(path: str, roots: Sequence[Path]) -> Path:
    """Return the real path of `path` (relative to the first root) if it lies inside one of `roots`.

    Messages quote at most ~200 characters of `path`.
    """
    if not roots:
        raise PathOutsideRoots("no roots are configured")
    if "\x00" in path:
        raise PathUnresolvable(f"{quote(path)} contains a NUL byte")
    real_roots = [root.resolve() for root in roots]
    try:
        candidate = Path(path).expanduser()
        if not candidate.is_absolute():
            candidate = real_roots[0] / candidate
        resolved = candidate.resolve()
        with suppress(FileNotFoundError, NotADirectoryError):  # a missing path may still be written
            os.lstat(resolved)  # resolve() lets ENAMETOOLONG and the like through; they would fail later
    except RuntimeError as exc:  # Python < 3.13 raises it for a symlink loop
        raise PathUnresolvable(f"{quote(path)} goes round a loop of symbolic links") from exc
    except OSError as exc:
        raise PathUnresolvable(f"{quote(path)} cannot be used: {describe_crash(exc)}") from exc
    for root in real_roots:
        if resolved == root or resolved.is_relative_to(root):
            return resolved
    shown = ", ".join(str(root) for root in real_roots)
    raise PathOutsideRoots(f"{quote(path)} is outside the allowed roots ({shown})")


def hermitcrab_home(environ: Mapping[str, str]) -> Path:
    """`$HERMITCRAB_HOME` (empty counts as unset), else ~/.hermitcrab: where a server run alone keeps its files."""
    return Path(environ.get("HERMITCRAB_HOME") or Path.home() / ".hermitcrab").expanduser()


def default_paths(server: str, environ: Mapping[str, str]) -> tuple[Path, Path]:
    """(workspace, this server's state dir) under the hermitcrab home."""
    home = hermitcrab_home(environ)
    return home / "workspace", home / "state" / server
