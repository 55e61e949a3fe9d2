"""pyproject.toml's dependencies by part: what the core install brings, and what each part's extra adds."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
NOT_PARTS = ("all", "test", "dev")


def requirement_names(requirements: list[str]) -> set[str]:
    """The normalized distribution names of `requirements` (`discord.py>=2.7` -> `discord-py`)."""
    return {canonicalize_name(Requirement(requirement).name) for requirement in requirements}


CORE = requirement_names(PROJECT["dependencies"])
EXTRAS = {
    extra: requirement_names(requirements)
    for extra, requirements in PROJECT["optional-dependencies"].items()
    if extra not in NOT_PARTS
}
