"""Decide whether a command line may run: every simple command it contains must resolve to an allowed binary.

The check works on bashlex's parse tree (see shell.py). A command word is resolved the way bash would (PATH search
or path relative to the working directory, with `..` and directory symlinks resolved) and compared with the
allowlist by canonical path, so `/bin/../usr/bin/rm`, `r''m` and `./ls -> /usr/bin/rm` are all just `rm`.
Anything that cannot be decided statically (a computed command name, an unparseable line) is a miss, never a pass.
"""

from __future__ import annotations

import fnmatch
import os
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from . import environment, gitrules, programs, rules
from .expansions import VARIABLE_BUILTINS, variable_name_problem
from .files import Files
from .gitconfig import GitConfigs
from .pathrules import PathRules
from .paths import through_proc
from .shell import ParsedLine, Redirect, ShellSyntaxError, SimpleCommand, Word, parse

Security = Literal["deny", "allowlist", "full"]
Ask = Literal["off", "on-miss", "on-leave", "on-change", "always"]

# Read-only tools allowed when the server runs alone; names missing on PATH are skipped.
DEFAULT_ALLOW = (
    "ls",
    "cat",
    "head",
    "tail",
    "wc",
    "grep",
    "rg",
    "find",
    "pwd",
    "echo",
    "printf",
    "stat",
    "file",
    "du",
    "df",
    "date",
    "whoami",
    "uname",
    "which",
    "sort",
    "uniq",
    "cut",
    "tr",
    "diff",
    "cmp",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "tree",
    "true",
    "false",
    "test",
)
_GLOB = re.compile(r"[*?\[]")
_RETRY_S = 5.0
_NUMERIC_BUILTINS = frozenset({"shift", "exit", "return", "break", "continue"})  # literal numbers only
_MAX_CWDS = 64  # directories a line's `cd`s may lead to before they count as unknown
# Names bash runs as a builtin or reads as a keyword: a function may not take one (see Checker.check).
_SHELL_NAMES = rules.SAFE_BUILTINS | VARIABLE_BUILTINS | rules.RISKY_BUILTINS.keys() | rules.KEYWORDS


@dataclass(frozen=True)
class Policy:
    """How much the exec tool may do on its own, and when it asks the user."""

    security: Security = "allowlist"
    ask: Ask = "on-leave"  # where there is no sandbox, the gate asks on-miss instead (gate.effective_ask)
    allow: tuple[str, ...] = DEFAULT_ALLOW
    approval_timeout_s: float = 120.0


@dataclass(frozen=True)
class Miss:
    """One reason the line is not allowed automatically; `binary` is set when allowlisting it would fix it."""

    command: str
    reason: str
    binary: str | None = None


@dataclass(frozen=True)
class Verdict:
    refusal: str | None = None  # cannot be approved (e.g. overriding PATH or LD_PRELOAD)
    misses: tuple[Miss, ...] = ()

    @property
    def allowed(self) -> bool:
        return self.refusal is None and not self.misses

    @property
    def fixable_binaries(self) -> frozenset[str] | None:
        """The binaries whose allowlisting would let the line pass, or None when some miss is not about a binary
        (then allow-always remembers the exact command line instead)."""
        if not self.misses or not all(m.binary for m in self.misses):
            return None
        return frozenset(m.binary for m in self.misses if m.binary)


def canonical(path: str) -> str:
    """Resolve `..` and directory symlinks but keep the file name, so multi-call binaries keep their identity."""
    directory, name = os.path.split(os.path.abspath(path))
    return os.path.join(os.path.realpath(directory), name)


