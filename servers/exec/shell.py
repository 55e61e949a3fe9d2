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

from .expansions import heredoc_problem, parameter_problem

# Characters that make bash compute a word at run time (expansions, globs, brace expansion: a `{` before a `,` or
# `..`; a tilde that starts the word or follows `=`/`:`; `HEAD~1`, `{}` and `[` are literal).
_DYNAMIC = re.compile(r"[$`*?]|\[.*\]|\{.*(?:,|\.\.)|(?:^|[=:])~")
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


def _unquoted(raw: str) -> str:
    """The characters of `raw` that bash may still expand: outside quotes, plus `$` and backquotes inside double
    quotes (`'*.py'` is literal, `"$x"` is not)."""
    out: list[str] = []
    index, double = 0, False
    while index < len(raw):
        char = raw[index]
        if char == "\\":
            index += 2
            continue
        if char == '"':
            double = not double
        elif char == "'" and not double:
            close = raw.find("'", index + 1)
            index = len(raw) if close < 0 else close + 1
            continue
        elif not double or char in "$`":
            out.append(char)
        index += 1
    return "".join(out)


def _dequote(raw: str) -> str | None:
    """Quote removal as bash does it for a word without expansions (None if it has one), to check bashlex's:
    it reads `""'-e'` as `'-e'` where bash passes `-e` (found by the differential fuzzer)."""
    out: list[str] = []
    index, length = 0, len(raw)
    while index < length:
        char = raw[index]
        if char == "\\":
            out.append(raw[index + 1 : index + 2] if raw[index + 1 : index + 2] != "\n" else "")
            index += 2
        elif char == "'":
            close = raw.find("'", index + 1)
            if close < 0:
                return None
            out.append(raw[index + 1 : close])
            index = close + 1
        elif char == '"':
            index += 1
            while index < length and raw[index] != '"':
                if raw[index] == "\\" and raw[index + 1 : index + 2] in ("$", "`", '"', "\\", "\n"):
                    out.append("" if raw[index + 1] == "\n" else raw[index + 1])
                    index += 2
                elif raw[index] in "$`":
                    return None
                else:
                    out.append(raw[index])
                    index += 1
            if index >= length:
                return None
            index += 1
        elif char in "$`":
            return None
        else:
            out.append(char)
            index += 1
    return "".join(out)


def operand_only(word: Word) -> bool:
    """Whether `word`, even when bash computes it, stays an operand: it starts with a literal character that is
    not `-` and cannot split (no `$` or backquote), so a glob or brace expansion yields words like `src/a.py`."""
    raw = word.raw
    return bool(raw) and (raw[0].isalnum() or raw[0] in "./_") and not re.search(r"[$`]", raw)


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
    calls: dict[str, set[str]] = field(default_factory=dict[str, set[str]])  # function -> names its body runs


def parse(line: str) -> ParsedLine:
    """Parse `line` into simple commands; raise ShellSyntaxError if bashlex cannot parse it faithfully."""
    if len(line) > MAX_LENGTH:
        raise ShellSyntaxError(f"{len(line)} characters is longer than the {MAX_LENGTH} that are checked")
    try:
        trees = _bashlex_parse(line)
    except (bashlex.errors.ParsingError, *_PARSER_FAILURES) as exc:
        raise ShellSyntaxError(str(exc) or type(exc).__name__) from exc
    parsed = ParsedLine()
    try:
        for tree in trees:
            _Walker(line, parsed).visit(tree)
        missed = _uncovered(line, trees)
    except _PARSER_FAILURES as exc:  # a tree shape the walker does not know: not checkable
        raise ShellSyntaxError(f"unexpected parse tree ({type(exc).__name__})") from exc
    if missed is not None:
        parsed.problems.append(f"the parser did not account for {missed!r}, which bash would still read")
    recursive = sorted(f for f in parsed.functions if f in _reachable(f, parsed.calls))
    if recursive:
        parsed.problems.append(f"the function {recursive[0]} calls itself; recursion can fork without bound")
    return parsed


