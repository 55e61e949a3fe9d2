"""The model calls recorded in a home's transcripts, read as a stream: every session's and every sub-agent run's.

Each call is an `assistant` entry (a turn's, a heartbeat's, the memory flush's) or a `compaction` entry (its
summarising calls together). A transcript is only appended to, so one last changed before the period asked for is
not opened, and within a file only lines that carry a `usage` are parsed: a home with many long sessions is read in
about the time its recent lines take.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

from hermitcrab.util.store import JsonFile

from ..providers.base import Usage

logger = logging.getLogger(__name__)

Kind = Literal["turn", "heartbeat", "compaction", "flush", "sub-agent"]
KINDS: tuple[Kind, ...] = ("turn", "heartbeat", "compaction", "flush", "sub-agent")
_SUFFIX = re.compile(r"-\d{8}T\d{6}-[0-9a-f]{6}$")  # what SessionStore adds to a key to name a transcript


@dataclass(frozen=True)
class Call:
    """One recorded model call (or a compaction's calls together) and what it was for."""

    when: dt.datetime
    session: str
    kind: Kind
    provider: str
    model: str
    usage: Usage
    count: int = 1


def recorded_calls(state: Path, since: dt.datetime) -> Iterator[Call]:
    """The calls made from `since` on, in the sessions under `state/sessions` and in the spawn server's runs."""
    sessions = state / "sessions"
    names = _session_keys(sessions)
    for path in sorted(sessions.glob("*.jsonl")):
        yield from _read(path, names.get(path.stem) or _SUFFIX.sub("", path.stem), since, subagent=False)
    for path in sorted(state.glob("spawn/runs/*/sessions/*.jsonl")):
        yield from _read(path, f"subagent:{path.parents[1].name}", since, subagent=True)


def _session_keys(sessions: Path) -> dict[str, str]:
    """Transcript id -> session key, for the transcripts the index still names (older ones keep their file name)."""
    index = JsonFile(sessions / "sessions.json").load("session names are read from the file names")
    records = {key: cast(dict[str, object], record) for key, record in index.items() if isinstance(record, dict)}
    return {str(record.get("id")): key for key, record in records.items()}


def _read(path: Path, session: str, since: dt.datetime, *, subagent: bool) -> Iterator[Call]:
    try:
        if dt.datetime.fromtimestamp(path.stat().st_mtime, dt.UTC) < since:
            return
        handle = path.open("rb")
    except FileNotFoundError:  # removed while we read the folder
        return
    provider = model = ""  # a compaction entry is priced as the answers before it
    with handle:
        for line in handle:
            if b'"usage"' not in line:
                continue
            try:
                entry = cast(dict[str, Any], json.loads(line))
                when = dt.datetime.fromisoformat(str(entry["ts"]))
                when = when if when.tzinfo else when.replace(tzinfo=dt.UTC)  # the transcript writes UTC
            except (ValueError, KeyError, TypeError, UnicodeDecodeError):
                continue  # a torn line (the transcript skips it too)
            usage = entry.get("usage")
            kind = entry.get("kind")
            if kind not in ("assistant", "compaction") or not isinstance(usage, dict):
                continue
            provider = str(entry.get("provider") or provider)
            model = str(entry.get("model") or model)
            if when < since:
                continue
            counts = Usage.from_entry(cast(dict[str, object], usage))
            yield Call(when, session, _kind(entry, subagent), provider, model, counts, int(entry.get("calls", 1)))


def _kind(entry: dict[str, Any], subagent: bool) -> Kind:
    if entry.get("kind") == "compaction":
        return "compaction"
    if entry.get("flush"):
        return "flush"
    if subagent:
        return "sub-agent"
    return "heartbeat" if entry.get("trigger") == "heartbeat" else "turn"
