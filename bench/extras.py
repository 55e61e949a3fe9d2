"""Installing one part: the size of a fresh venv per extra, and how long it takes to make with uv (the packaging
test's way: warm and cold cache, one at a time and all at once) next to pip, the baseline.

Run: .venv/bin/python bench/extras.py [--no-pip]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.extras import EXTRAS  # noqa: E402
from tests.support.wheel import build_wheel, make_venv, requirement  # noqa: E402

EXTRAS_MEASURED: list[str | None] = [None, *EXTRAS, "all"]


def label(extra: str | None) -> str:
    return extra or "(core)"


def seconds(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def megabytes(folder: Path) -> float:
    """Bytes of the files under `folder`, each counted once even where uv hard-linked it from its cache."""
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file() and not path.is_symlink()) / 1e6


def pip_venv(venv: Path, wheel: Path, extra: str | None) -> None:
    """The baseline: the standard library's venv and pip, with pip's own (warm) cache."""
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    install = [venv / "bin" / "pip", "install", "--quiet", "--disable-pip-version-check", requirement(wheel, extra)]
    subprocess.run(install, check=True, capture_output=True)


def all_at_once(root: Path, wheel: Path, extras: Iterable[str | None], cache: Path | None) -> float:
    env = {"UV_CACHE_DIR": str(cache)} if cache else None
    wanted = list(extras)

    def make_all() -> None:
        with ThreadPoolExecutor(len(wanted)) as pool:
            list(pool.map(lambda extra: make_venv(root / label(extra), wheel, extra, env), wanted))

    return seconds(make_all)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-pip", action="store_true", help="skip the pip baseline (about a minute per venv)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        wheel = build_wheel(work)
        all_at_once(work / "warm-up", wheel, EXTRAS_MEASURED, None)  # fills uv's cache, so that "warm" means warm
        print(f"{'extra':<10} {'venv MB':>8} {'uv s':>7} {'pip s':>7}")
        for extra in EXTRAS_MEASURED:
            venv = work / "uv" / label(extra)
            took = seconds(partial(make_venv, venv, wheel, extra))
            pip = "-" if args.no_pip else f"{seconds(partial(pip_venv, work / 'pip' / label(extra), wheel, extra)):.1f}"
            print(f"{label(extra):<10} {megabytes(venv):8.1f} {took:7.1f} {pip:>7}", flush=True)
        servers = [None, *(extra for extra in EXTRAS if extra != "discord")]
        warm = all_at_once(work / "parallel-warm", wheel, servers, None)
        cold = all_at_once(work / "parallel-cold", wheel, servers, work / "empty-cache")
        print(f"the packaging test's {len(servers)} venvs at once with uv: warm cache {warm:.1f} s, cold {cold:.1f} s")


if __name__ == "__main__":
    main()
