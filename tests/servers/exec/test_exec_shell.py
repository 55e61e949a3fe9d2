"""The bashlex front end: what it extracts, and that hostile input fails fast instead of hanging or crashing."""

from __future__ import annotations

import time

import pytest

from hermitcrab.servers.exec.shell import MAX_LENGTH, ShellSyntaxError, parse

# Found by fuzzing: unpatched bashlex loops forever on the first three and raises odd exceptions on the rest.
HOSTILE = [
    "'${>done>$(case 4!33b62&-cesac);\n'esac,",
    "b[^}!#1^~']-${case ]then 6?<'.done<<$'}while ",
    "$'[${<('then case \n'#{EOFc0<<))do \"163}&7=&+$(]",
    "case x in a) rm;; esac",
    "[[ -f x ]]",
    "echo $((1+2))",
    "x" * (MAX_LENGTH + 1),
]


@pytest.mark.parametrize("line", HOSTILE)
def test_hostile_input_fails_fast(line: str) -> None:
    start = time.monotonic()
    with pytest.raises(ShellSyntaxError):
        parse(line)
    assert time.monotonic() - start < 2


def test_extracts_nested_commands_redirects_and_functions() -> None:
    parsed = parse("f() { rm a; }; { ls; } > out; echo $(id) `whoami` <(cat x) 2>&1 > log")
    assert [c.words[0].text for c in parsed.commands] == ["rm", "ls", "echo", "id", "whoami", "cat"]
    assert parsed.functions == {"f"}
    assert [r.target.text for r in parsed.redirects if r.target] == ["out"]
    echo = parsed.commands[2]
    assert [(r.op, r.target.text if r.target else None) for r in echo.redirects] == [(">&", None), (">", "log")]


def test_words_know_when_bash_computes_them() -> None:
    words = parse("r''m \"$HOME\" ~/x *.py {a,b} $'\\x41'").commands[0].words
    assert [w.text for w in words] == ["rm", None, "~/x", None, None, None]
    assert words[2].tilde


def test_hidden_substitutions_and_assignments_are_reported() -> None:
    parsed = parse("echo ${x:-$(rm a)} ${PATH:=/tmp}; for IFS in a; do :; done")
    assert parsed.problems == ["the parameter expansion ${x:-$(rm a)} hides a command substitution"]
    assert parsed.assigned == ["PATH", "IFS"]
