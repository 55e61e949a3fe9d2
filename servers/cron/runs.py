"""Run history: one JSONL file per job, trimmed to the newest runs, for cron_runs and for people reading the logs.

Lines are appended without fsync: the store records each job's last run durably, and this log only explains.
"""

from __future__ import annotations

import heapq
import json
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hermitcrab.util.files import atomic_write_text, read_jsonl

DEFAULT_KEEP = 200


class RunLog:
    """`runs/<job_id>.jsonl` under the state dir, each trimmed to `keep` lines once it reaches 1.5 times that."""

    def __init__(self, directory: Path, keep: int = DEFAULT_KEEP) -> None:
        self.directory = directory / "runs"
        self.directory.mkdir(parents=True, exist_ok=True)
        self.keep = keep
        self._lines: dict[str, int] = {}

    def append(self, records: list[dict[str, Any]]) -> None:
        by_job: dict[str, list[str]] = defaultdict(list)
        for record in records:
            by_job[record["job_id"]].append(json.dumps(record, ensure_ascii=False) + "\n")
        for job_id, lines in by_job.items():
            self._append(job_id, lines)

    def _append(self, job_id: str, lines: list[str]) -> None:
        path = self._path(job_id)
        with path.open("a", encoding="utf-8") as handle:
            handle.write("".join(lines))
        known = self._lines.get(job_id)
        count = (known if known is not None else _count_lines(path) - len(lines)) + len(lines)
        if count >= self.keep + self.keep // 2:
            kept = path.read_text(encoding="utf-8").splitlines(keepends=True)[-self.keep :]
            atomic_write_text(path, "".join(kept))
            count = len(kept)
        self._lines[job_id] = count

    def read(self, job_id: str | None, limit: int) -> list[dict[str, Any]]:
        """The newest `limit` records, newest first, of one job or of all (removed jobs' too)."""
        paths = [self._path(job_id)] if job_id is not None else sorted(self.directory.glob("*.jsonl"))
        return _newest(paths, limit)

    def read_jobs(self, job_ids: Iterable[str], limit: int) -> list[dict[str, Any]]:
        """The newest `limit` records, newest first, of these jobs."""
        return _newest([self._path(job_id) for job_id in job_ids], limit)

    def _path(self, job_id: str) -> Path:
        return self.directory / f"{job_id}.jsonl"


def _newest(paths: list[Path], limit: int) -> list[dict[str, Any]]:
    newest = (list(read_jsonl(path))[-limit:] for path in paths)
    return heapq.nlargest(limit, (record for records in newest for record in records), key=_when)


def _when(record: dict[str, Any]) -> str:
    return str(record.get("at", ""))


def _count_lines(path: Path) -> int:
    with path.open("rb") as handle:
        return sum(1 for _ in handle)