def _reachable(start: str, calls: dict[str, set[str]]) -> set[str]:
    """Every name the function `start` may run, directly or through other functions."""
    seen: set[str] = set()
    stack = list(calls.get(start, ()))
    while stack:
        name = stack.pop()
        if name not in seen:
            seen.add(name)
            stack.extend(calls.get(name, ()))
    return seen


class _Walker:
    def __init__(self, source: str, out: ParsedLine) -> None:
        self.source = source
        self.out = out
        self.scopes: list[str] = []  # enclosing function names, and "" for loops

    def raw(self, node: Any) -> str:
        start, end = node.pos
        return self.source[start:end]

    def visit(self, node: Any) -> None:
        kind = node.kind
        scope = None
        if kind == "command":
            command = self.command(node)
            self.out.commands.append(command)
            function = next((s for s in reversed(self.scopes) if s), None)
            if function is not None and command.words:
                self.out.calls.setdefault(function, set()).add(command.words[0].text or "")
        elif kind == "function":
            self.out.functions.add(node.name.word)
            scope = node.name.word
        elif kind in ("for", "while", "until"):
            scope = ""
            if kind == "for":
                self.for_loop(node)
        elif kind == "operator" and node.op == "&" and self.scopes:
            self.out.problems.append("it starts background processes in a loop or function, which can multiply")
        elif kind == "parameter":
            self.parameter(node)
        elif kind in ("word", "assignment") and not self.expansions_parsed(node):
            self.out.problems.append(f"bashlex did not parse every expansion in {self.raw(node)!r}")
        elif kind == "compound" and self.raw(node).startswith("(("):
            self.out.problems.append("an arithmetic command `((...))` can run code hidden in a variable's value")
        elif kind == "redirect" and getattr(node, "heredoc", None) is not None:
            self.heredoc(node)
        redirects: list[Any] = getattr(node, "redirects", None) or []
        for redirect in redirects:
            self.out.redirects.append(self.redirect(redirect))
        if scope is not None:
            self.scopes.append(scope)
        for child in _children(node):
            self.visit(child)
        if scope is not None:
            self.scopes.pop()

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
        if not parts and not _DYNAMIC.search(_unquoted(raw)) and raw.isprintable():
            return Word(raw, node.word if _dequote(raw) == node.word else None)
        if raw.startswith("~/") and [p.kind for p in parts] == ["tilde"] and not _DYNAMIC.search(raw[1:]):
            return Word(raw, node.word, tilde=True)
        return Word(raw, None)

    def redirect(self, node: Any) -> Redirect:
        output = node.output
        target = self.word(output) if hasattr(output, "pos") else None  # an fd number, or `-` for `>&-`
        if node.type in ("<<", "<<-", "<<<"):
            target = None  # reads only; here-doc bodies are checked in heredoc()
        return Redirect(node.type, target)

    def expansions_parsed(self, node: Any) -> bool:
        """Whether every `$(`, `${`, backquote and `<(`/`>(` bash would expand in the word is a node bashlex
        parsed (and so is checked); bashlex folds some into other nodes: `~$(rm x)` is one tilde to it."""
        starts: dict[int, int] = {}
        stack = list(_children(node))
        while stack:
            child = stack.pop()
            if child.kind in _EXPANSIONS:
                starts[child.pos[0]] = child.pos[1]
            stack.extend(_children(child))
        start, end = node.pos
        return all(index in starts for index in _expansion_openers(self.source, start, end, starts))

    def heredoc(self, node: Any) -> None:
        delimiter = self.raw(node.output)
        if any(ch in delimiter for ch in "'\"\\"):  # bash ends `<<E\OF` at `EOF`, bashlex at `E\OF`
            self.out.problems.append(
                f"the here-document delimiter {delimiter!r} has quotes or backslashes, so where its body ends "
                "cannot be checked"
            )
            return
        problem = heredoc_problem(node.heredoc.value)
        if problem is not None:
            self.out.problems.append(problem)

    def parameter(self, node: Any) -> None:
        value = getattr(node, "value", "") or ""
        if not value and self.source[node.pos[1] : node.pos[1] + 1] == "'":
            return  # bashlex reports ANSI-C quoting `$'\t'` as an empty parameter: a literal
        problem = parameter_problem(value)
        if problem is not None:
            self.out.problems.append(problem)
        match = _PARAM_ASSIGN.match(value)
        if match:
            self.out.assigned.append(match.group(1))

    def for_loop(self, node: Any) -> None:
        words = [p for p in node.parts if p.kind == "word"]
        if words:
            self.out.assigned.append(words[0].word)


