"""`hermitcrab-memory`: run the memory MCP server over stdio (default) or streamable HTTP."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from contextlib import suppress
from dataclasses import replace
from pathlib import Path

from rich.console import Console
from rich.progress import Progress

from hermitcrab.servers._common.paths import default_paths
from hermitcrab.servers._common.serve import add_serve_flags, serve

from .embed import DEFAULT_EMBEDDER, DEFAULT_IDLE_S, EMBEDDER_HELP, make_embedder
from .ranking import RankSettings
from .server import build_server


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hermitcrab-memory",
        description="Markdown long-term memory with hybrid (BM25 + vector) search, as an MCP server.",
    )
    parser.add_argument(
        "--workspace", type=Path, help="folder holding MEMORY.md and memory/ (default: $HERMITCRAB_HOME/workspace)"
    )
    parser.add_argument(
        "--state", type=Path, help="where the rebuildable index lives (default: $HERMITCRAB_HOME/state/memory)"
    )
    parser.add_argument("--embedder", default=DEFAULT_EMBEDDER, help=EMBEDDER_HELP)
    parser.add_argument(
        "--embedder-idle-s",
        type=float,
        default=DEFAULT_IDLE_S,
        help=f"drop a local embedding model after this many seconds unused (default {DEFAULT_IDLE_S:g}; "
        "it loads again in under a second)",
    )
    parser.add_argument(
        "--extra-path",
        type=Path,
        action="append",
        default=[],
        help="another Markdown file or folder to index (repeatable)",
    )
    parser.add_argument(
        "--search",
        choices=["hybrid", "text", "vector"],
        default="hybrid",
        help="which legs to rank with (text-only and vector-only are for comparison)",
    )
    add_serve_flags(parser)
    return parser


def _progress_bar() -> Callable[[int], Callable[[int], None]] | None:
    """A rich progress bar on stderr for long indexing; None when stderr is not a terminal."""
    if not sys.stderr.isatty():
        return None

    def start(total: int) -> Callable[[int], None]:
        bar = Progress(transient=True, console=Console(stderr=True), redirect_stdout=False, redirect_stderr=False)
        task = bar.add_task("embedding memory", total=total)
        bar.start()
        done = 0

        def advance(count: int) -> None:
            nonlocal done
            done += count
            bar.update(task, advance=count)
            if done >= total:
                bar.stop()

        return advance

    return start


def _settings(mode: str) -> RankSettings:
    """One leg's plain ranking for comparisons: no model, and windows sized to show about as much as hybrid's."""
    plain = replace(RankSettings(), models=None, window_chars=520)
    if mode == "text":
        return replace(plain, vector_weight=0.0)
    if mode == "vector":
        return replace(plain, text_weight=0.0)
    return RankSettings()


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    workspace, state = default_paths("memory", os.environ)
    try:
        embedder = make_embedder(args.embedder, os.environ.get("OPENAI_API_KEY"), args.embedder_idle_s)
    except ValueError as exc:
        _parser().error(str(exc))
    server = build_server(
        workspace=args.workspace or workspace,
        state=args.state or state,
        embedder=embedder,
        extra_paths=tuple(args.extra_path),
        settings=_settings(args.search),
        progress=_progress_bar(),
    )
    with suppress(KeyboardInterrupt):
        serve(server, args.http, args.log_level)


if __name__ == "__main__":
    main()
