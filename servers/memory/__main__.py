"""`hermitcrab-memory`: run the memory MCP server over stdio (default) or streamable HTTP, or `index` the memory
files now (with a progress bar) and exit."""

from __future__ import annotations

import argparse
import os
import sys
import time
from contextlib import suppress
from dataclasses import replace

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from threadpoolctl import threadpool_limits

from hermitcrab.servers._common.cli import build_parser
from hermitcrab.servers._common.paths import default_paths
from hermitcrab.servers._common.serve import serve
from hermitcrab.util.private import keep_private
from hermitcrab.util.server_options import MEMORY

from .embed import DEFAULT_IDLE_S, EMBEDDER_HELP, make_embedder
from .files import EVERGREEN, MEMORY_DIR
from .index import MemoryIndex
from .ranking import RankSettings
from .server import build_server, memory_roots
from .vectors import ProgressFactory

PROGRESS_AFTER_S = 1.0


def _parser() -> argparse.ArgumentParser:
    return build_parser(MEMORY, {"embedder_idle_s": DEFAULT_IDLE_S}, embedder_help=EMBEDDER_HELP)


class _Bar:
    """A rich progress bar on stderr (stdout is the MCP stream) for embedding that has already taken `after_s`
    seconds, so a quick sync shows nothing; it disappears when the embedding stops."""

    def __init__(self, total: int, after_s: float) -> None:
        self._began = time.monotonic()
        self._after_s = after_s
        self._bar = Progress(
            TextColumn("indexing memory: embedding chunks"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=True,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self._task = self._bar.add_task("embedding", total=total)

    def advance(self, count: int) -> None:
        self._bar.advance(self._task, count)
        if not self._bar.live.is_started and time.monotonic() - self._began >= self._after_s:
            self._bar.start()

    def close(self) -> None:
        self._bar.stop()


def _progress_bar(after_s: float = PROGRESS_AFTER_S) -> ProgressFactory | None:
    """Progress bars for embedding (`_Bar`), or None when stderr is not a terminal."""
    if not sys.stderr.isatty():
        return None
    return lambda total: _Bar(total, after_s)


def index_now(index: MemoryIndex) -> str:
    """Bring `index` up to date with its files, with a progress bar on a terminal; a one-line summary."""
    index.sync(_progress_bar())
    phases = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in index.last_sync_phases.items())
    summary = f"indexed {len(index.files)} files, {index.chunk_count()} chunks in {index.last_sync_seconds:.2f} s"
    notes = [f"{len(index.skipped)} skipped (see memory_status)"] if index.skipped else []
    return "; ".join([f"{summary} ({phases})" if phases else summary, *notes, *index.warnings])


def _settings(mode: str) -> RankSettings:
    """One leg's plain ranking for comparisons: no model, and windows sized to show about as much as hybrid's."""
    if mode in ("text", "vector"):
        return replace(RankSettings(), legs=mode, rescore=False, window_chars=520)
    return RankSettings()


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    # The server's matrix products are small (a query against the chunks, a batch of passages per thread): a
    # second BLAS thread only waits, and on a busy machine made a search several times slower.
    threadpool_limits(limits=1, user_api="blas")
    workspace, state = default_paths("memory", os.environ)
    try:
        embedder = make_embedder(args.embedder, os.environ.get("OPENAI_API_KEY"), args.embedder_idle_s)
    except ValueError as exc:
        _parser().error(str(exc))
    workspace, state = args.workspace or workspace, args.state or state
    keep_private(state, *(workspace / name for name in (*EVERGREEN, MEMORY_DIR)))
    if args.command == "index":
        if not workspace.is_dir():
            _parser().error(f"the workspace {workspace} is not a folder")
        roots = memory_roots(workspace, tuple(args.extra_path))
        print(index_now(MemoryIndex(roots, state, embedder, _settings(args.search))))
        return
    server = build_server(
        workspace=workspace,
        state=state,
        embedder=embedder,
        extra_paths=tuple(args.extra_path),
        settings=_settings(args.search),
        progress=_progress_bar(),
        freeze_heap=True,
    )
    with suppress(KeyboardInterrupt):
        serve(server, args)


if __name__ == "__main__":
    main()