_EXPANSIONS = frozenset({"parameter", "commandsubstitution", "processsubstitution"})


def _expansion_openers(source: str, start: int, end: int, skip: dict[int, int]) -> list[int]:
    """Offsets in `source[start:end]` (one word) where bash starts a command, process or `${` substitution:
    outside single quotes and `$'...'`, not escaped; the spans in `skip` (parsed expansions) are jumped over."""
    found: list[int] = []
    index, quoted = start, False
    while index < end:
        char = source[index]
        if index in skip:
            found.append(index)
            index = max(skip[index], index + 1)
        elif char == "\\":
            index += 2
        elif not quoted and source.startswith("$'", index):
            index = _ansi_c_end(source, index + 2, end)
        elif not quoted and char == "'":
            close = source.find("'", index + 1, end)
            index = end if close < 0 else close + 1
        elif char == '"':
            quoted, index = not quoted, index + 1
        elif source.startswith(("$(", "${", "<(", ">("), index) or char == "`":
            found.append(index)
            index += 1
        else:
            index += 1
    return found


def _ansi_c_end(source: str, index: int, end: int) -> int:
    """Just past the `'` that closes a `$'...'` string whose body starts at `index` (`\\'` does not close it)."""
    while index < end and source[index] != "'":
        index += 2 if source[index] == "\\" else 1
    return index + 1


def _uncovered(source: str, trees: list[Any]) -> str | None:
    """Text of `source` that no parsed node accounts for (comments, blanks and line continuations aside), or
    None. bashlex can end a `$(` at a newline and silently drop the rest (`$(ls\nrm x)`): bash would run it."""
    covered = bytearray(len(source))
    wrong: list[int] = []

    def mark(start: int, end: int, value: int = 1) -> None:
        covered[start:end] = bytes([value]) * (end - start)

    def walk(node: Any) -> None:
        kind = node.kind
        if kind in ("word", "assignment", "operator", "reservedword", "pipe", "heredoc", "redirect"):
            mark(*node.pos)
        if kind in ("word", "assignment"):
            for sub in _substitutions(node):
                start, end = sub.pos
                mark(start, end, 0)
                opener, closer = (1, "`") if source[start] == "`" else (2, ")")
                mark(start, start + opener)
                if source[end - 1 : end] != closer:
                    wrong.append(start)
                mark(end - 1, end)
                walk(sub.command)
            return
        for child in _children(node):
            if kind == "redirect" and child.kind == "word":
                mark(child.pos[0], child.pos[1], 0)
            walk(child)

    for tree in trees:
        walk(tree)
    if wrong:
        return source[wrong[0] : wrong[0] + 40]
    index = 0
    while index < len(source):
        char = source[index]
        if covered[index] or char in " \t\n":
            index += 1
        elif source.startswith("\\\n", index):
            index += 2
        elif char == "#":
            newline = source.find("\n", index)
            index = len(source) if newline < 0 else newline
        else:
            return source[index : index + 40]
    return None


def _substitutions(word: Any) -> list[Any]:
    """The command and process substitutions directly inside a word (not inside those)."""
    found: list[Any] = []
    stack = list(_children(word))
    while stack:
        child = stack.pop()
        if child.kind in ("commandsubstitution", "processsubstitution"):
            found.append(child)
        else:
            stack.extend(_children(child))
    return found


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
