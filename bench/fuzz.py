"""Every tool of every server fuzzed from its own input schema plus breaking values, 10,000 calls per server by
default: deaths, crashes, unclear errors, and whether any file outside the roots was touched (tests/fuzz/ runs a
few hundred calls each).

Run: .venv/bin/python bench/fuzz.py [--calls 10000] [--servers memory,exec,cron,spawn,browser]
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.fuzz_servers import SERVERS  # noqa: E402
from tests.support.fuzzing import Tree, fuzzing  # noqa: E402


def fuzz(name: str, calls: int, seed: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tree = Tree.make(Path(tmp))
        start = time.perf_counter()
        try:
            with fuzzing(SERVERS[name](tree), tree) as fuzzer:
                report = fuzzer.run(calls, seed)
            canary = "untouched"
        except AssertionError as exc:
            canary = f"TOUCHED: {exc}"
        seconds = time.perf_counter() - start
    outcomes = ", ".join(f"{kind} {count}" for kind, count in sorted(report.outcomes.items()))
    print(f"{name:8} calls {report.calls:6}  deaths {report.deaths}  defects {len(report.defects):4}  canary {canary}")
    print(f"         {outcomes}  ({seconds:.0f} s)")
    for defect in report.defects[:5]:
        print(f"         {defect[:400]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--servers", default=",".join(SERVERS))
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)  # a crash logs its traceback with the (10 MB) arguments
    for name in args.servers.split(","):
        fuzz(name, args.calls, args.seed)


if __name__ == "__main__":
    main()
