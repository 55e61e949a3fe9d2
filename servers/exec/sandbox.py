"""Optional bubblewrap sandbox: the roots writable, the rest of the filesystem read-only, optionally no network.

`auto` uses bwrap when it is installed and works here (a probe runs once); `bwrap` insists on it; `none` runs
commands directly. Either way the resource limits in runner.py apply.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

SandboxMode = Literal["auto", "bwrap", "none"]


class SandboxUnavailable(RuntimeError):
    """`--sandbox bwrap` was asked for but bubblewrap is missing or cannot create namespaces here."""


@dataclass(frozen=True)
class Sandbox:
    bwrap: str
    network: bool = True

    def wrap(
        self, argv: Sequence[str], *, roots: Sequence[Path], protected: Sequence[Path], workdir: Path
    ) -> list[str]:
        """`argv` run inside bwrap with `roots` bound writable and `protected` paths inside them read-only."""
        args = [self.bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        for root in roots:
            args += ["--bind", str(root), str(root)]
        for path in protected:
            if path.exists() and any(path.is_relative_to(root) for root in roots):
                args += ["--ro-bind", str(path), str(path)]
        args += ["--unshare-pid", "--die-with-parent"]
        if not self.network:
            args.append("--unshare-net")
        args += ["--chdir", str(workdir), "--", *argv]
        return args


def detect(mode: SandboxMode, *, network: bool = True) -> Sandbox | None:
    """The sandbox to use for `mode`, or None to run unsandboxed; raises SandboxUnavailable for a failed `bwrap`."""
    if mode == "none":
        return None
    problem = probe()
    if problem is None:
        return Sandbox(shutil.which("bwrap") or "bwrap", network)
    if mode == "bwrap":
        raise SandboxUnavailable(problem)
    return None


def probe() -> str | None:
    """None when bubblewrap works here, else why not (shown by `hermitcrab doctor` and the `exec_status` tool)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bubblewrap is not installed (apt-get install bubblewrap)"
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid", "--die-with-parent",
            "true"]
    try:
        result = subprocess.run(argv, capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap failed to start: {exc}"
    if result.returncode != 0:
        detail = result.stderr.decode("utf-8", "replace").strip() or f"exit code {result.returncode}"
        return f"bubblewrap cannot create a sandbox here: {detail}"
    return None
