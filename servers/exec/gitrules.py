"""When an allowed `git` would run another program or write outside the roots.

git runs programs its configuration names (`alias.x = !cmd`, editors, diff and filter drivers, ...). Three
layers keep an allowed `git` from becoming a launcher: the child environment pins the global knobs
(environment.GIT_HARDENING, `GIT_EDITOR=:`), the policy refuses writes into git's own files (any `.git` path,
see policy.py), and this module reads the command line: only known subcommands pass, without the options that
name a program, a template or another git directory, and the paths git writes are checked against the roots.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .gitoptions import SPECS
from .options import option_use, parse_options, spec
from .shell import Word

# Options before the subcommand that configure git itself, or point it at code (named for the refusal message);
# any other option there that is not in _GLOBAL_FLAGS or _GLOBAL_VALUED is a miss too.
_GLOBAL_RISKS = frozenset({"-c", "--config-env", "--exec-path", "--upload-pack", "--receive-pack", "-u", "--bare"})
_GLOBAL_VALUED = frozenset({"-C", "--git-dir", "--work-tree", "--namespace"})
_GLOBAL_FLAGS = frozenset(
    [
        "--no-pager",
        "-P",
        "--no-replace-objects",
        "--literal-pathspecs",
        "--glob-pathspecs",
        "--noglob-pathspecs",
        "--icase-pathspecs",
        "--no-optional-locks",
        "--version",
    ]
)
# Subcommands that change the working tree, so they may create symlinks (see rules.makes_links).
_WORKTREE = frozenset(
    [
        "apply",
        "am",
        "checkout",
        "switch",
        "restore",
        "reset",
        "merge",
        "pull",
        "rebase",
        "cherry-pick",
        "revert",
        "stash",
        "clone",
        "worktree",
        "submodule",
        "read-tree",
        "checkout-index",
        "sparse-checkout",
        "bisect",
        "mv",
    ]
)
# Subcommands that only read or change the repository (external `git-*` helpers and aliases are misses).
_SAFE_SUBCOMMANDS = (
    "add am annotate apply archive bisect blame branch bundle cat-file check-attr check-ignore checkout "
    "cherry cherry-pick clean clone commit config count-objects describe diff diff-files diff-index diff-tree "
    "fetch for-each-ref format-patch fsck gc grep hash-object init log ls-files ls-remote ls-tree merge "
    "merge-base mv name-rev notes pull push range-diff rebase reflog remote repack reset restore rev-list "
    "rev-parse revert rm shortlog show show-branch show-ref sparse-checkout stash status submodule switch tag "
    "var verify-commit verify-tag version whatchanged worktree"
)
_SUBCOMMANDS = frozenset(_SAFE_SUBCOMMANDS.split())
# Options (after the subcommand) that make git run a program, copy a template or use another git directory.
_RISKY_OPTIONS = {
    "clone": ("-c", "--config", "-u", "--upload-pack", "--template", "--separate-git-dir"),
    "init": ("--template", "--separate-git-dir"),
    "fetch": ("--upload-pack",),
    "pull": ("--upload-pack",),
    "ls-remote": ("-u", "--upload-pack"),
    "push": ("--receive-pack", "--exec"),
    "archive": ("--exec",),
    "rebase": ("-x", "--exec"),
    "grep": ("-O", "--open-files-in-pager"),
    "apply": ("--unsafe-paths",),
    "am": ("--exec",),
}
_RISKY_ACTIONS = {"bisect": "run", "submodule": "foreach"}
# `git config` may only read. git stops reading options at the first operand (`git config KEY VALUE --get` sets
# KEY), so the options come first; `--file`/`--blob` (a file named `--list` can be a symlink `git apply` made to
# .git/config) and every option that writes are off this list, as are abbreviations.
_CONFIG = spec(
    "-l -z --list --null --show-origin --show-scope --name-only --bool --int --bool-or-int --path --expiry-date "
    "--includes --no-includes --local --worktree --global --system --get --get-all --get-regexp --get-urlmatch "
    "--get-color --get-colorbool --type= --default=",
    permute=False,
)
# action -> how many operands a read takes ("": no action, `git config KEY`)
_CONFIG_READS = {
    "": (1, 1),
    "-l": (0, 0),
    "--list": (0, 0),
    "--get": (1, 2),
    "--get-all": (1, 2),
    "--get-regexp": (1, 2),
    "--get-urlmatch": (2, 2),
    "--get-color": (1, 2),
    "--get-colorbool": (1, 2),
}
# Subcommands that reach another repository, and where its URL stands among their operands. A local one (a path,
# `file://`) runs that repository's upload-pack or receive-pack, and so its hooks, without this environment.
_TRANSPORTS = {"push": 0, "fetch": 0, "pull": 0, "ls-remote": 0, "clone": 0}
# Options whose value is a path git writes.
_OUTPUT_OPTIONS = ("-o", "--output", "--output-directory")
_WRITES_OUTPUT = frozenset(
    {
        "log",
        "diff",
        "show",
        "format-patch",
        "archive",
        "whatchanged",
        "range-diff",
        "diff-tree",
        "diff-index",
        "diff-files",
    }
)


def reason(args: Sequence[Word]) -> str | None:
    """Why `git args` needs approval, or None."""
    sub, rest = _split(args)
    before = args[: len(args) - len(rest) - (sub is not None)]
    for word in before:
        text = word.text
        if text is None:
            return "`git` has an argument computed at run time"
        option = text.split("=", 1)[0]
        if option in _GLOBAL_RISKS:
            return f"`git {option}` can make git run arbitrary programs or read a repository the model wrote"
        if option.startswith("-") and option not in _GLOBAL_FLAGS | _GLOBAL_VALUED:
            return f"`git {option}` is not an option the policy knows to be safe"
    git_dir = _git_dir(before)
    if git_dir is not None and (git_dir.text is None or git_dir.text.rstrip("/").rsplit("/", 1)[-1] != ".git"):
        return f"`git --git-dir {git_dir.raw}` uses a directory whose config can make git run programs"
    if sub is None:
        return None
    if sub not in _SUBCOMMANDS:
        return f"`git {sub}` is not a subcommand known to be safe (an alias or external helper may run programs)"
    texts = [w.text for w in rest]
    if None in texts:
        return f"`git {sub}` has an argument computed at run time"
    words = [t for t in texts if t is not None]
    if "--help" in words:
        return "`git --help` runs the manual viewer"
    for option in _RISKY_OPTIONS.get(sub, ()):
        if any(option_use(w, option) is not None for w in words):
            return f"`git {sub} {option}` can make git run a program or use files the model wrote"
    if _RISKY_ACTIONS.get(sub) in words:
        return f"`git {sub} {_RISKY_ACTIONS[sub]}` runs a shell command"
    if sub == "config":
        return _config_problem(rest)
    options = SPECS.get(sub)
    if options is None:
        flagged = next((w for w in words if w.startswith("-")), None)
        return None if flagged is None else f"`git {sub} {flagged}`: no option of `git {sub}` is known to be safe"
    return parse_options(f"git {sub}", rest, options).problem


def _config_problem(rest: Sequence[Word]) -> str | None:
    """Why `git config REST` may write (anything but a read this module can account for), or None."""
    parsed = parse_options("git config", rest, _CONFIG)
    if parsed.problem is not None:
        return f"{parsed.problem}; only reads of git's config pass (`git config --get KEY`, `--list`)"
    actions = [name for name, _ in parsed.options if name in _CONFIG_READS]
    low, high = _CONFIG_READS[actions[0] if actions else ""] if len(actions) <= 1 else (1, 0)
    operands = [w.text or "" for w in parsed.operands]
    if not low <= len(operands) <= high or (not actions and "." not in operands[0]):
        return "`git config` that sets a value can make git run arbitrary programs (only `--get KEY`, `--list` pass)"
    return None


def named_repository(args: Sequence[Word]) -> str | None:
    """The repository or remote a transport subcommand names (`git push X`, `--repo=X`, `clone X`, `submodule add
    X`), or None when it names none (it uses the configured remotes)."""
    sub, rest = _split(args)
    options = SPECS.get(sub or "")
    if sub is None or options is None:
        return None
    parsed = parse_options(f"git {sub}", rest, options)
    texts = [w.text or "" for w in parsed.operands]
    repo = [w.text or "" for w in parsed.values("--repo")]
    if sub == "submodule" and texts[:1] == ["add"]:
        return texts[1] if len(texts) > 1 else None
    index = _TRANSPORTS.get(sub)
    return (repo or [None])[0] if index is None or len(texts) <= index else texts[index]


def network_url(url: str) -> bool:
    """Whether a repository argument is a URL with a host (`https://h/x`, `ssh://h/x`, `h:x`), not a path."""
    return not url.startswith("file://") and bool(re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://|^[^/]+:", url))


# Subcommands that only read the repository; every other one may write into its git directory.
_READ_ONLY = frozenset(
    [
        "log",
        "show",
        "diff",
        "blame",
        "annotate",
        "grep",
        "ls-files",
        "ls-tree",
        "rev-parse",
        "describe",
        "shortlog",
        "cat-file",
        "rev-list",
        "merge-base",
        "show-ref",
        "for-each-ref",
        "version",
        "var",
        "check-ignore",
        "check-attr",
        "count-objects",
        "name-rev",
        "show-branch",
        "cherry",
        "whatchanged",
        "range-diff",
        "diff-tree",
        "diff-index",
        "diff-files",
        "verify-commit",
        "verify-tag",
        "ls-remote",
        "config",
    ]
)


def repository_place(args: Sequence[Word]) -> tuple[list[str], str | None] | None:
    """For a `git args` that may write its repository: the `-C` directories it moves through and its
    `--git-dir` (None: found by searching upwards), so the policy can check that the repository is inside the
    roots; None when it only reads."""
    sub, rest = _split(args)
    if sub is None or sub in _READ_ONLY:
        return None
    before = args[: len(args) - len(rest) - 1]
    chdirs = [before[i + 1].text or "" for i, w in enumerate(before[:-1]) if w.text == "-C"]
    git_dir = _git_dir(before)
    return chdirs, None if git_dir is None else git_dir.text or ""


def touches_worktree(args: Sequence[Word]) -> bool:
    """Whether `git args` may write the working tree (and so create symlinks there)."""
    sub, _ = _split(args)
    return sub in _WORKTREE


def written(args: Sequence[Word]) -> list[Word]:
    """The paths `git args` writes: `-C`/`--work-tree`, clone/init/worktree targets, `--output` files."""
    paths: list[Word] = []
    index = 0
    while index < len(args):
        text = args[index].text
        if text in ("-C", "--work-tree") and index + 1 < len(args):
            paths.append(args[index + 1])
            index += 1
        elif text is not None and text.startswith("--work-tree="):
            paths.append(Word(args[index].raw, text.split("=", 1)[1]))
        index += 1
    sub, rest = _split(args)
    options = SPECS.get(sub or "")
    positional = parse_options("git", rest, options).operands if options else []
    if sub == "clone" and len(positional) >= 2:
        paths.append(positional[1])
    elif sub == "init" and positional:
        paths.append(positional[0])
    elif sub == "worktree" and positional:
        paths += positional[1:]  # `add PATH`, `move WORKTREE NEW-PATH`
    elif sub == "bundle" and len(positional) >= 2 and positional[0].text == "create":
        paths.append(positional[1])
    # A repository given by its path is written by a push, and becomes a push target as a clone's origin or a
    # remote's URL: it must be inside the roots too (a URL with a host is not a path).
    remotes = {"push": positional[:1], "clone": positional[:1], "remote": positional[2:3], "submodule": positional[1:2]}
    for word in remotes.get(sub or "", []):
        if word.text is not None and local_url(word.text):
            paths.append(Word(word.raw, word.text.removeprefix("file://")))
    if sub in _WRITES_OUTPUT:
        for i, word in enumerate(rest):
            text = word.text or ""
            name, equals, value = text.partition("=")
            if name in _OUTPUT_OPTIONS and equals:
                paths.append(Word(word.raw, value))
            elif text in _OUTPUT_OPTIONS and i + 1 < len(rest):
                paths.append(rest[i + 1])
    return paths


def local_url(url: str | None) -> bool:
    """Whether a repository argument names a local path (not a remote's name, not a URL with a host)."""
    if url is None or url.startswith("file://"):
        return url is not None
    if network_url(url):
        return False
    return "/" in url or url in (".", "..") or url.startswith("~")


def repository_options(args: Sequence[Word]) -> tuple[str | None, list[str]]:
    """The subcommand and the options before it that choose the repository and its config (`-C`, `--git-dir`,
    `--work-tree`, as literal words), so gitconfig.py can ask git for the config this call reads."""
    sub, rest = _split(args)
    before = args[: len(args) - len(rest) - (sub is not None)]
    chosen: list[str] = []
    for index, word in enumerate(before):
        text = word.text or ""
        if text in ("-C", "--git-dir", "--work-tree") and index + 1 < len(before):
            chosen += [text, before[index + 1].text or ""]
        elif text.startswith(("--git-dir=", "--work-tree=")):
            chosen.append(text)
    return sub, chosen


def uses_remotes(sub: str | None) -> bool:
    """Whether `git SUB` may reach a configured remote (whose URL may be a local repository)."""
    return sub in _TRANSPORTS or sub in ("remote", "submodule")


def _split(args: Sequence[Word]) -> tuple[str | None, Sequence[Word]]:
    """The subcommand and the words after it (None when there is no subcommand)."""
    index = 0
    while index < len(args):
        text = args[index].text
        if text is None or not text.startswith("-"):
            return text or "(computed)", args[index + 1 :]
        index += 2 if text in _GLOBAL_VALUED or text in _GLOBAL_RISKS else 1
    return None, ()


def _git_dir(args: Sequence[Word]) -> Word | None:
    for index, word in enumerate(args):
        text = word.text or ""
        if text == "--git-dir" and index + 1 < len(args):
            return args[index + 1]
        if text.startswith("--git-dir="):
            return Word(word.raw, text.split("=", 1)[1])
    return None
