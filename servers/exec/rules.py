"""What hermitcrab knows about particular commands: builtins, wrappers, inline interpreters, file writers.

The allowlist says which binaries may run; these rules say when an allowed binary is really running something
else (`env rm`, `xargs rm`, `find -exec rm`), running inline code (`python -c`, `sh -c`, `awk '...'`),
changing its own configuration into a launcher (`git -c core.pager=...`), or writing files (whose paths the policy
then checks against the roots).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from . import gitrules
from .options import uses
from .programs import checked_options
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
    "unalias": "redefines commands",
}
# Reserved words: not commands, but names a function could take.
KEYWORDS = frozenset(
    {"if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until", "do", "done", "in"}
    | {"function", "time", "coproc", "{", "}", "!", "[[", "]]"}
)
SUDO_LIKE = frozenset({"sudo", "doas", "su", "pkexec", "runuser", "setpriv", "chroot", "unshare", "nsenter"})
INLINE_SHELLS = frozenset({"watch", "script", "flock", "parallel", "ssh", "xterm"})


@dataclass(frozen=True)
class _Interpreter:
    pattern: re.Pattern[str]
    inline: str  # short options that take code, or make it read code from stdin (`-c`, `-i`, `-s`)
    inline_long: frozenset[str] = frozenset()
    valued: str = ""  # short options whose value is the next word (so it is not the script file)
    valued_long: frozenset[str] = frozenset()
    done: frozenset[str] = frozenset({"--version", "--help"})  # options after which nothing runs


_INTERPRETERS = [
    _Interpreter(
        re.compile(r"^(ba|da|z|k|mk|a|fi|tc|c|yash|rbash|)sh$|^busybox$"),
        "cis",
        frozenset({"--command"}),
        "oO",
        frozenset({"--rcfile", "--init-file"}),
    ),
    _Interpreter(
        re.compile(r"^python[0-9.]*$|^pypy[0-9.]*$"),
        "ci",
        valued="WXQ",
        done=frozenset({"-m", "-V", "-h", "--version", "--help"}),
    ),
    _Interpreter(
        re.compile(r"^(node|nodejs|deno|bun)$"),
        "epi",
        frozenset({"--eval", "--print", "--interactive"}),
        "r",
        frozenset({"--require", "--import", "--loader", "--experimental-loader", "--title", "--env-file"}),
    ),
    _Interpreter(re.compile(r"^perl[0-9.]*$"), "eEd", valued="Ix"),
    _Interpreter(re.compile(r"^ruby[0-9.]*$"), "e", valued="Ir"),
    _Interpreter(re.compile(r"^php[0-9.]*$"), "rRBEa", valued="cdz"),
    _Interpreter(re.compile(r"^lua[0-9.]*$|^luajit$"), "ei", valued="l"),
    _Interpreter(re.compile(r"^(pwsh|powershell)$"), "c", frozenset({"-command", "-Command"})),
    _Interpreter(
        re.compile(r"^(Rscript|julia|osascript|tclsh|wish|guile|sbcl|gdb)$"), "e", frozenset({"--eval", "-ex"})
    ),
]
_AWKS = frozenset({"awk", "gawk", "mawk", "nawk", "busybox-awk"})
# writers whose every positional argument is a path they create, change or delete
_PATH_WRITERS = frozenset({"rm", "rmdir", "unlink", "touch", "mkdir", "truncate", "shred", "tee"})
_MODE_WRITERS = frozenset({"chmod", "chown", "chgrp", "chattr", "setfacl"})  # first positional is not a path
_COPIERS = frozenset({"cp", "mv", "ln", "install", "rsync", "scp"})  # last positional (or -t DIR) is written
_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
# Programs that may create symlinks, which a later path on the same line could pass through unchecked.
_LINK_MAKERS = frozenset({"ln", "cp", "mv", "install", "rsync", "unzip", "cpio", "bsdtar", "7z", "patch"})
# Programs whose arguments are harmless whatever they turn out to be at run time (no option writes, runs a
# program or reads a file list), so a computed argument needs no approval inside the sandbox.
ARGUMENT_SAFE = frozenset(
    [
        "ls",
        "cat",
        "head",
        "tail",
        "wc",
        "grep",
        "egrep",
        "fgrep",
        "stat",
        "du",
        "df",
        "whoami",
        "uname",
        "which",
        "cut",
        "tr",
        "diff",
        "cmp",
        "basename",
        "dirname",
        "realpath",
        "readlink",
        "true",
        "false",
        "test",
        "nl",
        "od",
        "md5sum",
        "sha1sum",
        "sha256sum",
    ]
)
# Programs that read files and write none (their writing options are read in programs.py): a line holding only
# these cannot replace a program in the roots before it runs.
READ_ONLY = ARGUMENT_SAFE | frozenset(["find", "file", "tree", "sort", "uniq", "date", "rg", "sed", "pwd", "echo"])
# Without the sandbox a computed path could name a credential: only programs that read no files take one.
NO_FILES = frozenset(["basename", "dirname", "true", "false", "whoami", "uname"])
# Programs that show names and metadata but not contents: reading an ancestor of a credential is fine.
METADATA_ONLY = frozenset(
    ["ls", "stat", "du", "df", "tree", "find", "file", "realpath", "readlink", "basename", "dirname", "test", "which"]
)


def texts(words: Sequence[Word]) -> list[str | None]:
    return [w.text for w in words]


def inline_code_reason(name: str, args: Sequence[Word]) -> str | None:
    """Why `name args` runs code that is not itself on the command line, or None."""
    words = texts(args)
    if name in _AWKS:
        programs = [words[i + 1] for i, w in enumerate(words[:-1]) if w in ("-f", "--file", "-E", "--exec")]
        programs += [w.split("=", 1)[1] for w in words if w is not None and w.startswith(("--file=", "--exec="))]
        if uses(words, ("-e", "--source")) or not programs or not all(map(_script_file, programs)):
            return f"`{name}` runs an inline program, or one read from its input"
        return None
    if name in INLINE_SHELLS:
        return f"`{name}` runs a command given as a string"
    interpreter = next((i for i in _INTERPRETERS if i.pattern.match(name)), None)
    return None if interpreter is None else _interpreter_reason(name, interpreter, words)


def _interpreter_reason(name: str, interpreter: _Interpreter, words: list[str | None]) -> str | None:
    index = 0
    while index < len(words):
        text = words[index]
        if text is None:
            return f"`{name}` has an argument computed at run time"
        option = text.split("=", 1)[0]
        if option in interpreter.inline_long:
            return f"`{name} {text}` runs inline code"
        short = text[:1] in "-+" and not text.startswith("--") and len(text) > 1
        if short and any(ch in interpreter.inline for ch in text[1:]):
            return f"`{name} {text}` runs inline code"
        if text in interpreter.done:
            return None
        if text == "-" or not (text.startswith("-") or short):
            break  # `-` (stdin) or the script file
        if text == "--":
            index += 1
            break
        valued = short and len(text) == 2 and text[1] in interpreter.valued
        index += 2 if valued or text in interpreter.valued_long else 1
    if index >= len(words) or not _script_file(words[index]):
        return f"`{name}` without a script file reads code from its input"
    return None


def _script_file(path: str | None) -> bool:
    """A file an interpreter reads code from, rather than its input or a pipe (`-`, `/dev/stdin`, `/proc/...`)."""
    return path is not None and path != "-" and not path.startswith(("/dev/", "/proc/"))


def special_reason(name: str, args: Sequence[Word]) -> str | None:
    """Why an allowed binary still needs approval because of how it is called, or None."""
    if name in SUDO_LIKE:
        return f"`{name}` runs a command as another user or in another root"
    if name == "busybox":
        return "`busybox` runs any of its applets (`busybox sh -c ...`)"
    if name == "git":
        return gitrules.reason(args)
    if name in _AWKS:
        return f"`{name}` programs can run commands (`system`, pipes) and write files"
    return None


def makes_links(name: str, args: Sequence[Word]) -> bool:
    """Whether `name args` may create symlinks (a checkout, an extracted archive, `ln`)."""
    return name in _LINK_MAKERS or (name == "git" and gitrules.touches_worktree(args))


def relocates(name: str, args: Sequence[Word]) -> bool:
    """Whether the wrapped command runs in another directory (`find -execdir`, `env -C`): its relative paths
    cannot be checked from here."""
    words = texts(args)
    if name == "find":
        return any(w in ("-execdir", "-okdir") for w in words)
    return name == "env" and uses(words, ("-C", "--chdir"))


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
    if name == "xargs" and rest:
        unknown = Word("<arguments read from input>", None)  # may be `-o /etc/x` or `-c k=v`
        marker = _replace_string(words)
        if marker is not None:  # `-I{} sort -o {}`: each word holding the marker is input too
            rest = [rest[0], *(unknown if marker in (w.text or marker) else w for w in rest[1:])]
        rest = [*rest, unknown]
    return [rest] if rest else []


def _replace_string(args: Sequence[Word]) -> str | None:
    """The string `xargs -I STR` / `-i` replaces with input in the command's words ("" when computed)."""
    parsed = checked_options("xargs", args)
    for option, value in parsed.options if parsed else ():
        if option in ("-I", "-i", "--replace"):
            return "{}" if value is None else (value.text or "")
    return None


def env_assignments(name: str, args: Sequence[Word]) -> list[tuple[str, str | None]]:
    """(name, value) for each variable `env NAME=value ...` or `export NAME=...` and friends set; the value is
    None when bash computes it, "" when there is none (`export NAME`)."""
    found: list[tuple[str, str | None]] = []
    for arg in args:
        text = arg.raw if arg.text is None else arg.text
        if name == "env" and arg.text is not None and arg.text in ("-u", "--unset"):
            continue
        if text.startswith("-"):
            continue
        var, equals, value = text.partition("=")
        found.append((var.rstrip("+"), (value if arg.text is not None else None) if equals else ""))
        if name == "env" and not equals:
            break
    return found


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
    if name == "git":
        return gitrules.written(args)
    return []


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
            found = Word("<a file find found>", None)  # `{}` is replaced at run time
            children.append([found if "{}" in (w.text or "") else w for w in words[index + 1 : end]])
            index = end
        index += 1
    return children
