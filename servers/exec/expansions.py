"""Which bash expansions read a variable's *value* as code, so a string the model controls can run commands.

A value never runs just by being expanded (`$x`, `"${x:-default}"`), but bash evaluates some values again:
arithmetic evaluates a variable's value as an expression, and an indexed-array subscript inside it expands
`$(...)`. So with `P='a[$(rm -rf ~)]'` (from the `env` argument, a file, or a literal), `${a[P]}`, `${x:1:P}`,
`${!P}` (indirection), `${P@P}` (prompt expansion), `((x=P))`, `declare -i n=$P`, `printf -v "$P"`,
`test -v "$P"` and `RANDOM=$P` all run `rm`. The policy only lets through the expansion forms that never
re-read a value; the builtins that take variable names are checked in policy.py.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# `name` (with a literal subscript, or `[@]`/`[*]` for the whole array), a positional or a special parameter.
_NAME = r"(?:[A-Za-z_][A-Za-z0-9_]*(?:\[(?:[0-9]+|[@*])\])?|[0-9]+|[@*#?$!0-])"
# `${!prefix*}` and `${!array[@]}` list names or keys; every other `${!...}` is indirection.
_NAMES = r"![A-Za-z_][A-Za-z0-9_]*(?:[@*]|\[[@*]\])"
# After the name: nothing, an operator whose operand is only expanded (`:-`, `#`, `/`, `^^`, `@Q`, ...),
# or a substring whose offset and length are literal numbers.
_SAFE_PARAMETER = re.compile(
    rf"^(?:{_NAMES}|#?{_NAME}"
    r"(?:(?::?[-=?+]|##?|%%?|//?|/[#%]|\^\^?|,,?)[\s\S]*|@[QEAaUuLKk]|:[\s0-9-]*(?::[\s0-9-]*)?)?)$"
)
_HIDDEN_SUBST = re.compile(r"\$\(|`|<\(|>\(|\$\[")


def parameter_problem(value: str) -> str | None:
    """Why the parameter expansion `${value}` may run code, or None when it only expands values."""
    if not value:
        return 'a `$"..."` string is replaced through the locale\'s message catalog, which cannot be checked'
    if _HIDDEN_SUBST.search(value):
        return f"the parameter expansion ${{{value}}} hides a command substitution"
    if "${" in value:
        return f"the nested parameter expansion ${{{value}...}} cannot be checked"
    if not _SAFE_PARAMETER.match(value):
        return (
            f"the parameter expansion ${{{value}}} evaluates a value as an arithmetic expression, a variable name "
            "or a prompt, which can run commands"
        )
    return None


def heredoc_problem(body: str) -> str | None:
    """Why an unquoted here-document body may run code (bash expands it like a double-quoted string)."""
    if _HIDDEN_SUBST.search(body):
        return "a here-document runs a command substitution"
    for match in re.finditer(r"\$\{([^}]*)\}?", body):
        problem = parameter_problem(match.group(1))
        if problem is not None:
            return "a here-document has " + problem.removeprefix("the ")
    return None


_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# builtin -> (options whose next word is a value, options whose next word is a variable name)
_NAME_TAKERS: dict[str, tuple[str, str]] = {
    "read": ("dinNptu", "a"),
    "printf": ("", "v"),
    "test": ("", "vR"),
    "[": ("", "vR"),
    "wait": ("", "p"),
}
# Builtins that set variables (rules.py allows them unless they name a protected variable).
VARIABLE_BUILTINS = frozenset({"export", "unset", "local", "declare", "typeset", "readonly"})


def variable_name_problem(name: str, words: list[tuple[str, str | None]]) -> str | None:
    """Why builtin `name` (with argument words as (raw, text); text None when computed) may evaluate a value as
    code, else None.

    A variable name with a subscript (`a[$i]`) or one computed at run time is evaluated arithmetically; the
    integer attribute (`declare -i`) evaluates every value assigned; `declare a=(...)` evaluates subscripts.
    Options are read after quote removal (`-v"x"` is `-v` with the name `x`), and a word computed where an
    option may stand (`test $'-v' 'a[$(...)]'`) is a problem unless nothing after it could be a subscript.
    """
    if name in _NAME_TAKERS:
        return _name_taker_problem(name, words)
    names: list[str] = []
    if name in VARIABLE_BUILTINS:
        for raw, _ in words:  # quoting kept: a computed word is never an identifier here
            if raw[:1] in "-+":
                if "i" in raw[1:]:
                    return f"`{name} {raw}` gives a variable the integer attribute, which evaluates values as code"
                continue
            target, equals, value = raw.partition("=")
            names.append(target.removesuffix("+"))
            if equals and value.lstrip("'\"").startswith("("):
                return f"`{name} {raw}` assigns an array whose subscripts are evaluated as arithmetic"
    return _bad_name(name, names)


def _bad_name(name: str, names: Sequence[str | None]) -> str | None:
    bad = next((n for n in names if n is None or not _IDENTIFIER.match(n)), "")
    if bad != "":
        shown = "a name computed at run time" if bad is None else f"the variable {bad!r}"
        return f"`{name}` names {shown}, whose subscript or computed name is evaluated as code"
    return None


def _name_taker_problem(name: str, words: list[tuple[str, str | None]]) -> str | None:
    """`read`, `printf -v`, `test -v`/`-R`, `wait -p`: the names they take must be plain identifiers."""
    valued, named = _NAME_TAKERS[name]
    names: list[str | None] = []
    index, options_done = 0, False
    while index < len(words):
        raw, text = words[index]
        if text is None:
            if not _computed_is_harmless(name, words, index, options_done):
                return (
                    f"`{name}` gets {raw!r}, computed at run time where an option such as `-v` may stand (it "
                    "would evaluate the next word's subscript as code)"
                )
            options_done = options_done or name == "printf"  # the format: printf reads no options after it
            if name == "read":
                names.append(None)  # an option's value was skipped with it: this is a name
            index += 1
            continue
        if name in ("test", "["):
            if text in ("-v", "-R"):
                names.append(words[index + 1][1] if index + 1 < len(words) else "")
                index += 1
        elif not options_done and text == "--":
            options_done = True
        elif not options_done and text.startswith("-") and text != "-":
            index += _options(text[1:], words[index + 1][1] if index + 1 < len(words) else "", named, valued, names)
        else:
            options_done = True
            if name == "read":
                names.append(text)
        index += 1
    return _bad_name(name, names)


def _options(letters: str, following: str | None, named: str, valued: str, names: list[str | None]) -> int:
    """Read one getopt cluster (`-rp`, `-vNAME`, `-v NAME`); returns 1 when it took the next word as its value."""
    for position, letter in enumerate(letters):
        if letter in named or letter in valued:
            attached = letters[position + 1 :]
            if letter in named:
                names.append(attached or following)
            return 0 if attached else 1
    return 0


_BINARY = frozenset(
    ("=", "==", "!=", "<", ">", "-eq", "-ne", "-lt", "-le", "-gt", "-ge", "-nt", "-ot", "-ef", "-a", "-o")
)
# what may stand before an operand of `test` (the unary operators but -v and -R, which take a variable's name)
_TEST_OPERATORS = _BINARY | frozenset(f"-{letter}" for letter in "nzbcdefghkprstuwxGLNOS") | {"!"}
_PLAIN = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_]*|-?[0-9]+|\])$")


def _computed_is_harmless(name: str, words: list[tuple[str, str | None]], index: int, options_done: bool) -> bool:
    """Whether a word computed at run time cannot become an option that takes the next word as a variable name:
    it stands where no option can, or nothing after it could be a subscript. It must not split into several
    words (one double-quoted string without `@`), or it could carry its own `-v 'a[$(...)]'`."""
    raw = words[index][0]
    single = len(raw) > 1 and raw[0] == raw[-1] == '"' and '"' not in raw[1:-1] and "@" not in raw
    if name != "printf" and not single:
        return False
    if options_done and name in ("printf", "wait"):
        return True  # an argument, never an option
    before = words[index - 1][1] if index else None
    after = words[index + 1][1] if index + 1 < len(words) else None
    if name in ("test", "[") and (before in _TEST_OPERATORS or after in _BINARY):
        return True
    if not single:
        return False
    return all(text is not None and _PLAIN.match(text) for _, text in words[index + 1 :])
