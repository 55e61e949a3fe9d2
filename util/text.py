"""Text from others shown to a person: control characters made visible, so it cannot restyle or redraw the screen."""

from __future__ import annotations

import re

# C0 controls but tab and newline, DEL, C1 controls, and the bidirectional overrides and isolates (which reorder
# what follows them on screen, as in "Trojan Source").
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def escape_controls(text: str) -> str:
    """`text` with every control character written out as its escape (`\\x1b`, `\\u202e`); tabs and newlines stay.

    A terminal obeys an ESC sequence in a command or a server's message: it can clear the approval prompt and print
    a harmless-looking one in its place, or recolour a warning away. Shown escaped, the sequence is just text."""
    return _CONTROLS.sub(_escaped, text)


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"
