"""Hooks for the tests, written as the owner writes them: a HOOK.md folder whose command is a small Python script
(reading the event on stdin, answering on stdout), and a Python package with an entry point in the
`hermitcrab.hooks` group, found through a dist-info folder on the path rather than pip-installed."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

SEEN = "seen.jsonl"
"""Each script hook appends every payload it is given here, in its own folder (its working directory)."""


def command_hook(root: Path, name: str, events: list[str], script: str, **front: Any) -> Path:
    """`root/name/HOOK.md` running `script` (Python, after a preamble that reads the payload into `event` and
    records it in SEEN; it answers by printing JSON) with this interpreter; `front` adds frontmatter keys."""
    folder = root / name
    folder.mkdir(parents=True)
    preamble = "import json, sys, time\nevent = json.load(sys.stdin)\n"
    preamble += f"open({SEEN!r}, 'a').write(json.dumps(event) + '\\n')\n"
    (folder / "hook.py").write_text(preamble + textwrap.dedent(script))
    lines = [f"events: {json.dumps(events)}", f"command: {json.dumps([sys.executable, 'hook.py'])}"]
    lines += [f"{key}: {json.dumps(value)}" for key, value in front.items()]
    (folder / "HOOK.md").write_text("---\n" + "\n".join(lines) + f"\n---\nThe test hook {name}.\n")
    return folder


def seen(folder: Path) -> list[dict[str, Any]]:
    """The payloads the hook in `folder` was given, in order."""
    path = folder / SEEN
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def entry_point_package(site: Path, name: str, module: str, source: str, value: str) -> Path:
    """A module `module` with `source` and a distribution declaring `name = value` in the `hermitcrab.hooks` group,
    laid out in `site` as pip would install them; put `site` on sys.path (or PYTHONPATH) to install it."""
    site.mkdir(parents=True, exist_ok=True)
    (site / f"{module}.py").write_text(textwrap.dedent(source))
    info = site / f"{module}_hook-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}-hook\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[hermitcrab.hooks]\n{name} = {value}\n")
    return site
