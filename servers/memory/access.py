"""Who may read and write which memory files: the owner all of them, anyone else only what is not the owner's own.

The host names the rights of the turn behind each call in the request's `_meta` (`hermitcrab/principal`). A friend,
a group chat or a webhook must not read the owner's private memory (MEMORY.md, USER.md, the daily logs), which holds
what the owner told the assistant in confidence, nor write where the owner's own words are kept: what they write
goes under `memory/others/`, and that text is marked untrusted wherever it is shown, so that a model treats it as
data and never as instructions.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping

from hermitcrab.servers._common.origin import Caller

from . import files as memfiles
from .index import FileRecord

UNTRUSTED_META = "hermitcrab/untrusted-content"
OTHERS_DIR = f"{memfiles.MEMORY_DIR}/others"


def is_others(rel: str) -> bool:
    """Whether `rel` (workspace-relative, resolved) was written by people who are not the owner."""
    return rel.startswith(OTHERS_DIR + "/")


@functools.lru_cache(maxsize=1 << 16)
def is_private(rel: str) -> bool:
    """Whether `rel` is the owner's alone: MEMORY.md, USER.md, a daily log or session capture
    (`memory/YYYY-MM-DD*.md`), or anything outside `memory/` (the extra paths the owner configured).

    Cached: a non-owner's search asks it of every indexed file, and years of daily logs are thousands."""
    if is_others(rel):
        return False
    return not rel.startswith(memfiles.MEMORY_DIR + "/") or memfiles.file_date(rel) is not None


def shown_to_others(files: Mapping[str, FileRecord]) -> Callable[[str], bool]:
    """Which indexed files a non-owner's search may show: those not private, unless one is another name (a hard
    link) of a private file, which would show the private text under a shared path."""
    private = {record.stat.inode for rel, record in files.items() if is_private(rel)}
    shown = {rel for rel, record in files.items() if not is_private(rel) and record.stat.inode not in private}
    return shown.__contains__


def read_refusal(shown: str, caller: Caller) -> str:
    return f"{shown} is the owner's private memory: it cannot be read from a {caller.principal} session."


def write_refusal(shown: str, caller: Caller) -> str:
    return (
        f"{shown} cannot be written from a {caller.principal} session: write under {OTHERS_DIR}/ instead, "
        f"e.g. {OTHERS_DIR}/<topic>.md (where memory_append writes when path is omitted)."
    )


def others_log(date: str) -> str:
    """Where a non-owner's note goes when it names no file: its own daily log, never the owner's."""
    return f"{OTHERS_DIR}/{date}.md"
