"""The child environment: only allow-listed variables pass, and overrides that hijack execution are refused.

API keys and tokens in the server's own environment never reach a command: the child starts from a short list of
harmless variables. Variables that change which program runs or inject code into one (PATH, LD_*, BASH_ENV, ...)
cannot be set by the model, neither through the `env` argument nor inside the command line.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

PASSTHROUGH = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "TZ", "TMPDIR")
PASSTHROUGH_PREFIXES = ("LC_",)

PROTECTED = frozenset(
    {
        "PATH",
        "HOME",
        "PWD",  # `cd .` and `cd ..` start from $PWD: PWD=/elsewhere moves the shell where the policy did not look
        "OLDPWD",
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
        # bash evaluates values assigned to these as arithmetic, which can run `a[$(...)]` subscripts
        "RANDOM",
        "SRANDOM",
        "OPTIND",
        "HISTCMD",
        # files that allowed programs read as configuration or code
        "XDG_CONFIG_HOME",
        "XDG_CONFIG_DIRS",
        "RIPGREP_CONFIG_PATH",
        "TEXTDOMAIN",
        "TEXTDOMAINDIR",
        "LOCPATH",
        "NLSPATH",
    }
)
# BASH* covers BASH_ENV, BASH_FUNC_*, BASH_CMDS (the command hash table), BASH_ALIASES, BASH_LOADABLES_PATH, ...
PROTECTED_PREFIXES = ("LD_", "DYLD_", "BASH", "GIT_")

# The only variables the model may pass to a program without asking (`NAME=v cmd`, `export`, `env NAME=v`, the
# `env` argument): an allowlist, because programs read variables no list of dangerous ones can keep up with
# (`TAR_OPTIONS=--to-command=...` makes an allowed `tar` run anything).
EXPORTABLE = frozenset(
    {
        "LANG",
        "LANGUAGE",
        "TZ",
        "TERM",
        "COLUMNS",
        "LINES",
        "NO_COLOR",
        "FORCE_COLOR",
        "CLICOLOR",
        "CLICOLOR_FORCE",
        "CI",
        "DEBUG",
        "VERBOSE",
        "PYTHONUNBUFFERED",
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONIOENCODING",
        "PYTHONUTF8",
        "PYTHONHASHSEED",
        "NODE_ENV",
        "RUST_BACKTRACE",
        "RUST_LOG",
        "SOURCE_DATE_EPOCH",
    }
)
EXPORTABLE_PREFIXES = ("LC_",)

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# The character set bash reads the command line in. In GBK, Big5 or Shift-JIS a backslash or backquote can be the
# second byte of a character, so `echo 中\;rm x` is one `echo` to the policy (which reads UTF-8) and two commands
# to bash. Only locales whose multibyte characters never contain ASCII bytes may be set.
CHARSET_VARIABLES = frozenset({"LC_ALL", "LC_CTYPE", "LANG"})
_SAFE_LOCALE = re.compile(r"^(|C|POSIX|[A-Za-z0-9_@.+-]*\.(?i:utf-?8)(@[A-Za-z0-9_+-]+)?)$")

# Config entries that beat a repository's own .git/config (the command scope comes last and wins), so an allowed
# `git status` cannot be turned into a launcher by a config file the model wrote: every single-valued key that names
# a program is pinned. Keys that cannot be pinned this way (per-driver filters and textconv, `diff.external`,
# `include.path`, `core.worktree`, per-remote upload packs) are refused by gitconfig.py when a config sets them.
GIT_HARDENING = {
    "core.hooksPath": "/dev/null",
    "core.fsmonitor": "false",
    "core.pager": "cat",
    "core.editor": ":",
    "sequence.editor": ":",
    "core.sshCommand": "ssh",
    "core.askPass": "",
    "core.alternateRefsCommand": "true",
    "credential.helper": "",  # the empty value drops every helper configured before it
    "gpg.program": "false",  # signing and verifying fail instead of running what a config names
    "gpg.openpgp.program": "false",
    "gpg.x509.program": "false",
    "gpg.ssh.program": "false",
    "gpg.ssh.defaultKeyCommand": "false",
    "protocol.ext.allow": "never",
    "protocol.allow": "never",  # then only the usual transports: no `ext::`, no `helper::` remote helpers
    # a local push, fetch or clone starts the other repository's upload-pack/receive-pack without this
    # environment, so its hooks and config would run: local transports are off
    "protocol.file.allow": "never",
    "protocol.git.allow": "always",
    "protocol.http.allow": "always",
    "protocol.https.allow": "always",
    "protocol.ssh.allow": "always",
    "safe.bareRepository": "explicit",  # a directory the model fills with HEAD, objects/, config is not a repo
    "uploadpack.packObjectsHook": "",
}
# The global config git reads instead of ~/.gitconfig: a path under /dev/null is always missing (read as empty), and
# nothing can create it, not even root (a real file named here could be rewritten by `git config --global`).
EMPTY_GIT_CONFIG = "/dev/null/hermitcrab-gitconfig"


def git_environment(global_config: str = EMPTY_GIT_CONFIG) -> dict[str, str]:
    """The variables that pin git's configuration for every command (see GIT_HARDENING); `global_config` is the
    file git reads instead of ~/.gitconfig (the owner's identity only, see git_identity.py)."""
    env = {
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": global_config,
        "GIT_CONFIG_COUNT": str(len(GIT_HARDENING)),
    }
    for index, (key, value) in enumerate(GIT_HARDENING.items()):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    env["GIT_PROXY_COMMAND"] = ""  # set (even empty), it wins over core.gitProxy, whose first value would win
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["GIT_EDITOR"] = env["GIT_SEQUENCE_EDITOR"] = ":"  # never an editor the model could drive through stdin
    return env


def absolute_path(search_path: str) -> str:
    """PATH without empty or relative entries: bash would search them in the working directory, where the model
    can write, so `ls` could run `./ls` while the policy checked /usr/bin/ls."""
    return os.pathsep.join(d for d in search_path.split(os.pathsep) if os.path.isabs(d)) or "/usr/bin:/bin"


def is_protected(name: str, value: str | None = None) -> bool:
    """Whether setting `name` (to `value`; None: unknown) could change which program runs, inject code into it,
    or change how bash reads the rest of the line."""
    name = name.split("[", 1)[0]  # `PATH[0]=x` assigns PATH too
    if name in CHARSET_VARIABLES:
        return value is None or not _SAFE_LOCALE.match(value)
    return name in PROTECTED or name.startswith(PROTECTED_PREFIXES)


def exportable(name: str) -> bool:
    """Whether a program may be given the variable `name` without asking (see EXPORTABLE)."""
    return name in EXPORTABLE or name.startswith(EXPORTABLE_PREFIXES)


def check_overrides(env: Mapping[str, str] | None) -> str | None:
    """Why the requested `env` overrides are refused, or None when they are acceptable."""
    for name, value in (env or {}).items():
        if not _NAME.match(name):
            return f"{name!r} is not a valid environment variable name"
        if is_protected(name, value):
            return f"setting {name} could change which program runs, inject code into it or how bash reads it"
        if "\x00" in value:
            return f"the value of {name} contains a NUL byte"
    return None


def child_environment(
    parent: Mapping[str, str], overrides: Mapping[str, str] | None, git_global: str = EMPTY_GIT_CONFIG
) -> dict[str, str]:
    """The environment a command gets: the allow-listed part of `parent`, git hardening (with `git_global` as
    git's global config), then `overrides`."""
    env = {k: v for k, v in parent.items() if k in PASSTHROUGH or k.startswith(PASSTHROUGH_PREFIXES)}
    env = {k: v for k, v in env.items() if k not in CHARSET_VARIABLES or not is_protected(k, v)}
    env["PATH"] = absolute_path(env.get("PATH") or "/usr/local/bin:/usr/bin:/bin")
    env.setdefault("LANG", "C.UTF-8")
    env.update(git_environment(git_global))
    env.update(overrides or {})
    return env
