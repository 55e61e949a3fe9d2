"""Parse a bash command line with bashlex into the simple commands bash would run.

Everything the policy needs is extracted here, from a real parse tree, never from regexes over the raw text:
every simple command (including those inside pipes, lists, subshells, functions, loops, `$(...)`, backticks and
process substitutions), its assignments, words and redirections. Constructs bashlex cannot model faithfully are
reported as `problems`, and a line it cannot parse raises `ShellSyntaxError`, so the caller can refuse it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import bashlex  # type: ignore[import-untyped]  # bashlex ships no type hints
import bashlex.errors  # type: ignore[import-untyped]
import bashlex.subst  # type: ignore[import-untyped]

# Characters that make bash compute a word at run time (expansions, globs, brace expansion, tilde).
_DYNAMIC = re.compile(r"[$`*?\[\]{}~]")
# A parameter expansion that hides a command or process substitution bashlex does not parse.
_HIDDEN_SUBST = re.compile(r"\$\(|`|<\(|>\(")
# `${NAME=value}` / `${NAME:=value}` assigns NAME.
_PARAM_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*):?=")


MAX_LENGTH = 20_000  # bashlex is pure Python; longer lines are refused rather than parsed slowly
# What bashlex raises besides ParsingError on input it does not handle (found by fuzzing).
_PARSER_FAILURES = (
    NotImplementedError,
    AttributeError,
    TypeError,
    IndexError,
    NameError,
    KeyError,
    ValueError,
    AssertionError,
    RecursionError,
)
_bashlex_parse = cast(Callable[[str], list[Any]], bashlex.parse)  # pyright: ignore[reportUnknownMemberType]  # untyped


class ShellSyntaxError(ValueError):
    """bashlex could not parse the line (or hit a construct it does not implement)."""


def _guarded_paramexpand(parserobj: Any, string: str, sindex: int) -> tuple[Any, int]:
    """bashlex's `_paramexpand`, refusing `${` with no closing `}`: unpatched, it returns an index behind the
    start and the caller loops forever (a parse of `'${>x` never returns)."""
    node, index = _paramexpand(parserobj, string, sindex)
    if index <= sindex:
        raise bashlex.errors.ParsingError("bad substitution: no closing '}'", string, sindex)
    return node, index


# Patched once at import: a private bashlex function, because the bug is inside its parser loop.
_paramexpand = cast(
    Callable[[Any, str, int], tuple[Any, int]],
    bashlex.subst._paramexpand,  # pyright: ignore[reportPrivateUsage, reportUnknownMemberType]
)
bashlex.subst._paramexpand = _guarded_paramexpand  # pyright: ignore[reportPrivateUsage]


@dataclass(frozen=True)
class Word:
    """One shell word: `text` is its value after quote removal, or None when bash computes it at run time."""

    raw: str
    text: str | None
    tilde: bool = False  # starts with a bare `~` that bash expands to $HOME


@dataclass(frozen=True)
class Redirect:
    op: str
    target: Word | None  # None for a file-descriptor duplication such as `2>&1`

    @property
    def writes(self) -> bool:
        return self.target is not None and self.op in {">", ">>", ">|", "&>", "&>>", "<>", ">&"}


@dataclass(frozen=True)
class SimpleCommand:
    raw: str
    assignments: tuple[tuple[str, Word], ...]
    words: tuple[Word, ...]
    redirects: tuple[Redirect, ...]


@dataclass
class ParsedLine:
    commands: list[SimpleCommand] = field(default_factory=list[SimpleCommand])
    redirects: list[Redirect] = field(default_factory=list[Redirect])  # on compound commands (`{ ...; } > f`)
    problems: list[str] = field(default_factory=list[str])
    assigned: list[str] = field(default_factory=list[str])  # names set by `for NAME in` or `${NAME:=...}`
    functions: set[str] = field(default_factory=set[str])


def parse(line: str) -> ParsedLine:
    """Parse `line` into simple commands; raise ShellSyntaxError if bashlex cannot parse it faithfully."""
    if len(line) > MAX_LENGTH:
        raise ShellSyntaxError(f"{len(line)} characters is longer than the {MAX_LENGTH} that are checked")
    try:
        trees = _bashlex_parse(line)
    except (bashlex.errors.ParsingError, *_PARSER_FAILURES) as exc:
        raise ShellSyntaxError(str(exc) or type(exc).__name__) from exc
    parsed = ParsedLine()
    for tree in trees:
        _Walker(line, parsed).visit(tree)
    return parsed


class _Walker:
    def __init__(self, source: str, out: ParsedLine) -> None:
        self.source = source
        self.out = out

    def raw(self, node: Any) -> str:
        start, end = node.pos
        return self.source[start:end]

    def visit(self, node: Any) -> None:
        kind = node.kind
        if kind == "command":
            self.out.commands.append(self.command(node))
        elif kind == "function":
            self.out.functions.add(node.name.word)
        elif kind == "for":
            self.for_loop(node)
        elif kind == "parameter":
            self.parameter(node)
        elif kind == "redirect" and getattr(node, "heredoc", None) is not None:
            self.heredoc(node)
        redirects: list[Any] = getattr(node, "redirects", None) or []
        for redirect in redirects:
            self.out.redirects.append(self.redirect(redirect))
        for child in _children(node):
            self.visit(child)

    def command(self, node: Any) -> SimpleCommand:
        assignments: list[tuple[str, Word]] = []
        words: list[Word] = []
        redirects: list[Redirect] = []
        for part in node.parts:
            if part.kind == "assignment" and not words:
                name, _, _ = part.word.partition("=")
                assignments.append((name.rstrip("+"), self.word(part)))
            elif part.kind == "redirect":
                redirects.append(self.redirect(part))
            elif part.kind in ("word", "assignment"):
                words.append(self.word(part))
        return SimpleCommand(self.raw(node), tuple(assignments), tuple(words), tuple(redirects))

    def word(self, node: Any) -> Word:
        raw = self.raw(node)
        parts = list(getattr(node, "parts", None) or [])
        if not parts and not _DYNAMIC.search(raw) and raw.isprintable():
            return Word(raw, node.word)
        if raw.startswith("~/") and [p.kind for p in parts] == ["tilde"] and not _DYNAMIC.search(raw[1:]):
            return Word(raw, node.word, tilde=True)
        return Word(raw, None)

    def redirect(self, node: Any) -> Redirect:
        output = node.output
        target = self.word(output) if not isinstance(output, int) else None
        if node.type in ("<<", "<<-", "<<<"):
            target = None  # reads only; here-doc bodies are checked in heredoc()
        return Redirect(node.type, target)

    def heredoc(self, node: Any) -> None:
        delimiter = self.raw(node.output)
        quoted = any(ch in delimiter for ch in "'\"\\")
        if not quoted and _HIDDEN_SUBST.search(node.heredoc.value):
            self.out.problems.append("a here-document runs a command substitution")

    def parameter(self, node: Any) -> None:
        value = getattr(node, "value", "") or ""
        if _HIDDEN_SUBST.search(value):
            self.out.problems.append(f"the parameter expansion ${{{value}}} hides a command substitution")
        match = _PARAM_ASSIGN.match(value)
        if match:
            self.out.assigned.append(match.group(1))

    def for_loop(self, node: Any) -> None:
        words = [p for p in node.parts if p.kind == "word"]
        if words:
            self.out.assigned.append(words[0].word)


def _children(node: Any) -> list[Any]:
    """Every child node, whatever attribute bashlex keeps it in."""
    children: list[Any] = []
    for attr in ("parts", "list", "command", "output", "heredoc", "redirects"):
        value = getattr(node, attr, None)
        if isinstance(value, list):
            children.extend(v for v in cast(list[Any], value) if hasattr(v, "kind"))
        elif hasattr(value, "kind"):
            children.append(value)
    return children
