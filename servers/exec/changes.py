"""Undo: what each call changed in the roots, and the roots put back as they were before one.

The server keeps a manifest of the roots between calls (`undo/manifest.json`, every file's content saved in
`undo/blobs/`). Before a call the roots are walked (what changed since, outside exec, is saved then) and after it
they are walked again; what differs is the call's record (`undo/changes.json`). A file tool looks only at its own
file and the folders it may create. Undo puts the recorded paths back as they were before the call, and is itself
a call, recorded like any other, so it can be undone in turn.

Calls at the same time: walks take one lock, and a call's record holds everything that changed between its two
walks, so a change made while two commands ran is in both records, and each names the other (`shared_with`). A
crash: `undo/pending.json` names the calls begun and not finished; the first walk after a restart records what
changed since as theirs (`interrupted`), which may include changes made while the server was down.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
import uuid
from collections.abc import Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermitcrab.util.store import JsonFile

from .blobs import Blobs
from .manifest import Entry, Manifest, Scanner, TooManyEntries, manifest_from_json, manifest_to_json
from .restore import restore

logger = logging.getLogger(__name__)
Change = tuple[Entry | None, Entry | None]  # (before the call, after it); None: absent
_SHOWN = 300  # characters of a change summary
_KEEP_UNREPORTED = 100  # records of ended background commands kept for `process` to report


class UndoRefused(ValueError):
    """Undo cannot do what was asked; the message says why and what to do."""


@dataclass(frozen=True)
class UndoLimits:
    """How much history undo keeps: the newest `keep` changes and at most `mb` MB of saved content (oldest dropped
    first); either at 0 turns undo off. Roots holding more than `max_entries` files and folders turn it off too."""

    keep: int = 50
    mb: int = 500
    max_entries: int = 200_000  # a walk of them takes about 2 s, and there are two a command

    @property
    def on(self) -> bool:
        return self.keep > 0 and self.mb > 0


@dataclass
class Record:
    """What one call changed."""

    id: str
    tool: str
    what: str  # the command line, or the file tool's path
    time: float
    changes: dict[str, Change]
    shared_with: list[str] = field(default_factory=list[str])
    interrupted: bool = False
    undoes: str | None = None
    undone_by: str | None = None

    def to_json(self) -> dict[str, Any]:
        changes = {p: [e.to_json() if e else None for e in change] for p, change in self.changes.items()}
        return {**self.__dict__, "changes": changes}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Record:
        record = cls(**data)
        record.changes = {path: (_entry(before), _entry(after)) for path, (before, after) in data["changes"].items()}
        return record

    @property
    def unrestorable(self) -> list[str]:
        """Paths whose earlier version was not saved (too big, unreadable, or not a file, folder or link)."""
        return sorted(p for p, (before, _) in self.changes.items() if before is not None and not before.restorable)


@dataclass
class Call:
    """A call between its two walks."""

    id: str
    tool: str
    what: str
    time: float
    scope: list[str] | None  # None: all of the roots
    before: Manifest
    during: set[str]  # calls that ran at the same time


class Finishing:
    """A command's call, finished by a thread of its own when the command ends (in the background too)."""

    def __init__(self, log: ChangeLog, call: Call | None, ended: threading.Event) -> None:
        self.record: Record | None = None
        self.done = threading.Event()

        def finish() -> None:
            ended.wait()
            try:
                self.record = log.finish(call)
            except OSError as exc:  # a full disk: the next call's walk sees the change, unattributed
                logger.warning("undo could not record what a command changed: %s", exc)
            finally:
                self.done.set()

        threading.Thread(target=finish, daemon=True).start()

    def wait(self) -> Record | None:
        self.done.wait()
        return self.record


@dataclass(frozen=True)
class Undone:
    """What `undo` did: the record of the undo itself, the paths it could not restore and why."""

    record: Record | None
    undid: Record
    problems: dict[str, str]
    skipped: list[str]


