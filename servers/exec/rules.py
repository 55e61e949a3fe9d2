"""What hermitcrab knows about particular commands: builtins, wrappers, inline interpreters, file writers.

The allowlist says which binaries may run; these rules say when an allowed binary is really running something
else (`env rm`, `xargs rm`, `find -exec rm`), running inline code (`python -c`, `sh -c`, `awk '...'`),
changing its own configuration into a launcher (`git -c core.pager=...`), or writing files (whose paths the policy
then checks against the roots).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .shell import Word

# Builtins that neither run other code nor change how later commands resolve.
SAFE_BUILTINS = frozenset(
    {
        "cd",
        "pwd",
        "echo",
        "printf",
        "true",
        "false",
        "test",
        "[",
        ":",
        "exit",
        "return",
        "shift",
        "read",
        "wait",
        "break",
        "continue",
        "type",
        "pushd",
        "dirs",
    }
)
# Builtins that set variables: allowed unless they name a protected variable.
VARIABLE_BUILTINS = frozenset({"export", "unset", "local", "declare", "typeset", "readonly"})
# Builtins that run their arguments, source files or reconfigure the shell.
RISKY_BUILTINS = {
    "eval": "runs its arguments as shell code",
    "exec": "replaces the shell with another program",
    "source": "runs the commands in a file",
    ".": "runs the commands in a file",
    "command": "runs its arguments as a command",
    "builtin": "runs its arguments as a builtin",
    "trap": "runs code when a signal arrives",
    "enable": "loads or changes shell builtins",
    "alias": "redefines commands",
    "hash": "changes where commands are found",
    "set": "changes shell options",
    "shopt": "changes shell options",
    "ulimit": "changes resource limits",
    "umask": "changes file permissions",
    "kill": "signals other processes",
    "let": "evaluates arithmetic that can assign variables",
    "mapfile": "assigns variables",
    "readarray": "assigns variables",
    "fc": "re-runs commands from history",
    "history": "edits the history",
    "bind": "changes key bindings",
    "complete": "registers completion commands",
    "compgen": "runs completion functions",
    "coproc": "starts a coprocess",
    "popd": "changes to a directory that cannot be checked",
    "getopts": "assigns variables",
    "jobs": "controls jobs",
    "fg": "controls jobs",
    "bg": "controls jobs",
    "disown": "controls jobs",
    "suspend": "suspends the shell",
    "logout": "ends the shell",
    "times": "reports shell times",
    "caller": "inspects the call stack",
    "help": "prints builtin help",
}
SUDO_LIKE = frozenset({"sudo", "doas", "su", "pkexec", "runuser", "setpriv", "chroot", "unshare", "nsenter"})
INLINE_SHELLS = frozenset({"watch", "script", "flock", "parallel", "ssh", "xterm"})

# interpreter name pattern -> (short option letters, long options) that take inline code
_INTERPRETERS: list[tuple[re.Pattern[str], str, frozenset[str]]] = [
    (re.compile(r"^(ba|da|z|k|mk|a|fi|tc|c|yash|rbash|)sh$|^busybox$"), "c", frozenset({"--command"})),
    (re.compile(r"^python[0-9.]*$|^pypy[0-9.]*$"), "c", frozenset()),
    (re.compile(r"^(node|nodejs|deno|bun)$"), "ep", frozenset({"--eval", "--print"})),
    (re.compile(r"^perl[0-9.]*$"), "eE", frozenset()),
    (re.compile(r"^ruby[0-9.]*$"), "e", frozenset()),
    (re.compile(r"^php[0-9.]*$"), "rR", frozenset()),
    (re.compile(r"^lua[0-9.]*$|^luajit$"), "e", frozenset()),
    (re.compile(r"^(pwsh|powershell)$"), "c", frozenset({"-command", "-Command"})),
    (re.compile(r"^(Rscript|julia|osascript|tclsh|wish|guile|sbcl|gdb)$"), "e", frozenset({"--eval", "-ex"})),
]
_AWKS = frozenset({"awk", "gawk", "mawk", "nawk", "busybox-awk"})
# writers whose every positional argument is a path they create, change or delete
_PATH_WRITERS = frozenset({"rm", "rmdir", "unlink", "touch", "mkdir", "truncate", "shred", "tee"})
_MODE_WRITERS = frozenset({"chmod", "chown", "chgrp", "chattr", "setfacl"})  # first positional is not a path
_COPIERS = frozenset({"cp", "mv", "ln", "install", "rsync", "scp"})  # last positional (or -t DIR) is written
_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_FIND_WRITES = frozenset({"-delete", "-fprint", "-fprint0", "-fprintf", "-fls"})
_GIT_OPTIONS = frozenset({"-c", "--config-env", "--exec-path", "--upload-pack", "--receive-pack", "-u"})


def texts(words: Sequence[Word]) -> list[str | None]:
    return [w.text for w in words]


def inline_code_reason(name: str, args: Sequence[Word]) -> str | None:
    """Why `name args` runs code that is not itself on the command line, or None."""
    if name in _AWKS:
        return None if any(a.text == "-f" for a in args) else f"`{name}` runs an inline program"
    if name in INLINE_SHELLS:
        return f"`{name}` runs a command given as a string"
    for pattern, letters, longs in _INTERPRETERS:
        if not pattern.match(name):
            continue
        positional = False
        for arg in args:
            text = arg.text
            if text is None:
                return f"`{name}` has an argument computed at run time"
            if text in longs or text.split("=", 1)[0] in longs:
                return f"`{name} {text}` runs inline code"
            if text.startswith("-") and not text.startswith("--") and any(ch in letters for ch in text[1:]):
                return f"`{name} {text}` runs inline code"
            if text in ("-m", "--version", "-V", "--help", "-h"):
                return None
            if text == "-":
                break
            if not text.startswith("-"):
                positional = True
                break
        if not positional:
            return f"`{name}` without a script file reads code from its input"
        return None
    return None


def special_reason(name: str, args: Sequence[Word]) -> str | None:
    """Why an allowed binary still needs approval because of how it is called, or None."""
    words = texts(args)
    if name in SUDO_LIKE:
        return f"`{name}` runs a command as another user or in another root"
    if name == "git":
        for text in words:
            if text is None:
                return "`git` has an argument computed at run time"
            option = text.split("=", 1)[0]
            if option in _GIT_OPTIONS:
                return f"`git {option}` can make git run arbitrary programs"
            if not text.startswith("-"):
                if text == "config" and not ({"--get", "--list", "-l", "--get-all"} & {w or "" for w in words}):
                    return "`git config` can make git run arbitrary programs"
                break
    if name == "find":
        for text in words:
            if text in _FIND_WRITES:
                return f"`find {text}` deletes or writes files"
    if name == "env" and ("-S" in words or "--split-string" in words):
        return "`env -S` splits a string into a command"
    return None


def child_commands(name: str, args: Sequence[Word]) -> list[list[Word]] | None:
    """The command(s) a wrapper such as `env`, `xargs`, `nice` or `find -exec` runs, or None if not a wrapper."""
    words = list(args)
    if name == "find":
        return _find_children(words)
    valued = _WRAPPERS.get(name)
    if valued is None:
        return None
    rest = _skip_options(words, valued)
    if name == "env":
        while rest and rest[0].text is not None and "=" in rest[0].text and not rest[0].text.startswith("="):
            rest = rest[1:]
    if name in _LEADING_ARGUMENT and not (name == "taskset" and "-c" in texts(words)):
        rest = rest[1:]
    return [rest] if rest else []


def env_assignments(name: str, args: Sequence[Word]) -> list[str]:
    """Variable names that `env NAME=value ...` or `export NAME=...` and friends set."""
    names: list[str] = []
    for arg in args:
        text = arg.raw if arg.text is None else arg.text
        if name == "env" and arg.text is not None and arg.text in ("-u", "--unset"):
            continue
        if text.startswith("-"):
            continue
        names.append(text.split("=", 1)[0].rstrip("+"))
        if name == "env" and "=" not in text:
            break
    return names


def written_paths(name: str, args: Sequence[Word]) -> list[Word]:
    """The path arguments `name` writes to (for well-known file writers), else []."""
    positional = _positionals(args)
    if name in _PATH_WRITERS:
        return positional
    if name in _MODE_WRITERS:
        return positional[1:]
    if name in _COPIERS:
        for index, arg in enumerate(args):
            if arg.text in ("-t", "--target-directory") and index + 1 < len(args):
                return [args[index + 1]]
            if arg.text is not None and arg.text.startswith("--target-directory="):
                return [Word(arg.raw, arg.text.split("=", 1)[1])]
        targets = positional[-1:]
        return targets + (positional[:-1] if name == "mv" else [])
    if name == "dd":
        return [Word(a.raw, a.text[3:]) for a in args if a.text is not None and a.text.startswith("of=")]
    if name == "sed" and any(a.text is not None and a.text.startswith(("-i", "--in-place")) for a in args):
        return positional[1:]
    if name == "git":
        return _git_paths(args)
    return []


def _git_paths(args: Sequence[Word]) -> list[Word]:
    """Where git writes: `-C DIR`, `--git-dir`/`--work-tree`, and the target of `git clone`/`git init`."""
    paths: list[Word] = []
    index = 0
    while index < len(args):
        text = args[index].text
        if text in ("-C", "--git-dir", "--work-tree") and index + 1 < len(args):
            paths.append(args[index + 1])
            index += 2
            continue
        if text is not None and text.startswith(("--git-dir=", "--work-tree=")):
            paths.append(Word(args[index].raw, text.split("=", 1)[1]))
        elif text is None or not text.startswith("-"):
            rest = _positionals(args[index + 1 :])
            if text == "clone" and len(rest) >= 2:
                paths.append(rest[1])
            elif text == "init" and rest:
                paths.append(rest[0])
            break
        index += 1
    return paths


def _positionals(args: Sequence[Word]) -> list[Word]:
    out: list[Word] = []
    options_done = False
    for arg in args:
        if not options_done and arg.text == "--":
            options_done = True
            continue
        if not options_done and arg.text is not None and arg.text.startswith("-") and arg.text != "-":
            continue
        out.append(arg)
    return out


def _options(spec: str) -> frozenset[str]:
    return frozenset(spec.split())


# wrapper -> its options that take a value (the wrapped command follows the options)
_WRAPPERS: dict[str, frozenset[str]] = {
    "env": _options("-u --unset -C --chdir -S --split-string"),
    "xargs": _options(
        "-a -d -E -I -L -n -P -s --arg-file --delimiter --eof --max-lines --max-args --max-procs --max-chars "
        "--process-slot-var"
    ),
    "nice": _options("-n --adjustment"),
    "nohup": frozenset(),
    "timeout": _options("-s --signal -k --kill-after"),
    "stdbuf": _options("-i -o -e --input --output --error"),
    "setsid": frozenset(),
    "ionice": _options("-c -n -p -P -u --class --classdata"),
    "taskset": frozenset(),
    "chrt": _options("-T -P -D"),
    "time": _options("-o --output -f --format"),
    "unbuffer": frozenset(),
}
# wrappers whose first positional argument is not the command (a duration, a priority, a CPU mask)
_LEADING_ARGUMENT = frozenset({"timeout", "chrt", "taskset"})


def _skip_options(words: list[Word], valued: frozenset[str]) -> list[Word]:
    index = 0
    while index < len(words):
        text = words[index].text
        if text is None or not text.startswith("-") or text == "-":
            break
        index += 1
        if text == "--":
            break
        if text in valued:
            index += 1
    return words[index:]


def _find_children(words: list[Word]) -> list[list[Word]]:
    children: list[list[Word]] = []
    index = 0
    while index < len(words):
        if words[index].text in _FIND_EXEC:
            end = index + 1
            while end < len(words) and words[end].text not in (";", "+"):
                end += 1
            children.append(words[index + 1 : end])
            index = end
        index += 1
    return children
