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


def variable_name_problem(name: str, raws: list[str]) -> str | None:
    """Why builtin `name` (with argument words `raws`, quoting kept) may evaluate a value as code, else None.

    A variable name with a subscript (`a[$i]`) or one computed at run time is evaluated arithmetically; the
    integer attribute (`declare -i`) evaluates every value assigned; `declare a=(...)` evaluates subscripts.
    """
    names: list[str] = []
    if name in VARIABLE_BUILTINS:
        for raw in raws:
            if raw[:1] in "-+":
                if "i" in raw[1:]:
                    return f"`{name} {raw}` gives a variable the integer attribute, which evaluates values as code"
                continue
            target, equals, value = raw.partition("=")
            names.append(target.removesuffix("+"))
            if equals and value.lstrip("'\"").startswith("("):
                return f"`{name} {raw}` assigns an array whose subscripts are evaluated as arithmetic"
    elif name in _NAME_TAKERS:
        valued, named = _NAME_TAKERS[name]
        index = 0
        while index < len(raws):
            raw = raws[index]
            letters = raw[1:] if raw.startswith("-") and raw != "-" else ""
            if any(ch in named for ch in letters) and index + 1 < len(raws):
                names.append(raws[index + 1])
                index += 1
            elif any(ch in valued for ch in letters):
                index += 1
            elif not letters and name == "read":
                names.append(raw)
            index += 1
    bad = next((n for n in names if not _IDENTIFIER.match(n)), None)
    if bad is not None:
        return f"`{name}` names the variable {bad!r}, whose subscript or computed name is evaluated as code"
    return None