class ChangeLog:
    """The records of the calls that changed the roots, and the saved content that undoes them."""

    def __init__(self, roots: Sequence[Path], state: Path, limits: UndoLimits, skip: Iterable[Path] = ()) -> None:
        self.roots = [root.resolve() for root in roots]
        self.limits = limits
        self.records: list[Record] = []
        self._lock = threading.RLock()
        self._open: dict[str, Call] = {}
        self._finishing: dict[str, Finishing] = {}  # by job id: commands whose record is not reported yet
        self._finishing_lock = threading.Lock()  # not the walks' lock: the event loop takes this one
        self._walked = False  # the first call after a start walks everything (and finishes an interrupted one)
        self.off = None if limits.on else "the server runs with --undo-keep 0 or --undo-mb 0"
        if self.off:
            return
        folder = state / "undo"
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._log = JsonFile(folder / "changes.json", indent=None)
        self._pending = JsonFile(folder / "pending.json", durable=False)  # lost in a power cut: the call is unnamed
        self._manifest = JsonFile(folder / "manifest.json", indent=None)
        self.records = [Record.from_json(r) for r in self._log.load("undo starts without history").get("records", [])]
        self.baseline = manifest_from_json(
            self._manifest.load("the next call walks the roots afresh").get("entries", {})
        )
        self.blobs = Blobs(folder / "blobs", limits.mb * 1024 * 1024)
        self.blobs.make_room = self._make_room
        self.scanner = Scanner(self.roots, skip, self.blobs, limits.max_entries)
        self.blobs.prune(self._referenced())  # copies a crash left unnamed

    def begin(self, tool: str, what: str, scope: Sequence[Path] | None = None) -> Call | None:
        """Walk before a call (the roots, or only `scope`); None when undo is off."""
        keys = None if scope is None else [str(path) for path in scope]
        with self._lock:
            if self.off:
                return None
            try:
                found = self._catch_up()
                if found is None:
                    found = self._scan(keys)
                    self._adopt(found, keys)
            except TooManyEntries as exc:
                self._give_up(str(exc))
                return None
            before = found if keys is None else {k: found[k] for k in keys if k in found}
            call = Call(uuid.uuid4().hex[:8], tool, what, time.time(), keys, before, set(self._open))
            for other in self._open.values():
                other.during.add(call.id)
            self._open[call.id] = call
            self._save_pending()
            return call

    def finish(self, call: Call | None) -> Record | None:
        """Walk after the call; its record, or None when it changed nothing (or undo is off)."""
        with self._lock:
            if call is None or self.off:
                return None
            try:
                after = self._scan(call.scope)
            except TooManyEntries as exc:
                self._give_up(str(exc))
                return None
            finally:  # even when the walk fails (a full disk): pending.json keeps it, for the next start
                self._open.pop(call.id, None)
            record = None
            changes = _diff(call.before, after)
            if changes:
                record = Record(call.id, call.tool, call.what, call.time, changes, sorted(call.during))
                self.records.append(record)
                del self.records[: max(0, len(self.records) - self.limits.keep)]
                self._save_log()
            self._adopt(after, call.scope)
            self._save_pending()
            if changes:
                self.blobs.prune(self._referenced())
            return record

    def finish_when(self, job_id: str, ended: threading.Event, call: Call | None) -> None:
        """Finish `call` (in a thread of its own) when `ended` is set; `finished(job_id)` then has its record."""
        with self._finishing_lock:
            self._finishing[job_id] = Finishing(self, call, ended)
            done = [key for key, finishing in self._finishing.items() if finishing.done.is_set()]
            for key in done[: max(0, len(done) - _KEEP_UNREPORTED)]:
                del self._finishing[key]

    def finished(self, job_id: str) -> Record | None:
        """The record of the ended command `job_id`, once (None if it changed nothing, or was reported already)."""
        with self._finishing_lock:
            finishing = self._finishing.pop(job_id, None)
        return finishing.wait() if finishing else None

    @contextlib.contextmanager
    def recording(self, tool: str, what: str, scope: Sequence[Path]) -> Generator[list[Record]]:
        """Record a file tool's call around its body; the list holds its record afterwards, if it changed anything."""
        call = self.begin(tool, what, scope)
        records: list[Record] = []
        try:
            yield records
        finally:
            record = self.finish(call)
            records.extend([record] if record else [])

    def newest(self, limit: int) -> list[Record]:
        """The newest `limit` records, newest first (after a restart, with what a crash interrupted)."""
        with self._lock:
            self._catch_up_or_refuse()
            return self.records[::-1][:limit]

    def find(self, call_id: str | None) -> Record:
        """The record of `call_id`, or by default the newest change not undone that is not itself an undo."""
        with self._lock:
            self._catch_up_or_refuse()
            if call_id is None:
                undoable = [r for r in self.records if r.undone_by is None and r.undoes is None]
                if not undoable:
                    raise UndoRefused("There is no change to undo; exec_changes lists what is kept.")
                return undoable[-1]
            record = next((r for r in self.records if r.id == call_id), None)
            if record is None:
                raise UndoRefused(
                    f"No change has the call id {call_id!r}; exec_changes lists the {len(self.records)} kept."
                )
            return record

    def undo(self, call_id: str | None, force: bool) -> Undone:
        """Put every path `call_id` changed back as it was before that call, as a call of its own.

        Refused, unless `force`, when one of those paths changed again since, when a folder to remove holds files
        made since, or when an earlier version was not saved; with `force` those files are overwritten (or
        removed), and unsaved ones are left as they are."""
        with self._lock:
            undid = self.find(call_id)
            if undid.undone_by is not None:
                raise UndoRefused(
                    f"Call {undid.id} was already undone by {undid.undone_by}; undo {undid.undone_by} to redo it."
                )
            call = self.begin("exec_undo", f"undo {undid.id}")
            if call is None:
                raise UndoRefused(f"Undo is off here: {self.off}; nothing is recorded.")
            try:
                targets = {path: before for path, (before, _) in undid.changes.items()}
                current = call.before
                newer = [p for p, (_, after) in undid.changes.items() if not _same(after, current.get(p))]
                newer += _strays(targets, current)
                skipped = undid.unrestorable
                if (newer or skipped) and not force:
                    raise UndoRefused(_refusal(undid.id, self._shown(newer), self._shown(skipped)))
                for path in skipped:
                    del targets[path]
                targets |= dict.fromkeys(_strays(targets, current))
                problems = restore(self.roots, targets, current, self.blobs)
            finally:
                record = self.finish(call)
            if record is not None:
                record.undoes = undid.id
                undid.undone_by = record.id
                for earlier in self.records:  # undoing an undo redoes: what it undid may be undone again
                    if earlier.id == undid.undoes:
                        earlier.undone_by = None
                self._save_log()
            return Undone(record, undid, {self.shown(p): why for p, why in problems.items()}, self._shown(skipped))

    def shown(self, path: str) -> str:
        """`path` as the model names it: relative to the first root, or absolute in another."""
        first = str(self.roots[0])
        return path[len(first) + 1 :] if path.startswith(first + "/") else path

    def summary(self, record: Record) -> str:
        """One bounded line: `a.txt, b/ (3 files deleted)`, grouped by the top folder."""
        groups: dict[str, list[tuple[str, Change]]] = {}
        for path in sorted(record.changes):
            shown = self.shown(path)
            groups.setdefault(shown.split("/", 1)[0], []).append((shown, record.changes[path]))
        parts = [_group(top, items) for top, items in groups.items()]
        text = ""
        for index, part in enumerate(parts):
            rest = len(parts) - index
            if len(text) + len(part) > _SHOWN and rest > 1:
                text += f", and {rest} more"
                break
            text += (", " if text else "") + part
        lost = record.unrestorable
        if lost:
            text += f"; cannot be undone (not saved: too big or unreadable): {', '.join(self._shown(lost)[:3])}"
        return text

    def saved_bytes(self) -> int:
        return 0 if self.off else self.blobs.total

    def _scan(self, keys: Sequence[str] | None) -> Manifest:
        return self.scanner.walk(self.baseline) if keys is None else self.scanner.look(keys, self.baseline)

    def _catch_up_or_refuse(self) -> None:
        if not self.off:
            try:
                self._catch_up()
            except TooManyEntries as exc:
                self._give_up(str(exc))
        if self.off:
            raise UndoRefused(f"Undo is off here: {self.off}; nothing is recorded.")

    def _give_up(self, why: str) -> None:
        """Turn undo off for this run (what is kept stays, for a run with other roots or limits)."""
        self.off = f"{why}, too many to walk twice a command (give a narrower --root)"
        logger.warning("undo is off: %s", self.off)
        self._open.clear()
        self._save_pending()
        self.blobs.prune(self._referenced())  # what the abandoned walk saved

    def _shown(self, paths: Iterable[str]) -> list[str]:
        return [self.shown(p) for p in sorted(paths)]

    def _catch_up(self) -> Manifest | None:
        """On the first use after a start, walk everything: what changed since the baseline belongs to the calls a
        crash interrupted, if any; returns that walk (None on later uses)."""
        if self._walked:
            return None
        found = self.scanner.walk(self.baseline)
        self._recover(found)
        self._adopt(found, None)
        self._walked = True
        return found

    def _recover(self, found: Manifest) -> None:
        """Record what changed since the baseline as the calls a crash interrupted, if there were any."""
        pending = self._pending.load("calls a crash interrupted are not recorded").get("calls", {})
        pending = {k: v for k, v in pending.items() if all(r.id != k for r in self.records)}
        changes = _diff(self.baseline, found)
        if pending and changes:
            first, *others = sorted(pending)
            record = Record(first, pending[first]["tool"], pending[first]["what"], pending[first]["time"], changes)
            record.shared_with, record.interrupted = others, True
            self.records.append(record)
            del self.records[: max(0, len(self.records) - self.limits.keep)]
            self._save_log()

    def _adopt(self, found: Manifest, keys: Sequence[str] | None) -> None:
        """Make `found` the baseline (for `keys` only, when given), saved when it differs."""
        if keys is None:
            changed, self.baseline = found != self.baseline, found
        else:
            changed = any(found.get(k) != self.baseline.get(k) for k in keys)
            for key in keys:
                if key in found:
                    self.baseline[key] = found[key]
                else:
                    self.baseline.pop(key, None)
        if changed:
            self._manifest.save({"entries": manifest_to_json(self.baseline)})

    def _make_room(self, needed: int) -> None:
        """Drop the oldest records until `needed` more bytes fit in the budget (or none is left)."""
        dropped = False
        while self.records and self.blobs.total + needed > self.blobs.budget:
            self.records.pop(0)
            self.blobs.prune(self._referenced())
            dropped = True
        if dropped:
            self._save_log()

    def _referenced(self) -> Iterator[str]:
        """Every saved copy still needed: what records undo to, the baseline, and walks in progress."""
        manifests = [self.baseline, self.scanner.building, *(call.before for call in self._open.values())]
        for manifest in manifests:
            yield from (entry.digest for entry in manifest.values() if entry.digest)
        for record in self.records:
            yield from (before.digest for before, _ in record.changes.values() if before and before.digest)

    def _save_log(self) -> None:
        self._log.save({"records": [record.to_json() for record in self.records]})

    def _save_pending(self) -> None:
        calls = {c.id: {"tool": c.tool, "what": c.what, "time": c.time} for c in self._open.values()}
        self._pending.save({"calls": calls})


