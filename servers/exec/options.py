"""How getopt-style programs read their options, so the policy sees `-oFILE`, `-ro FILE` and `--output=FILE` as
`-o`/`--output` with the value FILE, and an option it does not know is a miss rather than a guess."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .shell import Word, operand_only


@dataclass(frozen=True)
class OptionSpec:
    """The options a program may be given: plain flags, options with a value (next word or attached), and
    options whose value may only be attached (`-i.bak`, `--check=quiet`). `permute`: GNU programs read options
    after operands too; the others stop at the first operand (`xargs -0 cmd -x`: `-x` is cmd's)."""

    flags: frozenset[str]
    valued: frozenset[str]
    optional: frozenset[str] = frozenset()
    permute: bool = True
    numeric: bool = False  # `head -20`


def spec(text: str, *, permute: bool = True, numeric: bool = False) -> OptionSpec:
    """`"-n --reverse -k= --key= -i? --in-place?"`: `=` takes a value, `?` takes an attached one only."""
    words = text.split()
    return OptionSpec(
        frozenset(w for w in words if w[-1] not in "=?"),
        frozenset(w[:-1] for w in words if w.endswith("=")),
        frozenset(w[:-1] for w in words if w.endswith("?")),
        permute,
        numeric,
    )


@dataclass
class Parsed:
    """Options as the program reads them: (name, value or None) in order, then the operands."""

    problem: str | None = None
    options: list[tuple[str, Word | None]] = field(default_factory=list[tuple[str, Word | None]])
    operands: list[Word] = field(default_factory=list[Word])

    def values(self, *names: str) -> list[Word]:
        return [value for name, value in self.options if name in names and value is not None]

    def has(self, *names: str) -> bool:
        return any(name in names for name, _ in self.options)


def parse_options(program: str, args: Sequence[Word], options: OptionSpec) -> Parsed:
    """Read `args` the way getopt_long would; `problem` names the first word it cannot account for (an unknown
    option, or one computed at run time where an option could be)."""
    out = Parsed()
    index, done = 0, False
    while index < len(args):
        word, index = args[index], index + 1
        text = word.text
        if done or text == "-" or (text is None and operand_only(word)) or (text is not None and text[:1] != "-"):
            out.operands.append(word)
            done = done or not options.permute
            continue
        if text is None:
            out.problem = f"`{program}` gets {word.raw!r}, computed at run time where an option may stand"
            return out
        if text == "--":
            done = True
            continue
        if text.startswith("--"):
            name, equals, value = text.partition("=")
            if name in options.valued or (name in options.optional and equals):
                if not equals and index >= len(args):
                    out.problem = f"`{program} {name}` has no value"
                    return out
                out.options.append((name, Word(word.raw, value) if equals else args[index]))
                index += 0 if equals else 1
            elif (name in options.flags and not equals) or name in options.optional:
                out.options.append((name, None))
            else:
                out.problem = f"`{program} {name}` is not an option the policy knows to be safe"
                return out
            continue
        if options.numeric and text[1:].isdigit():
            continue
        index = _cluster(program, word, args, index, options, out)
        if out.problem:
            return out
    return out


def _cluster(program: str, word: Word, args: Sequence[Word], index: int, options: OptionSpec, out: Parsed) -> int:
    """Read one cluster of short options (`-rn`, `-ofile`, `-k 2`); returns the index of the next word."""
    text = word.text or ""
    for position in range(1, len(text)):
        name, rest = "-" + text[position], text[position + 1 :]
        if name in options.valued:
            if rest:
                out.options.append((name, Word(word.raw, rest)))
                return index
            if index >= len(args):
                out.problem = f"`{program} {name}` has no value"
                return index
            out.options.append((name, args[index]))
            return index + 1
        if name in options.optional:
            out.options.append((name, Word(word.raw, rest) if rest else None))
            return index
        if name not in options.flags:
            out.problem = f"`{program} {name}` is not an option the policy knows to be safe"
            return index
        out.options.append((name, None))
    return index


def option_use(text: str, option: str) -> str | None:
    """How the word `text` uses `option`: None if not at all, "" if its value is the next word, else the attached
    value. Long options may be abbreviated (`--out=F`), short ones clustered with others (`-ro F`, `-oF`)."""
    if option.startswith("--"):
        name, equals, value = text.partition("=")
        if len(name) > 2 and name.startswith("--") and option.startswith(name):
            return value if equals else ""
        return None
    if text.startswith("-") and not text.startswith("--") and option[1] in text[1:]:
        return text[text.index(option[1], 1) + 1 :]
    return None


def uses(texts: list[str | None], options: tuple[str, ...]) -> bool:
    """Whether any word uses one of `options` (a word computed at run time might)."""
    return any(t is None or any(option_use(t, o) is not None for o in options) for t in texts)
