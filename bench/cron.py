"""Is the cron server on time under load? 1,000 jobs firing every second, through a real stdio server.

Run: .venv/bin/python bench/cron.py [--jobs 1000] [--duration 60] [--json]

A client adds the jobs (each `every 1 s`, so their phases spread over the second), listens on `cron://events`,
reads and acknowledges the items as they come, for `--duration` seconds after a one-second settling period.
Reported for the server:
- lateness: `fired_at - scheduled_at` of every item (the run recorded in the store), and `seen - scheduled_at`
  (the client read it after the notification), p50/p99 in ms;
- missed: ticks of the measured window that never produced an item; duplicates: a (job, tick) seen twice, or a
  run id twice in the run history;
- the server's RSS at the end and its peak.
Next to it, the same jobs in plain APScheduler in-process (no store, no MCP): the floor for lateness.
Targets: p99 < 1 s, 0 missed, 0 duplicates.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT))

from hermitcrab.host.config import AgentSettings, ServerConfig, Settings  # noqa: E402
from hermitcrab.host.events import Event, Target  # noqa: E402
from hermitcrab.host.gateway.gateway import Gateway  # noqa: E402
from hermitcrab.host.gateway.triggers import relay_server_events  # noqa: E402
from hermitcrab.host.mcp.pool import McpPool, ServerEvent  # noqa: E402
from hermitcrab.host.providers import Completion, Message, TextSink, ToolSpec, Usage  # noqa: E402
from hermitcrab.host.session.transcript import SessionStore  # noqa: E402
from hermitcrab.host.turn.agent import Agent  # noqa: E402
from tests.support.processes import pid_serving  # noqa: E402


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    if not ordered:
        return {"p50_ms": math.nan, "p99_ms": math.nan, "max_ms": math.nan}
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 1),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, 1),
        "max_ms": round(ordered[-1] * 1000, 1),
    }


def memory_mb(pid: int) -> dict[str, float]:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    fields = dict(line.split(":", 1) for line in lines if ":" in line)
    pairs = (("rss_mb", "VmRSS"), ("peak_mb", "VmHWM"))
    return {name: round(int(fields[key].split()[0]) / 1024, 1) for name, key in pairs}


async def bench_server(jobs: int, duration: float, state: Path) -> dict[str, Any]:
    command = ["-m", "hermitcrab.servers.cron", "--state", str(state), "--min-interval-s", "0", "--max-jobs", str(jobs)]
    params = StdioServerParameters(command=sys.executable, args=command)
    seen: dict[str, tuple[str, datetime, datetime, float]] = {}  # id -> (job, scheduled, fired, seen at)
    repeats = 0
    async with Client(params) as client:
        window = {"end": datetime(9999, 1, 1, tzinfo=UTC)}
        updated = anyio.Event()

        async def listen() -> None:
            async with client.listen(resource_subscriptions=["cron://events"]) as subscription:
                async for _ in subscription:
                    updated.set()

        async def drain() -> None:
            """Read and acknowledge items as they come, as a host would, until shortly after the window."""
            nonlocal updated, repeats
            while datetime.now(UTC) < window["end"] + timedelta(seconds=2):
                with anyio.move_on_after(0.5):
                    await updated.wait()
                updated = anyio.Event()
                contents = (await client.read_resource("cron://events")).contents
                now = time.time()
                items = json.loads(contents[0].text)["items"]  # type: ignore[union-attr]  # a text resource
                for item in items:
                    if item["id"] in seen:
                        repeats += 1
                        continue
                    scheduled = datetime.fromisoformat(item["scheduled_at"])
                    seen[item["id"]] = (item["job_id"], scheduled, datetime.fromisoformat(item["fired_at"]), now)
                for chunk in range(0, len(items), 5000):
                    ids = [item["id"] for item in items[chunk : chunk + 5000]]
                    ack = await client.call_tool("cron_ack", {"event_ids": ids})
                    assert not ack.is_error, ack.content

        async with anyio.create_task_group() as group:
            group.start_soon(listen)
            group.start_soon(drain)
            added_at = time.monotonic()
            for number in range(jobs):
                spec = {
                    "name": f"job {number}",
                    "schedule": {"kind": "every", "every_seconds": 1},
                    "payload": {"kind": "system_event", "text": f"tick {number}"},
                    "delivery": {"mode": "none"},
                }
                result = await client.call_tool("cron_add", {"job": spec})
                assert not result.is_error, result.content
            add_s = time.monotonic() - added_at
            window_start = datetime.now(UTC) + timedelta(seconds=1)
            window_end = window["end"] = window_start + timedelta(seconds=duration)
            await anyio.sleep_until(anyio.current_time() + duration + 3)
            with anyio.fail_after(30):
                while datetime.now(UTC) < window_end + timedelta(seconds=2):
                    await anyio.sleep(0.1)
            memory = memory_mb(pid_serving("hermitcrab.servers.cron", state))
            listed = (await client.call_tool("cron_list", {})).structured_content or {}
            group.cancel_scope.cancel()

    in_window = [entry for entry in seen.values() if window_start <= entry[1] < window_end]
    per_job = Counter(job for job, _, _, _ in in_window)
    ticks = Counter((job, scheduled) for job, scheduled, _, _ in seen.values())
    history = Counter(
        (path.stem, json.loads(line)["run_id"])
        for path in (state / "runs").glob("*.jsonl")
        for line in path.read_text().splitlines()
        if json.loads(line)["status"] == "queued"
    )
    expected = len(listed.get("jobs", [])) * round(duration)
    return {
        "jobs": jobs,
        "add_s": round(add_s, 1),
        "ticks_expected": expected,
        "ticks_seen": len(in_window),
        "missed": expected - len(in_window),
        "jobs_short": sum(1 for count in per_job.values() if count < round(duration)) + (jobs - len(per_job)),
        "duplicates": repeats + sum(count - 1 for count in ticks.values()) + sum(c - 1 for c in history.values()),
        "fired_late": percentiles([(fired - scheduled).total_seconds() for _, scheduled, fired, _ in in_window]),
        "seen_late": percentiles([seen_at - scheduled.timestamp() for _, scheduled, _, seen_at in in_window]),
        **memory,
    }


async def bench_plain(jobs: int, duration: float) -> dict[str, Any]:
    """The same jobs in APScheduler alone: each job function records how late it ran."""
    late: list[float] = []
    fired: Counter[str] = Counter()

    async def tick(job_id: str) -> None:
        now = datetime.now(UTC)
        fired[job_id] += 1
        late.append((now - scheduled[job_id]).total_seconds())
        scheduled[job_id] += timedelta(seconds=1)

    scheduler = AsyncIOScheduler(timezone=UTC)
    scheduled: dict[str, datetime] = {}
    start = datetime.now(UTC)
    for number in range(jobs):
        first = start + timedelta(seconds=1 + number / jobs)
        scheduled[str(number)] = first
        scheduler.add_job(tick, "interval", seconds=1, start_date=first, args=[str(number)], id=str(number))
    scheduler.start()
    await anyio.sleep(duration + 1)
    scheduler.shutdown(wait=False)
    expected = jobs * round(duration)
    return {
        "jobs": jobs,
        "ticks_expected": expected,
        "ticks_seen": min(expected, sum(fired.values())),
        "missed": max(0, expected - sum(fired.values())),
        "duplicates": 0,
        "fired_late": percentiles(late),
    }


class EchoProvider:
    """An instant scripted model: every turn is answered at once, so the bench measures the host, not a model."""

    label = "echo"

    async def complete(
        self,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        on_delta: TextSink | None = None,
    ) -> Completion:
        return Completion(Message("assistant", "noted"), Usage(10, 1), model="echo", provider="echo")


class CountingChannel:
    name = "bench"

    def __init__(self) -> None:
        self.sent = 0

    async def send(self, target: Target, text: str) -> None:
        self.sent += 1

    async def typing(self, target: Target) -> None:
        return None


async def bench_host(jobs: int, duration: float, home: Path) -> dict[str, Any]:
    """Jobs firing every second through the whole host: pool, relay, gateway, a turn, delivery, ack."""
    limits = ("--min-interval-s", "0", "--max-jobs", str(jobs))  # every second, `jobs` of them: the point here
    cron = ServerConfig(
        "cron", command=sys.executable, args=("-m", "hermitcrab.servers.cron", "--state", str(home / "cron"), *limits)
    )
    settings = Settings(home=home, providers=(), servers=(cron,), agent=AgentSettings())
    channel = CountingChannel()
    handled: list[float] = []
    ids: Counter[str] = Counter()
    send, receive = anyio.create_memory_object_stream[ServerEvent](10_000)
    async with McpPool([cron], on_event=send.send) as pool, anyio.create_task_group() as group:
        gateway = Gateway(
            Agent(settings, EchoProvider(), pool, SessionStore(home / "sessions")), {"bench": channel}, ask_timeout_s=1
        )

        async def submit(event: Event) -> None:
            scheduled = datetime.fromisoformat(str(event.metadata["scheduled_at"]))
            inner = event.on_done

            async def done(ok: bool, error: str | None) -> None:
                if ok:
                    handled.append((datetime.now(UTC) - scheduled).total_seconds())
                    ids[str(event.metadata["event_id"])] += 1
                if inner is not None:
                    await inner(ok, error)

            await gateway.submit(replace(event, on_done=done))

        await group.start(gateway.serve)
        group.start_soon(relay_server_events, receive, pool, submit, lambda: Target("bench", "x"))
        for number in range(jobs):
            spec = {
                "name": f"job {number}",
                "schedule": {"kind": "every", "every_seconds": 1},
                "payload": {"kind": "system_event", "text": f"tick {number}"},
                "delivery": {"mode": "announce", "channel": "bench", "to": "x"},
            }
            assert not (await pool.call("cron_add", {"job": spec})).is_error
        started = time.monotonic()
        await anyio.sleep(duration)
        elapsed = time.monotonic() - started
        count = len(handled)
        waiting = json.loads((await pool.call("cron_status", {})).text).get("pending_events")
        group.cancel_scope.cancel()
    return {
        "jobs": jobs,
        "events_handled": count,
        "events_per_s": round(count / elapsed, 1),
        "fire_to_delivered": percentiles(handled),
        "duplicates": sum(n - 1 for n in ids.values()),
        "delivered": channel.sent,
        "still_waiting": waiting,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--duration", type=float, default=60, help="seconds measured (default 60)")
    parser.add_argument("--host-jobs", type=int, default=50, help="jobs for the through-the-host run (default 50)")
    parser.add_argument("--host-duration", type=float, default=20, help="seconds of the through-the-host run")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ours = anyio.run(bench_server, args.jobs, args.duration, Path(tmp) / "state")
    with tempfile.TemporaryDirectory() as tmp:
        host = anyio.run(bench_host, args.host_jobs, args.host_duration, Path(tmp))
    plain = anyio.run(bench_plain, args.jobs, args.duration)
    report = {"hermitcrab-cron (stdio, store, ack)": ours, "plain APScheduler (in-process)": plain}
    if args.json:
        print(json.dumps({**report, "through the host": host}, indent=2))
        return
    print(f"{args.jobs} jobs every 1 s for {args.duration:g} s (targets: p99 < 1000 ms, 0 missed, 0 duplicates)")
    for name, row in report.items():
        fired, seen = row["fired_late"], row.get("seen_late")
        line = (
            f"  {name:38} fired late p50 {fired['p50_ms']:7.1f} ms  p99 {fired['p99_ms']:7.1f} ms"
            f"  missed {row['missed']:4}  duplicates {row['duplicates']:3}"
        )
        if seen is not None:
            line += f"  seen late p50 {seen['p50_ms']:.1f} ms p99 {seen['p99_ms']:.1f} ms  RSS {row['rss_mb']} MB"
            line += f" (peak {row['peak_mb']})  adding took {row['add_s']} s"
        print(line)
    late = host["fire_to_delivered"]
    print(
        f"through the host ({host['jobs']} jobs every 1 s, instant model): {host['events_per_s']} events/s,"
        f" fired -> delivered p50 {late['p50_ms']} ms p99 {late['p99_ms']} ms, duplicates {host['duplicates']},"
        f" still waiting at the end {host['still_waiting']}"
    )


if __name__ == "__main__":
    main()
