"""Reading what the CLI prints in a test."""

from __future__ import annotations

import re


def flowing(output: str) -> str:
    """Doctor's table as one line of words: its cells wrap at any width."""
    return " ".join(re.sub("[│┃]", " ", output).split())
