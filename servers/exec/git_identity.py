"""The owner's git identity for commands: their name and email, and nothing else of their global config.

Commands never read the owner's ~/.gitconfig: in the sandbox HOME is private, and everywhere git's global config
is pinned (environment.EMPTY_GIT_CONFIG), because that file can name programs git runs. Without an identity,
though, `git commit` stops with "Author identity unknown". So the server copies `user.name` and `user.email`
once, at start, into a file of its own that git reads as the global config (a repository's own `user.*` still
wins, as it would over ~/.gitconfig). In the sandbox the file is bound read-only (sandbox.GIT_IDENTITY).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

from hermitcrab.util.files import atomic_write_text

KEYS = ("user.name", "user.email")


def read(environ: Mapping[str, str]) -> dict[str, str]:
    """The owner's `user.name` and `user.email` from their global git config, those that are set."""
    git = shutil.which("git", path=environ.get("PATH"))
    if git is None:
        return {}
    env = {"PATH": environ.get("PATH", ""), "HOME": environ.get("HOME", "/nonexistent"), "GIT_CONFIG_NOSYSTEM": "1"}
    found: dict[str, str] = {}
    for key in KEYS:
        try:
            done = subprocess.run(
                [git, "config", "--global", "--get", key], env=env, capture_output=True, text=True, timeout=5
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        value = done.stdout.strip().splitlines()[0] if done.returncode == 0 and done.stdout.strip() else ""
        if value:
            found[key] = value
    return found


def save(state: Path, identity: Mapping[str, str]) -> Path | None:
    """The file git reads as the global config, holding only `identity`; None (and no file) when it is empty."""
    path = state / "gitconfig"
    if not identity:
        path.unlink(missing_ok=True)
        return None
    lines = ["[user]"] + [f'\t{key.split(".", 1)[1]} = "{_quoted(value)}"' for key, value in identity.items()]
    state.mkdir(mode=0o700, parents=True, exist_ok=True)
    atomic_write_text(path, "\n".join(lines) + "\n")
    return path


def _quoted(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')
