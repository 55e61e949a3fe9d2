"""hermitcrab's wheel and fresh venvs holding it, made with uv: for the packaging test and bench/extras.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from packaging.utils import canonicalize_name
from uv import find_uv_bin

from tests.support.extras import ROOT

# Every package folder pyproject.toml maps, so a new top-level folder cannot be left out of the wheel.
PACKAGE_FOLDERS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"].values()
SOURCES = ("pyproject.toml", "README.md", *PACKAGE_FOLDERS)


def uv(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run uv, never letting it download a Python of its own; its cache is UV_CACHE_DIR's (default: the user's)."""
    env = {**os.environ, **(env or {}), "UV_PYTHON_DOWNLOADS": "never", "NO_COLOR": "1"}
    result = subprocess.run([find_uv_bin(), *map(str, args)], capture_output=True, text=True, env=env, timeout=500)
    assert result.returncode == 0, f"uv {' '.join(map(str, args))} failed:\n{result.stderr}"
    return result


def build_wheel(folder: Path, env: dict[str, str] | None = None) -> Path:
    """The wheel of a copy of the sources, so that no stale build/ of the checkout slips into it."""
    source = folder / "source"
    source.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(ROOT / name, source / name)
    uv("build", "--quiet", "--wheel", "--out-dir", folder / "dist", source, env=env)
    (wheel,) = (folder / "dist").glob("hermitcrab-*.whl")
    return wheel


def requirement(wheel: Path, extra: str | None) -> str:
    """`hermitcrab[extra] @ file:///...whl`; without an extra, the core install."""
    return f"hermitcrab{f'[{extra}]' if extra else ''} @ {wheel.as_uri()}"


def make_venv(venv: Path, wheel: Path, extra: str | None, env: dict[str, str] | None = None) -> Path:
    """A fresh venv holding the wheel with `extra`; a warning from uv (an unknown extra, say) fails it."""
    uv("venv", "--quiet", "--python", sys.executable, venv, env=env)
    installed = uv("pip", "install", "--python", venv / "bin" / "python", requirement(wheel, extra), env=env)
    assert "warning" not in installed.stderr.lower(), installed.stderr
    return venv


def distributions(venv: Path) -> set[str]:
    """The normalized names of the distributions installed in `venv`."""
    listed = json.loads(uv("pip", "list", "--python", venv / "bin" / "python", "--format", "json").stdout)
    return {canonicalize_name(entry["name"]) for entry in listed}
