"""`./scripts/run` installs only when the checkout changed, and says where `hermitcrab` lives.

The script runs for real, in a copy of the checkout's scripts and pyproject.toml whose `.venv/bin/python` records
each `pip install` instead of making one (a real install takes a minute and would race the suite's own venv);
everything else it asks of Python runs on the real interpreter, and `.venv/bin/hermitcrab` records its arguments.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]


def _checkout(tmp_path: Path) -> Path:
    root = tmp_path / "checkout"
    (root / "scripts").mkdir(parents=True)
    for script in ("run", "_bootstrap.sh"):
        shutil.copy2(ROOT / "scripts" / script, root / "scripts" / script)
    shutil.copy2(ROOT / "pyproject.toml", root / "pyproject.toml")
    bin_dir = root / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    shims = {
        "python": f'[ "$1 $2" = "-m pip" ] && {{ echo "$*" >> {root}/pip.log; exit 0; }}\nexec {sys.executable} "$@"',
        "hermitcrab": f'echo "$*" >> {root}/hermitcrab.log',
    }
    for name, body in shims.items():
        (bin_dir / name).write_text(f"#!/usr/bin/env bash\n{body}\n")
        (bin_dir / name).chmod(0o755)
    return root


def _run(root: Path, home: Path) -> str:
    env = {**os.environ, "HERMITCRAB_HOME": str(home)}
    done = subprocess.run([root / "scripts" / "run", "--help"], env=env, capture_output=True, text=True, check=True)
    return done.stdout


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def test_a_second_run_does_not_reinstall(tmp_path: Path) -> None:
    root, home = _checkout(tmp_path), tmp_path / "home"
    first = _run(root, home)
    assert _lines(root / "pip.log") == [f"-m pip install --quiet -e {root}[all]"]
    assert f"{root}/.venv/bin/hermitcrab" in first and "source" in first  # where the command is, told once
    assert _lines(root / "hermitcrab.log") == ["init", "chat --help"]

    (home / "config.toml").parent.mkdir(parents=True)
    (home / "config.toml").write_text("")
    second = _run(root, home)
    assert len(_lines(root / "pip.log")) == 1, "the second launch reinstalled"
    assert second == ""
    assert _lines(root / "hermitcrab.log")[-1] == "chat --help"

    with (root / "pyproject.toml").open("a") as pyproject:
        pyproject.write("\n# a dependency changed\n")
    _run(root, home)
    assert len(_lines(root / "pip.log")) == 2, "a changed pyproject.toml did not reinstall"
