"""The run history: capped per job, newest first across jobs."""

from __future__ import annotations

from pathlib import Path

from hermitcrab.servers.cron.runs import RunLog


def test_history_is_trimmed_to_the_newest_runs_and_read_newest_first(tmp_path: Path):
    log = RunLog(tmp_path, keep=10)
    for number in range(40):
        job_id = "a-1234" if number % 2 else "b-1234"
        log.append([{"at": f"2026-12-01T10:00:{number:02d}", "job_id": job_id, "n": number}])
    lines = (tmp_path / "runs" / "a-1234.jsonl").read_text().splitlines()
    assert 10 <= len(lines) < 15
    assert [record["n"] for record in log.read("a-1234", 3)] == [39, 37, 35]
    assert [record["n"] for record in log.read(None, 4)] == [39, 38, 37, 36]
