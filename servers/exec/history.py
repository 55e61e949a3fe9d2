"""What `exec_changes` and `exec_undo` return: records of changes as the model reads them, with bounded lists."""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import BaseModel, Field

from .changes import ChangeLog, Record, Undone

MAX_PATHS = 50  # per list in one record; the counts say how many there are


class ChangeInfo(BaseModel):
    call_id: str = Field(description="Pass it to exec_undo.")
    time: str
    tool: str
    command: str = Field(description="The command line, or the file tool's path.")
    added: list[str]
    modified: list[str]
    deleted: list[str]
    counts: dict[str, int] = Field(description="How many paths were added, modified and deleted in all.")
    cannot_undo: list[str] = Field(description="Paths whose earlier version was not saved (too big or unreadable).")
    shared_with: list[str] = Field(description="Calls that ran at the same time: their changes may be in this one.")
    interrupted: bool = Field(description="The server stopped during the call; what changed was found at restart.")
    undoes: str | None = None
    undone_by: str | None = None


class ChangeList(BaseModel):
    changes: list[ChangeInfo] = Field(description="Newest first.")
    kept: int = Field(description="Changes kept in all.")
    saved_mb: float = Field(description="Saved file content, in MB.")


class UndoResult(BaseModel):
    undone: str = Field(description="The call whose changes were undone.")
    call_id: str | None = Field(description="The undo's own change: exec_undo it to redo.")
    restored: str | None = Field(description="What the undo changed.")
    not_restored: list[str] = Field(description="Paths left as they are, and why.")


def listing(log: ChangeLog, limit: int) -> ChangeList:
    return ChangeList(
        changes=[_info(log, record) for record in log.newest(limit)],
        kept=len(log.records),
        saved_mb=round(log.saved_bytes() / 1_000_000, 1),
    )


def undo_result(log: ChangeLog, done: Undone) -> UndoResult:
    problems = [f"{path}: {why}" for path, why in done.problems.items()]
    problems += [f"{path}: its earlier version was not saved (too big or unreadable)" for path in done.skipped]
    return UndoResult(
        undone=done.undid.id,
        call_id=done.record.id if done.record else None,
        restored=log.summary(done.record) if done.record else None,
        not_restored=problems[:MAX_PATHS],
    )


def _info(log: ChangeLog, record: Record) -> ChangeInfo:
    lists: dict[str, list[str]] = {"added": [], "modified": [], "deleted": []}
    for path, (before, after) in record.changes.items():
        kind = "added" if before is None else "deleted" if after is None else "modified"
        entry = after or before
        lists[kind].append(log.shown(path) + ("/" if entry and entry.kind == "dir" else ""))
    return ChangeInfo(
        call_id=record.id,
        time=datetime.fromtimestamp(record.time, UTC).isoformat(timespec="seconds"),
        tool=record.tool,
        command=record.what[:200],
        added=lists["added"][:MAX_PATHS],
        modified=lists["modified"][:MAX_PATHS],
        deleted=lists["deleted"][:MAX_PATHS],
        counts={kind: len(paths) for kind, paths in lists.items()},
        cannot_undo=[log.shown(p) for p in record.unrestorable][:MAX_PATHS],
        shared_with=record.shared_with,
        interrupted=record.interrupted,
        undoes=record.undoes,
        undone_by=record.undone_by,
    )
