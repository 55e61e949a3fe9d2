"""Crash trials, quick: each part with durable state is killed with SIGKILL at a random moment under load, started
again on its state and checked (bench/chaos.py runs 100 trials per part)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.support import chaos
from tests.support.fake_llm import running_fake_llm

TRIALS = {"exec": 1, "spawn": 1, "memory": 1, "cron": 1, "host": 1}


@pytest.mark.parametrize("part", sorted(TRIALS))
async def test_a_part_killed_at_random_keeps_its_promises(part: str, tmp_path: Path) -> None:
    rng = random.Random(part)
    with running_fake_llm() as llm:
        trial = chaos.host_trial_for(llm, kills=1) if part == "host" else getattr(chaos, f"{part}_trial")
        for number in range(TRIALS[part]):
            base = tmp_path / str(number)
            base.mkdir()
            assert await trial(base, rng) == []
