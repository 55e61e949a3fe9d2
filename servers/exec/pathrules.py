"""Whether the paths on a command line may be written or read, as bash will resolve them.

A write must land inside the roots (Files.write_problem, the rule the file tools follow too), every file a glob
matches now included; no path may pass through /proc or /dev/fd or be a hidden credential; without the sandbox a
program that reads recursively may not be given a directory holding one, nor a path computed at run time. On a
line where a command may create symlinks first, paths checked now mean nothing, so they are misses.
"""

from __future__ import annotations

import glob
import itertools
import os
import re
from collections.abc import Sequence

from . import gitrules, rules
from .files import Files
from .options import option_use
from .paths import SAFE_DEVICES, through_proc
from .shell import Redirect, Word, operand_only

Cwds = Sequence[str | None]  # every directory a relative path may be resolved from (None: unknown)

_GLOB = re.compile(r"[*?\[]")
_MAX_GLOB = 10_000  # files a glob may match (each is checked)
_MAX_ATTACHED = 256  # tails of a short-option word tried as an attached path
_MAX_LINK_WALK = 20_000  # files a link-following reader's trees are searched through for links out


class PathRules:
    """The path checks of one server: its roots and hidden list (via Files), $HOME, and whether it sandboxes."""

    def __init__(self, files: Files, home: str, sandboxed: bool) -> None:
        self.files = files
        self.secrets = files.secrets
        self.home = home
        self.sandboxed = sandboxed  # without the sandbox, reads of credentials must be stopped here too

    def expand(self, word: Word) -> str | None:
        if word.text is None:
            return None
        if word.tilde:
            return self.home + word.text[1:]
        return word.text

    def write_problem(self, word: Word, what: str, cwds: Cwds, link_maker: str | None) -> str | None:
        """Why writing `word` needs approval (`what` names the writer), or None."""
        path = self.expand(word)
        pattern = None
        if path is None:
            path = glob_directory(word.raw)
            pattern = word.raw
            if path is None:
                return f"{what} to {word.raw!r}, a path computed at run time"
        if path in SAFE_DEVICES:
            return None
        if link_maker is not None:
            return f"{what} to {word.raw!r} on a line where `{link_maker}` may create a symlink first"
        for base in ["/"] if os.path.isabs(path) else cwds:
            if base is None:
                return f"{what} to the relative path {word.raw!r} after a `cd` that cannot be followed"
            targets = [os.path.join(base, path)]
            if pattern is not None:  # every file the glob matches now (a symlink among them may lead out)
                targets += itertools.islice(glob.iglob(os.path.join(glob.escape(base), pattern)), _MAX_GLOB + 1)
                if len(targets) > _MAX_GLOB:
                    return f"{what} to {word.raw!r}, which matches too many files to check"
            for target in targets:
                if through_proc(target):
                    return f"{what} to {word.raw!r}, which passes through /proc or /dev/fd"
                reason = self.files.write_problem(target)
                if reason is not None:
                    return f"{what}, but {reason}"
        return None

    def redirect_problem(self, redirect: Redirect, raw: str, cwds: Cwds, link_maker: str | None) -> str | None:
        target = redirect.target
        if target is None:
            return None
        if redirect.op in (">&", "<&") and (target.text == "-" or (target.text or "").isdigit()):
            return None  # duplicates or closes a descriptor (`>&2`, `>&-`); `> 2` and `> -` are files
        if (target.text or "").startswith(("/dev/tcp/", "/dev/udp/")):
            return f"`{raw}` opens a network connection through bash's {target.text!r}"
        if redirect.writes:
            return self.write_problem(target, f"`{raw}` redirects output", cwds, link_maker)
        path = self.expand(target)
        if path is None:
            return None if self.sandboxed else f"`{raw}` reads a file whose name is computed at run time"
        problem = self.read_problem(path, "<", cwds)
        return None if problem is None else f"`{raw}` reads a file: {problem}"

    def reads_problem(self, base: str, args: Sequence[Word], cwds: Cwds, link_maker: str | None) -> str | None:
        """Why the paths `base` may read among `args` need approval, or None."""
        for word in args:
            for path in path_candidates(self.expand(word)):
                if not self.sandboxed and "/" in path and link_maker is not None:
                    return f"`{base}` reads {path!r} on a line where `{link_maker}` may create a symlink"
                problem = self.read_problem(path, base, cwds)
                if problem is not None:
                    return problem
        return None

    def read_problem(self, path: str, base: str, cwds: Cwds) -> str | None:
        """Why `base` reading `path` needs approval: it passes through /proc or /dev/fd, or it is (or, read
        recursively without the sandbox, holds) a hidden credential."""
        for cwd in ["/"] if os.path.isabs(path) else cwds:
            if cwd is None:
                if self.sandboxed:
                    continue
                return f"`{base}` reads the relative path {path!r} after a `cd` that cannot be followed"
            full = os.path.join(cwd, path)
            if "/" in path and through_proc(full):
                return f"{path!r} passes through /proc or /dev/fd, which name other files in the command's process"
            if self.secrets.covers(full):
                return f"{path!r} is among the credentials hidden from commands"
            if not self.sandboxed and base not in rules.METADATA_ONLY and self.secrets.holds(full):
                return f"{path!r} holds credentials hidden from commands, and there is no sandbox to hide them"
        return None

    def computed_argument(self, base: str, args: Sequence[Word], cwds: Cwds) -> str | None:
        """Why an argument bash computes at run time needs approval: it may be an option (unless the program
        takes any), or without the sandbox a path to a credential (unless a glob that matches none now)."""
        for word in args:
            if word.text is not None or (self.sandboxed and (base in rules.ARGUMENT_SAFE or operand_only(word))):
                continue
            if not self.sandboxed and base in rules.NO_FILES:
                continue
            plain_glob = not re.search(r"[$`]", word.raw) and (base in rules.ARGUMENT_SAFE or operand_only(word))
            if not self.sandboxed and plain_glob and self._glob_reads_ok(word, base, cwds):
                continue
            return (
                f"`{base}` gets {word.raw!r}, computed at run time: it could be an option or a path "
                "that cannot be checked"
            )
        return None

    def followed_links_problem(self, base: str, args: Sequence[Word], cwds: Cwds) -> str | None:
        """Without the sandbox, why a program that follows symlinks while it walks a tree (`grep -R`, `rg -L`,
        `diff -r`, `cp -rL`, `tar -h`) needs approval: a link under a directory it is given leads into /proc or
        to a credential (a link an earlier call made to ~ or /proc is read like any file)."""
        if self.sandboxed or not follows_links(base, args):
            return None
        starts = [w.text for w in args if w.text and not w.text.startswith("-")]
        if base in _SEARCHERS and len(starts) <= 1:
            starts.append(".")  # `grep -R PATTERN` (or `-e PATTERN` and no file) searches the working directory
        seen: set[str] = set()
        budget = [_MAX_LINK_WALK]
        for cwd in cwds:
            for start in starts:
                if cwd is None:
                    return f"`{base}` follows symlinks from a directory that cannot be followed"
                problem = self._walk_links(base, os.path.join(cwd, start), seen, budget)
                if problem is not None:
                    return problem
        return None

    def _walk_links(self, base: str, top: str, seen: set[str], budget: list[int]) -> str | None:
        if not os.path.isdir(top):
            return None
        for directory, dirs, files in os.walk(top):
            for name in dirs + files:
                budget[0] -= 1
                if budget[0] < 0:
                    return f"`{base}` follows symlinks through more than {_MAX_LINK_WALK} files, too many to check"
                path = os.path.join(directory, name)
                if not os.path.islink(path):
                    continue
                target = os.path.realpath(path)
                if through_proc(path) or self.secrets.holds(target):
                    return f"`{base}` follows the symlink {path!r} to {target!r}, into /proc or credentials"
                if os.path.isdir(target) and target not in seen:  # followed: walk where it leads too
                    seen.add(target)
                    problem = self._walk_links(base, target, seen, budget)
                    if problem is not None:
                        return problem
        return None

    def git_repository_problem(self, args: Sequence[Word], cwds: Cwds) -> str | None:
        """Why a `git` that may write its repository needs approval: the repository (its top, or the given
        `--git-dir`) is outside the roots, e.g. a root that is a subdirectory of a checkout."""
        place = gitrules.repository_place(args)
        if place is None:
            return None
        chdirs, git_dir = place
        for cwd in cwds:
            if cwd is None:
                return "`git` writes the repository of a directory that cannot be followed"
            start = os.path.join(cwd, *chdirs)
            top = os.path.join(start, git_dir) if git_dir is not None else _repository_top(start)
            if top is not None and not self.inside_roots(top):
                return f"`git` writes the repository at {top!r}, outside the roots"
        return None

    def inside_roots(self, path: str) -> bool:
        """Whether `path` (symlinks followed) is in a root, where a command may have changed it."""
        real = os.path.realpath(path)
        return any(real == str(r) or real.startswith(str(r).rstrip("/") + "/") for r in self.files.real_roots)

    def _glob_reads_ok(self, word: Word, base: str, cwds: Cwds) -> bool:
        if glob_directory(word.raw) is None or None in cwds:
            return False
        for cwd in cwds:
            assert cwd is not None
            matches = list(itertools.islice(glob.iglob(os.path.join(glob.escape(cwd), word.raw)), _MAX_GLOB + 1))
            if len(matches) > _MAX_GLOB or any(self.read_problem(m, base, [cwd]) for m in matches):
                return False
        return True


