"""The bubblewrap sandbox, the security boundary: only the roots writable, and not what protected.py names there;
private /tmp, /run (no host unix sockets) and HOME (empty but for toolchains), secrets hidden, no network unless
asked for, an unprivileged uid in user and PID namespaces of its own.

`auto` uses bwrap when it is installed and works here (a probe runs once); `bwrap` insists on it; `none` runs
commands directly, and then the fail-closed policy is the only line of defence. Either way the resource limits
in runner.py apply.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from . import bridge
from .protected import Protection, make_blanks

SandboxMode = Literal["auto", "bwrap", "none"]


class SandboxUnavailable(RuntimeError):
    """`--sandbox bwrap` was asked for but bubblewrap is missing or cannot create namespaces here."""


# Credentials under $HOME that commands never need to see; hidden inside the sandbox when they exist, and refused
# by the file tools and (without the sandbox) by the policy. `.config` holds gh, gcloud, and most CLIs' tokens.
SECRETS = (
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config",
    ".kube",
    ".docker",
    ".netrc",
    ".git-credentials",
    ".pgpass",
    ".npmrc",
    ".pypirc",
    ".yarnrc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".gem/credentials",
    ".m2/settings.xml",
    ".gradle/gradle.properties",
    ".terraform.d",
    ".vault-token",
    ".password-store",
    ".local/share/keyrings",
    ".bash_history",
)
# Toolchains people install under $HOME, bound back read-only into the private one (with every PATH entry there
# and the server's own Python) so `cargo`, `node` or a venv's interpreter still run; credentials kept in them
# (`.cargo/credentials`) stay hidden by the list above.
TOOLCHAINS = (
    ".cargo",
    ".rustup",
    ".pyenv",
    ".rbenv",
    ".nvm",
    ".volta",
    ".bun",
    ".deno",
    ".asdf",
    ".sdkman",
    "go",
    ".local/bin",
    ".local/share/uv",
    ".local/share/pnpm",
)
UNPRIVILEGED_UID = 1000  # what a server running as root runs commands as, inside the sandbox's user namespace


# /proc/sys read-only too: a fresh /proc still writes kernel settings (and, as root, the host's hostname).
_BASE = ("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys")
# Own user (an unprivileged uid), PID, UTS and IPC namespaces, no capabilities, gone with the server.
_ISOLATION = (
    "--unshare-user",
    "--unshare-pid",
    "--unshare-uts",
    "--unshare-ipc",
    "--unshare-cgroup-try",
    "--cap-drop",
    "ALL",
    "--die-with-parent",
)
_RUN = (Path("/run"), Path("/var/run"))  # host unix sockets (docker, dbus, systemd) live here
GIT_IDENTITY = "/tmp/.hermitcrab-gitconfig"  # where git's global config (git_identity.py) appears inside
# Where a call's proxy socket appears inside the sandbox, and the port the bridge serves it on there.
PROXY_SOCKET = "/tmp/.hermitcrab-proxy.sock"
PROXY_PORT = 3128
_LOCAL = "localhost,127.0.0.1,::1"  # a server the command starts in its own sandbox is reached directly


def _identity() -> tuple[str, ...]:
    uid = os.getuid() or UNPRIVILEGED_UID
    gid = os.getgid() or UNPRIVILEGED_UID
    return ("--uid", str(uid), "--gid", str(gid))


@dataclass(frozen=True)
class Sandbox:
    bwrap: str
    network: bool = False
    hidden: tuple[Path, ...] = ()  # replaced by an empty directory (or /dev/null for a file)
    home: Path | None = None  # $HOME: a private empty folder inside, unless a root is (in) it
    toolchains: tuple[Path, ...] = ()  # folders under `home` shown read-only in the private one
    blanks: Path | None = None  # what stands in for a protected path that is missing (protected.make_blanks)
    git_identity: Path | None = None  # the owner's name and email for git, bound read-only (git_identity.py)

    def bridges(self, network: bool | None, proxy: Path | None) -> bool:
        """Whether a command runs behind the bridge (bridge.py): it has a proxy socket and no network of its own."""
        return proxy is not None and not (self.network if network is None else network)

    def wrap(
        self,
        argv: Sequence[str],
        *,
        roots: Sequence[Path],
        protected: Sequence[Protection],
        workdir: Path,
        writable: Sequence[Path] = (),
        network: bool | None = None,
        proxy: Path | None = None,
    ) -> list[str]:
        """`argv` in bwrap: `roots` writable but for `protected`, HOME private and empty, `hidden` paths emptied.

        `writable` (existing paths outside the roots) and `network` (None: the sandbox's setting) widen the
        sandbox for one call whose leaving it was approved. `proxy` (a unix socket, see network.py) is the
        command's one way out when it has no network: bound in, served on 127.0.0.1 by the bridge, named by
        HTTP_PROXY and the like.
        """
        online = self.network if network is None else network
        mounts: list[tuple[Path, list[str]]] = [(Path("/tmp"), ["--tmpfs", "/tmp"])]
        mounts += [(run, ["--tmpfs", str(run)]) for run in _RUN if run.is_dir() and not run.is_symlink()]
        resolv = Path(os.path.realpath("/etc/resolv.conf"))
        if online and any(resolv.is_relative_to(run) for run in _RUN) and resolv.exists():
            mounts.append((resolv, ["--ro-bind", str(resolv), str(resolv)]))  # DNS through a /run stub file
        mounts += [(root, ["--bind", str(root), str(root)]) for root in roots]
        mounts += [(path, ["--bind", str(path), str(path)]) for path in writable if path.exists()]
        proxied = self.bridges(network, proxy)
        if proxied:
            mounts.append((Path(PROXY_SOCKET), ["--bind", str(proxy), PROXY_SOCKET]))
            mounts += [(prefix, ["--ro-bind", str(prefix), str(prefix)]) for prefix in _private_python()]
        if self.git_identity is not None:
            mounts.append((Path(GIT_IDENTITY), ["--ro-bind", str(self.git_identity), GIT_IDENTITY]))
        mounts += self._private(roots)
        mounts += self._protected(protected, roots, writable)
        args = [self.bwrap, *_BASE]
        for _, mount in sorted(mounts, key=lambda item: len(item[0].parts)):  # parents before what is inside them
            args += mount
        args += [*_ISOLATION, *_identity()]
        if not online:
            args.append("--unshare-net")
        if proxied:
            args += _proxy_environment()
            argv = [_BRIDGE_PYTHON, "-I", "-S", "-c", _bridge_source(), PROXY_SOCKET, str(PROXY_PORT), "--", *argv]
        args += ["--chdir", str(workdir), "--", *argv]
        return args

    def _private(self, roots: Sequence[Path]) -> list[tuple[Path, list[str]]]:
        """HOME as an empty tmpfs but for the toolchains, and the hidden paths still in sight there."""
        home = self.home
        if home is None or home == Path("/") or not home.is_dir() or any(_within(home, root) for root in roots):
            home = None
        mounts = [(home, ["--tmpfs", str(home)])] if home else []
        shown = [*roots, *self.toolchains] if home else []
        mounts += [(path, ["--ro-bind", str(path), str(path)]) for path in shown[len(roots) :] if path.is_dir()]
        for path in self.hidden:
            if home and _within(path, home) and not any(_within(path, s) for s in shown):
                continue  # nothing in the private HOME but what is bound back into it
            if path.is_dir() and path not in roots:
                mounts.append((path, ["--tmpfs", str(path)]))
            elif path.exists():
                mounts.append((path, ["--ro-bind", "/dev/null", str(path)]))
        return mounts

    def _protected(
        self, protected: Sequence[Protection], roots: Sequence[Path], writable: Sequence[Path]
    ) -> list[tuple[Path, list[str]]]:
        """Pins bound onto themselves, the rest read-only: itself when it exists, else a stand-in from `blanks`."""
        mounts: list[tuple[Path, list[str]]] = []
        for guard in self.guarded(protected, roots, writable):
            path, kind = guard.path, guard.kind
            if os.path.lexists(path):
                mounts.append((path, ["--bind" if kind == "pin" else "--ro-bind", str(path), str(path)]))
            elif self.blanks is not None:
                mounts.append((path, ["--ro-bind", str(self.blanks / kind), str(path)]))
        return mounts

    def guarded(
        self, protected: Sequence[Protection], roots: Sequence[Path], writable: Sequence[Path]
    ) -> list[Protection]:
        """The protections one call binds: inside the roots (outside them all is read-only already), not where
        the call was approved to write, and for a missing one, a stand-in to bind (so the runner claims those)."""
        return [
            guard
            for guard in protected
            if any(guard.path.is_relative_to(root) for root in roots)
            and not any(_within(guard.path, path) for path in writable)
            and (
                os.path.lexists(guard.path)
                or (guard.kind != "pin" and self.blanks is not None and guard.path.parent.is_dir())
            )
        ]


def _within(path: Path, folder: Path) -> bool:
    return path == folder or path.is_relative_to(folder)


def _proxy_environment() -> list[str]:
    url = f"http://127.0.0.1:{PROXY_PORT}"
    names = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")  # curl reads only the lower-case http_proxy
    values = [(name, url) for name in names] + [("NO_PROXY", _LOCAL)]
    return [arg for name, value in values for key in (name, name.lower()) for arg in ("--setenv", key, value)]


# The interpreter itself, not a venv's link to it: a checkout or venv under /tmp is out of sight in the sandbox.
_BRIDGE_PYTHON = os.path.realpath(sys.executable)


def _private_python() -> list[Path]:
    """The server's Python installation where the sandbox makes a private tmpfs (/tmp, /run): bound back read-only
    so the bridge can start."""
    prefixes = dict.fromkeys(Path(os.path.realpath(p)) for p in (sys.prefix, sys.base_prefix))
    private = (Path("/tmp"), *_RUN)
    return [prefix for prefix in prefixes if any(prefix.is_relative_to(p) for p in private)]


@functools.cache
def _bridge_source() -> str:
    """bridge.py, run with `-c`: nothing in the sandbox needs to see (or can rewrite) the file itself."""
    return Path(bridge.__file__).read_text(encoding="utf-8")


def toolchains(home: Path, search_path: str) -> tuple[Path, ...]:
    """The folders under `home` that commands need to see: TOOLCHAINS, PATH entries and the server's Python."""
    python = Path(os.path.realpath(sys.base_prefix))
    candidates = [home / name for name in TOOLCHAINS]
    candidates += [Path(os.path.realpath(entry)) for entry in search_path.split(os.pathsep) if os.path.isabs(entry)]
    candidates.append(python)
    found = [path for path in dict.fromkeys(candidates) if path.is_relative_to(home) and path != home and path.is_dir()]
    return tuple(path for path in found if not any(path != other and path.is_relative_to(other) for other in found))


def secret_paths(home: Path, hermitcrab_home: Path) -> tuple[Path, ...]:
    """What a sandboxed command should not see: hermitcrab's home (config, state) and credentials under $HOME."""
    return (hermitcrab_home, *(home / name for name in SECRETS))


def detect(
    mode: SandboxMode,
    *,
    network: bool = False,
    hidden: Sequence[Path] = (),
    home: Path | None = None,
    search_path: str = "",
    blanks: Path | None = None,
) -> tuple[Sandbox | None, str | None]:
    """(the sandbox to use for `mode` or None to run unsandboxed, why bwrap is not used under `auto`).

    The probe runs here, once; raises SandboxUnavailable when `mode` is `bwrap` and the probe fails. `blanks`
    (a folder of the server's state) is filled with the stand-ins for missing protected paths.
    """
    if mode == "none":
        return None, None
    problem = probe()
    if problem is None:
        stand_ins = make_blanks(blanks) if blanks is not None else None
        shown = toolchains(home, search_path) if home is not None else ()
        return Sandbox(shutil.which("bwrap") or "bwrap", network, tuple(hidden), home, shown, stand_ins), None
    if mode == "bwrap":
        raise SandboxUnavailable(problem)
    return None, problem


def probe() -> str | None:
    """None when bubblewrap works here, else why not (reported by the `exec://status` resource)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bubblewrap is not installed (apt-get install bubblewrap)"
    argv = [bwrap, *_BASE, *_ISOLATION, *_identity(), "--unshare-net", "true"]
    try:
        result = subprocess.run(argv, capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap failed to start: {exc}"
    if result.returncode != 0:
        detail = result.stderr.decode("utf-8", "replace").strip() or f"exit code {result.returncode}"
        return f"bubblewrap cannot create a sandbox here: {detail}"
    return None
