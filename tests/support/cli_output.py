"""Reading what the CLI prints in a test."""

from __future__ import annotations

import re


def flowing(output: str) -> str:
    """Doctor's table as one line of words: its cells wrap at any width."""
    return " ".join(re.sub("[│┃]", " ", output).split())


def table_rows(output: str) -> list[list[str]]:
    """Doctor's table as rows of cells, each cell's wrapped lines joined by a space (a line whose first cell is
    blank continues the row above); a word the table cut would read as two."""
    rows: list[list[str]] = []
    for line in output.splitlines():
        if not line.startswith("│"):
            continue
        cells = [cell.strip() for cell in line.strip("│").split("│")]
        if cells[0] or not rows:
            rows.append(cells)
        else:
            rows[-1] = [f"{old} {new}".strip() for old, new in zip(rows[-1], cells, strict=True)]
    return rows
