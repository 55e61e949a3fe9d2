"""The child environment: only allow-listed variables pass, and overrides that hijack execution are refused.

API keys and tokens in the server's own environment never reach a command: the child starts from a short list of
harmless variables. Variables that change which program runs or inject code into one (PATH, LD_*, BASH_ENV, ...)
cannot be set by the model, neither through the `env` argument nor inside the command line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

PASSTHROUGH = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "TZ", "TMPDIR")
PASSTHROUGH_PREFIXES = ("LC_",)

PROTECTED = frozenset(
    {
        "PATH",
        "HOME",
        "BASH_ENV",
        "ENV",
        "IFS",
        "CDPATH",
        "SHELLOPTS",
        "BASHOPTS",
        "PS4",
        "PROMPT_COMMAND",
        "GLOBIGNORE",
        "EXECIGNORE",
        "PYTHONPATH",
        "PYTHONSTARTUP",
        "PYTHONHOME",
        "PYTHONINSPECT",
        "PYTHONUSERBASE",
        "NODE_OPTIONS",
        "NODE_PATH",
        "PERL5OPT",
        "PERL5LIB",
        "PERLLIB",
        "RUBYOPT",
        "RUBYLIB",
        "EDITOR",
        "VISUAL",
        "PAGER",
        "MANPAGER",
        "SSH_ASKPASS",
        "SUDO_ASKPASS",
        "LESSOPEN",
        "LESSCLOSE",
        "TMPDIR",
        "JAVA_TOOL_OPTIONS",
        "_JAVA_OPTIONS",
        "OPENSSL_CONF",
        "GCONV_PATH",
        "HOSTALIASES",
        "RESOLV_HOST_CONF",
        "MALLOC_CHECK_",
    }
)
PROTECTED_PREFIXES = ("LD_", "DYLD_", "BASH_FUNC_", "GIT_")

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

# Config entries that beat a repository's own .git/config, so an allowed `git status` cannot be turned into a
# launcher by a config file the model wrote (core.fsmonitor, hooks, pager, ssh command).
GIT_HARDENING = {
    "core.hooksPath": "/dev/null",
    "core.fsmonitor": "false",
    "core.pager": "cat",
    "core.sshCommand": "ssh",
    "protocol.ext.allow": "never",
    "uploadpack.packObjectsHook": "",
}


def is_protected(name: str) -> bool:
    name = name.split("[", 1)[0]  # `PATH[0]=x` assigns PATH too
    return name in PROTECTED or name.startswith(PROTECTED_PREFIXES)


def check_overrides(env: Mapping[str, str] | None) -> str | None:
    """Why the requested `env` overrides are refused, or None when they are acceptable."""
    for name, value in (env or {}).items():
        if not _NAME.match(name):
            return f"{name!r} is not a valid environment variable name"
        if is_protected(name):
            return f"setting {name} could change which program runs or inject code into it"
        if "\x00" in value:
            return f"the value of {name} contains a NUL byte"
    return None


def child_environment(parent: Mapping[str, str], overrides: Mapping[str, str] | None) -> dict[str, str]:
    """The environment a command gets: the allow-listed part of `parent`, git hardening, then `overrides`."""
    env = {k: v for k, v in parent.items() if k in PASSTHROUGH or k.startswith(PASSTHROUGH_PREFIXES)}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.setdefault("LANG", "C.UTF-8")
    env["GIT_CONFIG_COUNT"] = str(len(GIT_HARDENING))
    for index, (key, value) in enumerate(GIT_HARDENING.items()):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    env["GIT_TERMINAL_PROMPT"] = "0"
    env.update(overrides or {})
    return env