def _repository_top(start: str) -> str | None:
    """The directory holding the `.git` git would find from `start`, or None."""
    current = os.path.realpath(start)
    while True:
        if os.path.lexists(os.path.join(current, ".git")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


# program -> options with which it follows every symlink it meets while walking a tree
_FOLLOWING = {
    "grep": ("-R", "--dereference-recursive"),
    "egrep": ("-R", "--dereference-recursive"),
    "fgrep": ("-R", "--dereference-recursive"),
    "rg": ("-L", "--follow"),
    "diff": ("-r", "--recursive"),  # diff reads what links point to unless --no-dereference
    "tar": ("-h", "--dereference"),
    "cp": ("-L", "--dereference"),
    "rsync": ("-L", "--copy-links"),
}


_SEARCHERS = frozenset({"grep", "egrep", "fgrep", "rg"})


def follows_links(base: str, args: Sequence[Word]) -> bool:
    """Whether `base args` reads through every symlink under the directories it is given."""
    options = _FOLLOWING.get(base)
    if options is None:
        return False
    texts = [w.text or "" for w in args]
    if base == "diff" and "--no-dereference" in texts:
        return False
    return any(option_use(t, o) is not None for t in texts for o in options)


def glob_directory(raw: str) -> str | None:
    """For a plain glob such as `build/*.o`, the directory it expands in; None if the word has other expansions."""
    directory = os.path.dirname(raw)
    if re.search(r"[$`{}~'\"\\]", raw) or not _GLOB.search(raw) or _GLOB.search(directory):
        return None  # a glob in a directory part could walk anywhere, through any symlink
    return directory or "."


def path_candidates(text: str | None) -> list[str]:
    """The paths a literal argument may name: itself, a `--option=` value, a value attached to a short option."""
    if not text:
        return []
    found = [text]
    if text.startswith("-"):
        name, equals, value = text.partition("=")
        if equals and value:
            found.append(value)
        if not name.startswith("--"):  # `-fFILE`, `-rnfFILE`: any tail may be a value
            found += [text[i:] for i in range(2, min(len(text), _MAX_ATTACHED))]
    return found
