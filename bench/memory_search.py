"""How fast the memory index answers in process on LongMemEval haystacks, beside an earlier commit's code.

    .venv/bin/python bench/memory_search.py --baseline 5f7092d
    .venv/bin/python bench/memory_search.py --limit 3 --rounds 1

Each system runs in its own process, one after the other, `--rounds` times (alternating, so that a slow spell of a
shared machine falls on both). A process opens the index of each of the first `--limit` haystacks (built once and
cached by `bench/_memory_misses.py`), and times `MemoryIndex.search` for the first 15 questions, 3 times each, and
its first step (`signals`: the legs and their fusion) alone. MCP is left out: `bench/memory_index.py` and
`bench/longmemeval.py` time the same searches over stdio, where a call that does nothing already costs ~2.4 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _memory_bench import percentile

QUESTIONS = 15
REPEATS = 3


def worker(limit: int) -> None:
    """Time this process's code and print the timings (seconds) as JSON."""
    from _memory_misses import CACHE, cases, open_index
    from threadpoolctl import threadpool_limits

    from hermitcrab.servers.memory.ranking import RankSettings

    threadpool_limits(limits=1, user_api="blas")  # as the server does
    workspaces = list(cases("longmemeval", CACHE))
    questions = [case.probes[0].text for case in workspaces][:QUESTIONS]
    searches: list[float] = []
    signals: list[float] = []
    for case in workspaces[:limit]:
        index = open_index(case, "use", RankSettings(), CACHE)
        index.search("warm up", 6)
        for question in questions:
            for _ in range(REPEATS):
                began = time.perf_counter()
                index.legs(question)
                signals.append(time.perf_counter() - began)
                began = time.perf_counter()
                index.search(question, 6)
                searches.append(time.perf_counter() - began)
    print(json.dumps({"search": searches, "signals": signals}))


def run(code: Path | None, limit: int) -> dict[str, list[float]]:
    env = {**os.environ, "PYTHONPATH": str(code)} if code else None
    command = [sys.executable, __file__, "--worker", "--limit", str(limit)]
    done = subprocess.run(command, env=env, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=6, help="haystacks (default 6)")
    parser.add_argument("--rounds", type=int, default=3, help="times each system runs, alternating (default 3)")
    parser.add_argument("--baseline", metavar="REV", help="also run this commit's code")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.limit)
        return
    from memory_index import checkout

    with tempfile.TemporaryDirectory(prefix="memory-search-") as tmp, ExitStack() as stack:
        systems: dict[str, Path | None] = {"ours": None}
        if args.baseline:
            systems[args.baseline] = stack.enter_context(checkout(args.baseline, Path(tmp)))
        load = Path("/proc/loadavg").read_text().split()[:3]
        print(f"LongMemEval haystacks: {args.limit}, {os.cpu_count()} cores, load average {' '.join(load)}\n")
        print("| round | system | search p10 ms | search p50 ms | signals p50 ms |")
        print("|---|---|---|---|---|")
        for round_number in range(1, args.rounds + 1):
            for name, code in systems.items():
                timings = run(code, args.limit)
                search, signals = timings["search"], timings["signals"]
                print(
                    f"| {round_number} | {name} | {percentile(search, 0.1) * 1000:.2f} "
                    f"| {percentile(search, 0.5) * 1000:.2f} | {percentile(signals, 0.5) * 1000:.2f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
