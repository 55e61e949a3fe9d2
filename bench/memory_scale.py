"""How hermitcrab-memory holds up on years of notes: the sessions of N LongMemEval haystacks as one workspace (one
file a session: about 48 files and 490 KB a haystack), over stdio MCP, beside an earlier commit's code in one run.

    .venv/bin/python bench/memory_scale.py --haystacks 20 --baseline 236d9dc

Per system, from an empty state: the wall seconds from starting the server to its first search's answer ("BM25
ready": by BM25 while vectors are still missing) and to every vector embedded (`_memory_bench.all_embedded`: the
server embeds in the background, an earlier commit's server within its sync), its first sync alone
(`memory_status.last_sync_seconds`: reading and BM25), search latency at the client once the vectors are in (the
first `--searches` questions of LongMemEval, each a search of 6 results), and RSS of the server then, on a restart
over that index after one search, and once the embedder has been dropped. What grows with the notes shows here
and not on one haystack: finding what changed before each search walks every file, and a chat log's speaker
labels, chunk terms and vectors are held for every chunk.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).parent))

import _memory_longmemeval as longmemeval
from _memory_bench import all_embedded, percentile
from memory_index import IDLE_S, checkout, rss_mb, serve, server_pid


def build(items: list[dict[str, Any]], workspace: Path) -> int:
    """Every session of `items` as its own daily-log file (`memory/<date>-<question>-<n>.md`); the bytes written."""
    (workspace / "memory").mkdir(parents=True)
    written = 0
    for item in items:
        sessions = zip(item["haystack_dates"], item["haystack_sessions"], strict=True)
        for number, (date, turns) in enumerate(sessions, start=1):
            day = longmemeval.parse_date(date)
            text = f"## {day:%H:%M} session\n\n" + "\n".join(longmemeval.turn_lines(turns)) + "\n"
            path = workspace / "memory" / f"{day:%Y-%m-%d}-{item['question_id']}-{number}.md"
            written += path.write_text(text, encoding="utf-8")
    return written


async def measure(workspace: Path, state: Path, code: Path | None, queries: list[str]) -> dict[str, float]:
    """Index from scratch, time the searches, then restart over the index to see what it holds idle."""
    found: dict[str, float] = {}
    began = time.perf_counter()
    async with serve([], workspace, state, code) as client:
        await client.call_tool("memory_search", {"query": queries[0]})  # waits for the first sync (BM25)
        found["BM25 ready s"] = time.perf_counter() - began
        done = await all_embedded(client)
        found["all vectors s"] = time.perf_counter() - began
        found["first sync s"] = float(done["last_sync_seconds"])
        found["RSS indexed MB"] = rss_mb(server_pid())
        latencies: list[float] = []
        for query in queries:
            began = time.perf_counter()
            await client.call_tool("memory_search", {"query": query})
            latencies.append(time.perf_counter() - began)
    found["search p50 ms"] = statistics.median(latencies) * 1000
    found["p99 ms"] = percentile(latencies, 0.99) * 1000
    async with serve(["--embedder-idle-s", str(IDLE_S)], workspace, state, code) as client:
        await client.call_tool("memory_search", {"query": queries[0]})
        found["RSS after a search MB"] = rss_mb(server_pid())
        await anyio.sleep(IDLE_S + 1.5)
        found["RSS embedder dropped MB"] = rss_mb(server_pid())
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--haystacks", type=int, default=20, help="LongMemEval haystacks merged (default 20)")
    parser.add_argument("--searches", type=int, default=40, help="searches timed per system (default 40)")
    parser.add_argument("--baseline", metavar="REV", help="also run the defaults of this commit's code")
    args = parser.parse_args()
    items = longmemeval.load()
    queries = [item["question"] for item in items][: args.searches]
    with tempfile.TemporaryDirectory(prefix="memory-scale-") as tmp, ExitStack() as stack:
        workspace = Path(tmp) / "workspace"
        size = build(items[: args.haystacks], workspace)
        files = len(list((workspace / "memory").iterdir()))
        systems: dict[str, Path | None] = {"ours": None}
        if args.baseline:
            systems[args.baseline] = stack.enter_context(checkout(args.baseline, Path(tmp) / "baseline"))
        rows = {}
        for name, code in systems.items():
            print(f"{name}: indexing {files} files ...", file=sys.stderr)
            rows[name] = anyio.run(measure, workspace, Path(tmp) / f"state-{name}", code, queries)
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    print(f"\n{files} files, {size / 1e6:.1f} MB of notes; {os.cpu_count()} cores, load average {load}\n")
    columns = list(next(iter(rows.values())))
    print("| system | " + " | ".join(columns) + " |")
    print("|---|" + "---|" * len(columns))
    for name, row in rows.items():
        print(f"| {name} | " + " | ".join(f"{row[column]:.1f}" for column in columns) + " |")


if __name__ == "__main__":
    main()
