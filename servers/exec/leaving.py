"""`--ask on-leave`: inside the sandbox running is cheap, so what is asked is only what the sandbox would refuse.

A command that writes inside the roots runs unasked, even when the parser cannot prove what it is: the sandbox
is the boundary, not the parser. What the line visibly writes outside the roots is asked about, and an approval
binds just the folder it writes writable for that one call. A protected file (persona, memory, git config and
hooks) and what is hidden from commands (credentials, the server's state) are refused: the sandbox keeps them
read-only or invisible, so asking could not help. Network is not asked here: commands reach it through the
domain proxy (network.py), which asks for a new domain itself.

What the line computes when it runs (`> "$f"`) is not asked about: the sandbox refuses it if it leaves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from . import walk
from .policy import Miss, Verdict
from .protected import GIT_FILES, write_problem
from .shell import ShellSyntaxError, Word

# Empty tmpfs folders inside the sandbox: a file written straight into one stays there. A folder below them that
# exists on the host (a checkout in /tmp) is not in the sandbox, so writing it is leaving.
_PRIVATE = (Path("/tmp"), Path("/run"), Path("/var/run"))
_GIT_PROTECTED = frozenset(name for name, _ in GIT_FILES)


@dataclass(frozen=True)
class LeaveMiss(Miss):
    """A write outside the roots that is asked about; approving it makes `widen` writable for the call."""

    widen: Path = Path("/")


class Leaves:
    def __init__(self, roots: Sequence[Path], home: str, hidden: Sequence[Path], private_home: Path | None) -> None:
        self.roots = [root.resolve() for root in roots]
        self.home = home
        self.hidden = [path.resolve() for path in hidden]
        self.private = [*_PRIVATE, *([private_home] if private_home is not None else [])]

    def judge(self, verdict: Verdict, command: str, workdir: Path) -> Verdict:
        """`verdict` under on-leave: its refusal kept, its misses replaced by what leaves the sandbox."""
        return verdict if verdict.refusal is not None else self.found(command, workdir)

    def add(self, verdict: Verdict, command: str, workdir: Path) -> Verdict:
        """`verdict` of a parser mode in the sandbox, with what leaves it: asked too, so an approval can open it."""
        if verdict.refusal is not None:
            return verdict
        found = self.found(command, workdir)
        return found if found.refusal is not None else replace(verdict, misses=(*verdict.misses, *found.misses))

    def found(self, command: str, workdir: Path) -> Verdict:
        """A refusal for a protected or hidden write, else one miss per write outside the roots."""
        try:
            found = [
                self._write(step.raw, word, step.cwd)
                for step in walk.steps(command, workdir, self.home)
                for word in step.writes
            ]
        except ShellSyntaxError:
            return Verdict()  # bash reads it its own way, inside the sandbox
        refusal = next((item for item in found if isinstance(item, str)), None)
        if refusal is not None:
            return Verdict(refusal=refusal)
        return Verdict(misses=tuple(item for item in found if isinstance(item, LeaveMiss)))

    def _write(self, raw: str, word: Word, cwd: str | None) -> LeaveMiss | str | None:
        """A leave, a refusal sentence, or None when the sandbox lets the write happen."""
        real = None if walk.harmless(word) else walk.target(word, cwd, self.home)
        if real is None:
            return None
        shown = f"`{walk.shown(raw)}`"
        if any(real.is_relative_to(root) for root in self.roots):  # first: the workspace lies in a hidden home
            problem = write_problem(real, self.roots) or _git_problem(real)
            return f"{shown}: {problem}; the sandbox keeps it read-only" if problem else None
        if any(real.is_relative_to(path) for path in self.hidden):
            return f"{shown} writes {real}, which commands cannot see (credentials or the server's state)"
        widen = _folder(real)
        if widen in self.private or widen.is_relative_to("/dev"):  # a scratch file in the sandbox's own tmpfs
            return None
        if widen == Path("/"):
            return f"{shown} writes {real}, and no folder of it but / exists; create the folder first"
        reason = f"{shown} writes outside the workspace ({real}); approving makes {widen} writable for this call"
        return LeaveMiss(raw, reason, widen=widen)


def widened(verdict: Verdict) -> list[Path]:
    """The folders an approved on-leave question makes writable."""
    return sorted({miss.widen for miss in verdict.misses if isinstance(miss, LeaveMiss)})


def _folder(real: Path) -> Path:
    """The folder to bind so `real` can be written: itself when it is one, else its nearest existing parent."""
    folder = real if real.is_dir() else real.parent
    while not folder.exists():
        folder = folder.parent
    return folder


def _git_problem(real: Path) -> str | None:
    parts = real.parts
    for index, part in enumerate(parts[:-1]):
        if part == ".git" and parts[index + 1] in _GIT_PROTECTED:
            return f"{real} is a git repository's {parts[index + 1]}, which names programs git runs"
    return None
