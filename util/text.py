"""Text from others: control characters made visible, so it cannot restyle or redraw the screen it is shown on, and
unpaired surrogates replaced, so it can be written and sent on at all."""

from __future__ import annotations

import re
from typing import cast

_SURROGATE = re.compile("[\ud800-\udfff]")  # in a str from json.loads only an unpaired one: pairs are one character
# C0 controls but tab and newline, DEL, C1 controls, and the bidirectional overrides and isolates (which reorder
# what follows them on screen, as in "Trojan Source").
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def without_lone_surrogates(value: object) -> object:
    """`value` (JSON as Python parses it) with every unpaired UTF-16 surrogate in its strings made U+FFFD.

    `json.loads` takes `"\\ud83d"` without its other half and hands back a string that cannot be encoded: written to a
    transcript, printed or sent on, it raises, and a session holding it fails every later turn."""
    if isinstance(value, str):
        return (
            value.encode("utf-16", "surrogatepass").decode("utf-16", "replace") if _SURROGATE.search(value) else value
        )
    if isinstance(value, list):
        return [without_lone_surrogates(item) for item in cast(list[object], value)]
    if isinstance(value, dict):
        return {key: without_lone_surrogates(item) for key, item in cast(dict[str, object], value).items()}
    return value


def escape_controls(text: str) -> str:
    """`text` with every control character written out as its escape (`\\x1b`, `\\u202e`); tabs and newlines stay.

    A terminal obeys an ESC sequence in a command or a server's message: it can clear the approval prompt and print
    a harmless-looking one in its place, or recolour a warning away. Shown escaped, the sequence is just text."""
    return _CONTROLS.sub(_escaped, text)


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"
