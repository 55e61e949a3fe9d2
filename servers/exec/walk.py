"""Where a command line's programs run and what they write, read from the parse tree once for two readers.

The risk tiers (tiers.py) ask about what a line changes; the leave check (leaving.py) asks about what the sandbox
would refuse. Both need the same reading: every simple command and every command a wrapper (`env`, `xargs`,
`find -exec` ...) runs, in the directory a `cd` earlier on the line leads to, with the paths it writes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .rules import child_commands, written_paths
from .shell import Word, parse

HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})


@dataclass(frozen=True)
class Step:
    """One program the line runs: its simple command's text, its name, its arguments and the paths it writes."""

    raw: str
    name: str  # the program's file name (`/usr/bin/rm` is `rm`)
    args: tuple[Word, ...]
    writes: tuple[Word, ...]  # redirection targets, then (for well-known writers) path arguments
    cwd: str | None  # None once a `cd` made the directory unknown


def steps(command: str, workdir: Path, home: str) -> Iterator[Step]:
    """The line's steps in order; raises ShellSyntaxError when it cannot be parsed."""
    parsed = parse(command)
    cwd: str | None = str(workdir)
    for simple in parsed.commands:
        words = list(simple.words)
        if words and words[0].text == "cd":
            cwd = _cd(cwd, words[1:], home)
            continue
        redirected = tuple(r.target for r in simple.redirects if r.writes and r.target)
        yield from _program(simple.raw, words, redirected, cwd)
    outer = tuple(r.target for r in parsed.redirects if r.writes and r.target)
    if outer:
        yield Step(command, "", (), outer, cwd)


def _program(raw: str, words: list[Word], redirected: tuple[Word, ...], cwd: str | None) -> Iterator[Step]:
    name = os.path.basename(words[0].text or "") if words else ""
    args = words[1:]
    if not name:
        if redirected:
            yield Step(raw, "", (), redirected, cwd)
        return
    yield Step(raw, name, tuple(args), (*redirected, *written_paths(name, args)), cwd)
    for child in child_commands(name, args) or []:
        yield from _program(raw, child, (), cwd)


def target(word: Word, cwd: str | None, home: str) -> Path | None:
    """The real path a written word names, or None when bash computes it when the line runs."""
    text = word.text
    if text is not None and word.tilde:
        text = home + text[1:]
    if text is None or (not os.path.isabs(text) and cwd is None):
        return None
    return Path(os.path.realpath(os.path.join(cwd or "/", text)))


def harmless(word: Word) -> bool:
    """A write to a terminal or to nothing (`> /dev/null`, `2> /dev/fd/2`)."""
    text = word.text or ""
    return text in HARMLESS_TARGETS or (text.startswith("/dev/fd/") and text[8:].isdigit())


def _cd(cwd: str | None, args: list[Word], home: str) -> str | None:
    destination = args[0] if args else Word("~", "~", tilde=True)
    if cwd is None or destination.text is None or destination.text == "-":
        return None
    text = home + destination.text[1:] if destination.tilde else destination.text
    return os.path.realpath(os.path.join(cwd, text))


def shown(command: str, limit: int = 120) -> str:
    """A step as a question or refusal quotes it: on one line, at most `limit` characters."""
    command = " ".join(command.split())
    return command if len(command) <= limit else command[:limit] + "..."