def _entry(data: list[Any] | None) -> Entry | None:
    return None if data is None else Entry.from_json(data)


def _diff(before: Manifest, after: Manifest) -> dict[str, Change]:
    return {
        path: (before.get(path), after.get(path))
        for path in sorted(before.keys() | after.keys())
        if not _same(before.get(path), after.get(path))
    }


def _same(entry: Entry | None, other: Entry | None) -> bool:
    return entry is other is None or (entry is not None and entry.same_content(other))


def _strays(targets: dict[str, Entry | None], current: Manifest) -> list[str]:
    """Paths there now, not in `targets`, inside a folder that undo must remove: made after the call."""
    doomed = {p for p, want in targets.items() if want is None or want.kind != "dir"}
    return [p for p in current if p not in targets and any(parent in doomed for parent in _parents(p))]


def _parents(path: str) -> Iterator[str]:
    while (parent := os.path.dirname(path)) != path:
        yield parent
        path = parent


def _refusal(call_id: str, newer: list[str], skipped: list[str]) -> str:
    reasons: list[str] = []
    if newer:
        reasons.append(f"these changed again after it: {', '.join(newer[:10])}" + (" ..." if len(newer) > 10 else ""))
    if skipped:
        listed = ", ".join(skipped[:10]) + (" ..." if len(skipped) > 10 else "")
        reasons.append(f"these were not saved (too big or unreadable): {listed}")
    return (
        f"Undo of {call_id} refused: {'; '.join(reasons)}. Pass force=true to undo it anyway (later changes to those "
        "files are overwritten; files that were not saved stay as they are), or undo the later calls first."
    )


def _group(top: str, items: list[tuple[str, Change]]) -> str:
    if len(items) == 1:
        shown, (before, after) = items[0]
        entry = after or before
        return shown + ("/" if entry and entry.kind == "dir" else "") + _verb(before, after, " ({})", "")
    counts: dict[str, dict[str, int]] = {}  # verb -> noun -> how many
    for _, (before, after) in items:
        entry = after or before
        nouns = counts.setdefault(_verb(before, after, "{}", "modified"), {})
        noun = "folder" if entry and entry.kind == "dir" else "file"
        nouns[noun] = nouns.get(noun, 0) + 1
    described = [
        " and ".join(f"{n} {noun}{'s' if n > 1 else ''}" for noun, n in sorted(nouns.items())) + f" {verb}"
        for verb, nouns in counts.items()
    ]
    return f"{top}/ ({', '.join(described)})"


def _verb(before: Entry | None, after: Entry | None, template: str, modified: str) -> str:
    if before is None:
        return template.format("added")
    if after is None:
        return template.format("deleted")
    return modified