def resolve_command(name: str, cwd: str, search_path: str) -> str | None:
    """The canonical path bash would execute for `name`, or None when there is no such executable.

    `search_path` must hold absolute directories only (environment.absolute_path; Checker normalises it).
    """
    if "/" in name:
        candidate = canonical(os.path.join(cwd, name))
        if os.path.basename(candidate) in ("", ".", ".."):
            return None
        return candidate if os.path.isfile(candidate) and os.access(candidate, os.X_OK) else None
    for directory in search_path.split(os.pathsep):  # absolute entries only: see environment.absolute_path
        candidate = os.path.join(directory, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return canonical(candidate)
    return None


class Allowlist:
    """Allowlist entries: names (resolved on PATH), absolute paths, or glob patterns over resolved paths."""

    def __init__(self, entries: Iterable[str], search_path: str) -> None:
        self.search_path = search_path
        self.paths: set[str] = set()
        self.globs: list[str] = []
        self.names: set[str] = set()  # not found on PATH yet: retried on use, at most every few seconds
        self._retried = 0.0
        for entry in entries:
            self.add(entry)

    def add(self, entry: str) -> None:
        entry = os.path.expanduser(entry.strip())
        if not entry:
            return
        if _GLOB.search(entry):
            self.globs.append(entry)
        elif "/" in entry:
            self.paths.add(canonical(entry))
        else:
            resolved = resolve_command(entry, "/", self.search_path)
            if resolved is None:
                self.names.add(entry)
            else:
                self.paths.add(resolved)

    def matches(self, path: str) -> bool:
        if self.names and time.monotonic() - self._retried > _RETRY_S:
            self._retried = time.monotonic()
            for name in list(self.names):
                resolved = resolve_command(name, "/", self.search_path)
                if resolved is not None:
                    self.paths.add(resolved)
                    self.names.discard(name)
        return path in self.paths or any(fnmatch.fnmatchcase(path, pattern) for pattern in self.globs)


@dataclass
class _Scan:
    """Findings accumulated over one command line."""

    refusal: str | None = None
    misses: list[Miss] = field(default_factory=list[Miss])
    link_maker: str | None = None  # a command on the line that may create symlinks (`git checkout`, `tar x`)
    changers: list[str] = field(default_factory=list[str])  # commands on the line or still running that may write

    def refuse(self, reason: str) -> None:
        self.refusal = self.refusal or reason

    def other_link_maker(self, raw: str) -> str | None:
        """The line's symlink maker, unless it is the command `raw` itself (its own paths come before its links)."""
        return None if self.link_maker == raw else self.link_maker

    def miss(self, command: str, reason: str, binary: str | None = None) -> None:
        self.misses.append(Miss(command, reason, binary))

    def protect(self, raw: str, var: str, value: str | None = None) -> None:
        """Refuse the line when `raw` sets `var` (to `value`; None: unknown) and that could hijack a program."""
        if environment.is_protected(var, value):
            self.refuse(f"`{raw}` sets {var}, which could change which program runs or inject code")


class Checker:
    """Applies a Policy's allowlist to command lines run inside `roots`."""

    def __init__(
        self,
        policy: Policy,
        roots: Sequence[Path],
        *,
        protected: Sequence[Path] = (),
        hidden: Sequence[Path] = (),
        sandboxed: bool = False,
        search_path: str,
        home: str,
    ) -> None:
        self.policy = policy
        self.files = Files(roots, protected, hidden)  # the write rules the file tools follow too
        self.paths = PathRules(self.files, home, sandboxed)
        self.search_path = environment.absolute_path(search_path)
        self.home = home
        self.allowlist = Allowlist(policy.allow, self.search_path)
        self.git_configs = GitConfigs(self.search_path, home)
        self._memo: dict[tuple[str, str], str | None] = {}

    def check(
        self,
        line: str,
        workdir: Path,
        env: Mapping[str, str] | None = None,
        approved: Iterable[str] = (),
        running: Iterable[str] = (),
    ) -> Verdict:
        """Every reason `line` may not run unattended in `workdir`; `approved` adds persisted binaries, `running`
        are the lines still running (one that may create symlinks makes this line's paths uncheckable)."""
        if "\x00" in line:
            return Verdict(refusal="the command contains a NUL byte")
        if not line.strip():
            return Verdict(refusal="the command is empty")
        reason = environment.check_overrides(env)
        if reason is not None:
            return Verdict(refusal=reason)
        try:
            parsed = parse(line)
        except ShellSyntaxError as exc:
            return Verdict(misses=(Miss(line, f"it could not be parsed ({exc}), so it cannot be checked"),))
        scan = _Scan()
        self._memo = {}  # one line names the same binaries many times
        self.git_configs.forget()
        approved_paths = set(approved)
        cwds = self._possible_cwds(parsed, str(workdir))
        for problem in parsed.problems:
            scan.miss(line, problem)
        for name in parsed.assigned:
            scan.protect(line, name)
        for name in env or {}:
            if not environment.exportable(name):
                scan.miss(line, f"the `env` argument passes {name}, which is not among the variables passed unasked")
        running = list(running)
        scan.link_maker = next((c.raw for c in parsed.commands if self._makes_links(c)), None)
        scan.link_maker = scan.link_maker or self._running_maker(running, self._makes_links)
        scan.changers = [c.raw for c in parsed.commands if self._changes_files(c)]
        scan.changers += [maker for maker in [self._running_maker(running, self._changes_files)] if maker]
        for function in sorted(parsed.functions):
            if function in _SHELL_NAMES or self._resolve(function, str(workdir)) is not None:
                scan.miss(
                    line,
                    f"the function `{function}` is named like a builtin or a program: a call before its definition "
                    "runs the real one, which the policy would take for the function",
                )
        for command in parsed.commands:
            self._check_simple(command, parsed, cwds, approved_paths, scan)
        for redirect in parsed.redirects:
            self._check_redirect(redirect, line, cwds, scan)
        misses = tuple(scan.misses) if self.policy.security == "allowlist" else ()
        return Verdict(refusal=scan.refusal, misses=misses)

    def _possible_cwds(self, parsed: ParsedLine, workdir: str) -> list[str | None]:
        """Every directory a relative path might be resolved from (None: one we cannot know)."""
        cwds: list[str | None] = [workdir]
        for command in parsed.commands:
            if not command.words or command.words[0].text not in ("cd", "pushd"):
                continue
            targets = [w for w in command.words[1:] if w.text is None or not w.text.startswith("-")]
            if not targets:
                cwds.append(self.home)
                continue
            path = self.paths.expand(targets[0])
            if path is None or path == "-":
                cwds.append(None)
                continue
            base = [c for c in cwds if c is not None] if not os.path.isabs(path) else ["/"]
            for c in base:  # `cd -P` goes where the links lead; plain `cd` drops `l/..` as text first
                joined = os.path.join(c, path)
                if through_proc(joined):
                    cwds.append(None)  # /proc/self/cwd is the server's directory here, the command's there
                    continue
                for candidate in (os.path.realpath(joined), os.path.normpath(joined)):
                    if candidate not in cwds:
                        cwds.append(candidate)
            if len(cwds) > _MAX_CWDS:
                return [*cwds, None]
        return cwds

    def _check_simple(
        self, command: SimpleCommand, parsed: ParsedLine, cwds: list[str | None], approved: set[str], scan: _Scan
    ) -> None:
        for name, word in command.assignments:  # the word is the whole `NAME=value`
            if "[" in name:
                scan.miss(command.raw, f"`{name}=` has a subscript, which is evaluated as arithmetic (it can run code)")
            scan.protect(command.raw, name, None if word.text is None else word.text.partition("=")[2])
            if command.words and not environment.exportable(name):
                scan.miss(
                    command.raw, f"`{name}=` passes {name} to the program; it is not among the variables passed unasked"
                )
        for redirect in command.redirects:
            self._check_redirect(redirect, command.raw, cwds, scan)
        if command.words:
            self._check_argv(command.raw, list(command.words), parsed, cwds, approved, scan)

    def _check_argv(
        self,
        raw: str,
        words: list[Word],
        parsed: ParsedLine,
        cwds: list[str | None],
        approved: set[str],
        scan: _Scan,
    ) -> None:
        name_word, args = words[0], words[1:]
        name = self.paths.expand(name_word)  # `~/bin/x` runs $HOME/bin/x
        if name is None:
            scan.miss(raw, f"the command name {name_word.raw!r} is computed at run time, so it cannot be checked")
            return
        if not name.isascii() or not name.isprintable():
            scan.miss(raw, f"the command name {name!r} contains non-ASCII or invisible characters")
            return
        if name in parsed.functions:
            return  # the function's body is checked where it is defined
        if "/" in name and not name.startswith("/") and (len(cwds) > 1 or cwds[0] is None):
            scan.miss(raw, f"`{name}` is a relative path run from a directory not known here (after `cd`, `-execdir`)")
            return
        if "/" not in name and self._check_builtin(raw, name, args, scan):
            return
        binary = self._resolve(name, cwds[0] or "/")
        if binary is None:
            scan.miss(raw, f"`{name}` was not found as an executable on PATH")
            return
        if not (self.allowlist.matches(binary) or binary in approved):
            scan.miss(raw, f"`{binary}` is not on the allowlist", binary)
        elif self.paths.inside_roots(binary) and any(c != raw for c in scan.changers):
            changer = next(c for c in scan.changers if c != raw)
            scan.miss(raw, f"`{binary}` is a file in the roots that `{changer}` may replace before it runs")
        base = os.path.basename(binary)
        reading = programs.reading(base, args)
        reasons = [rules.special_reason(base, args), rules.inline_code_reason(base, args)]
        reasons += [reading.problem if reading else None, self.paths.computed_argument(base, args, cwds)]
        if base == "git":
            reasons += [self.paths.git_repository_problem(args, cwds)]
            reasons += [self.git_configs.problem(binary, args, cwd) for cwd in dict.fromkeys(cwds)]
        for reason in reasons:
            if reason is not None:
                scan.miss(raw, reason)
        if base == "env":
            for var, value in rules.env_assignments(base, args):
                scan.protect(raw, var, value)
                if value != "" and not environment.exportable(var):
                    scan.miss(raw, f"`env {var}=` passes {var}, which is not among the variables passed unasked")
        for path in rules.written_paths(base, args) + (reading.writes if reading else []):
            self._check_write(path, raw, f"`{base}` writes", cwds, scan)
        problem = self.paths.reads_problem(base, args, cwds, scan.other_link_maker(raw))
        problem = problem or self.paths.followed_links_problem(base, args, cwds)
        if problem is not None:
            scan.miss(raw, problem)
        child_cwds: list[str | None] = [None] if rules.relocates(base, args) else cwds
        for child in rules.child_commands(base, args) or []:
            if child:
                self._check_argv(raw, child, parsed, child_cwds, approved, scan)

    def _resolve(self, name: str, cwd: str) -> str | None:
        key = (name, cwd if "/" in name else "")
        if key not in self._memo:
            self._memo[key] = resolve_command(name, cwd, self.search_path)
        return self._memo[key]

    def _running_maker(self, lines: list[str], makes: Callable[[SimpleCommand], bool]) -> str | None:
        """The first command of a line still running that `makes` (links, changes), named for a reason."""
        for running in lines:
            try:
                commands = parse(running).commands
            except ShellSyntaxError:
                return f"{running[:80]} (still running)"
            maker = next((c.raw for c in commands if makes(c)), None)
            if maker is not None:
                return f"{maker} (still running)"
        return None

    def _makes_links(self, command: SimpleCommand) -> bool:
        return _argv_makes_links(list(command.words))

    def _changes_files(self, command: SimpleCommand) -> bool:
        """Whether `command` may create, change or replace a file: a write, a link, a program not known to only read."""
        return any(r.writes for r in command.redirects) or _argv_changes_files(list(command.words))

    def _check_redirect(self, redirect: Redirect, raw: str, cwds: list[str | None], scan: _Scan) -> None:
        problem = self.paths.redirect_problem(redirect, raw, cwds, scan.other_link_maker(raw))
        if problem is not None:
            scan.miss(raw, problem)

    def _check_write(self, word: Word, raw: str, what: str, cwds: list[str | None], scan: _Scan) -> None:
        problem = self.paths.write_problem(word, what, cwds, scan.other_link_maker(raw))
        if problem is not None:
            scan.miss(raw, problem)

    def _check_builtin(self, raw: str, name: str, args: list[Word], scan: _Scan) -> bool:
        """Handle shell builtins; True when `name` is one (and has been dealt with)."""
        if name in rules.SAFE_BUILTINS or name in VARIABLE_BUILTINS:
            problem = variable_name_problem(name, [(a.raw, a.text) for a in args])
            if problem is not None:
                scan.miss(raw, problem)
        if name in rules.SAFE_BUILTINS:
            if name in ("read", "printf"):
                for var in _read_targets(name, args):
                    scan.protect(raw, var)
            if name in _NUMERIC_BUILTINS and not all(re.fullmatch(r"-?[0-9]+", a.text or "") for a in args):
                scan.miss(raw, f"`{name}` reads its argument as a number, which bash may evaluate as arithmetic")
            return True
        if name in VARIABLE_BUILTINS:
            if name != "export" and any(_is_option(a, "n") for a in args):
                scan.miss(raw, f"`{name} -n` makes a name reference, which can assign any variable later")
            exports = name == "export" or any(_is_option(a, "x") for a in args)
            for var, value in rules.env_assignments(name, args):
                scan.protect(raw, var, value)
                if exports and not environment.exportable(var):
                    scan.miss(raw, f"`{name} {var}` exports {var}; it is not among the variables passed unasked")
            return True
        if name in rules.RISKY_BUILTINS:
            scan.miss(raw, f"`{name}` {rules.RISKY_BUILTINS[name]}")
            return True
        return False


def _argv_makes_links(words: list[Word]) -> bool:
    """Whether `words` may create symlinks, itself or through the command a wrapper runs (`env ln`, `find -exec ln`)."""
    if not words or words[0].text is None:
        return False
    base, args = os.path.basename(words[0].text), words[1:]
    reading = programs.reading(base, args) if base == "tar" else None
    if rules.makes_links(base, args) or (reading is not None and reading.makes_links):
        return True
    return any(_argv_makes_links(child) for child in rules.child_commands(base, args) or [])


def _argv_changes_files(words: list[Word]) -> bool:
    if not words:
        return False
    if words[0].text is None:
        return True
    base, args = os.path.basename(words[0].text), words[1:]
    if base in _SHELL_NAMES and base not in rules.RISKY_BUILTINS:
        return False
    children = rules.child_commands(base, args)
    if children is not None:
        return any(_argv_changes_files(child) for child in children)
    reading = programs.reading(base, args)
    if _argv_makes_links(words) or rules.written_paths(base, args) or (reading is not None and reading.writes):
        return True
    if base == "git":
        return gitrules.repository_place(args) is not None  # a subcommand that may write
    return base not in rules.READ_ONLY


def _is_option(word: Word, letter: str) -> bool:
    text = word.text or ""
    return text[:1] in ("-", "+") and not text.startswith("--") and letter in text[1:]


def _read_targets(name: str, args: list[Word]) -> list[str]:
    if name == "printf":
        return [args[i + 1].text or "" for i, a in enumerate(args[:-1]) if a.text == "-v"]
    return [a.text or a.raw for a in args if not (a.text or "").startswith("-")]
