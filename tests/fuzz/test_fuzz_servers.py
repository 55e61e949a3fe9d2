"""Every tool of every server under fuzzed arguments: no death, no crash, every failure a clean tool error that
names the problem, and no file touched outside the server's roots (bench/fuzz.py runs 10,000 calls each)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.fuzz_servers import SERVERS
from tests.support.fuzzing import Tree, assert_clean, fuzzing

CALLS = {"memory": 200, "exec": 200, "cron": 200, "spawn": 200, "browser": 50}


@pytest.mark.parametrize("name", sorted(SERVERS))
def test_tools_survive_fuzzing(name: str, tmp_path: Path) -> None:
    if name == "browser" and not (shutil.which("chromium") or shutil.which("chromium-browser")):
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    tree = Tree.make(tmp_path)
    with fuzzing(SERVERS[name](tree), tree) as fuzzer:
        report = fuzzer.run(CALLS[name])
    assert_clean(report, CALLS[name])
