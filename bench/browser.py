"""How big and how fast is our snapshot, next to Playwright's raw aria_snapshot(), on five kinds of page?

Run: .venv/bin/python bench/browser.py [--runs 5] [--json]

For each page in bench/pages/browser/ (article, long form, table, app-like, iframes) it reports the
size in characters and the median latency of: Playwright's `aria_snapshot()` (default mode, no refs),
`aria_snapshot(mode="ai")` (refs and iframes: what playwright-mcp sends), ours, and ours compact.
It also checks the target: ours is smaller than the raw snapshot that carries refs (mode="ai") on
every page, every actionable element of that snapshot keeps its ref in ours, and every ref we show
resolves to exactly one element. The default mode has no refs and leaves iframes empty, so it is
shown for reference: on pages made mostly of controls it is smaller than anything that has refs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

from playwright.async_api import Page, async_playwright

sys.path.insert(0, str(Path(__file__).parents[1]))

from hermitcrab.servers.browser.launcher import LAUNCH_ARGS, find_executable
from hermitcrab.servers.browser.snapshot import Node, parse, render
from tests.support.static_files import serve_directory

PAGES = Path(__file__).parent / "pages" / "browser"
KINDS = {
    "article": "article.html",
    "long form": "form.html",
    "table": "table.html",
    "app-like": "app.html",
    "iframes": "iframes.html",
}


async def timed(fn: Callable[[], Awaitable[str]], runs: int) -> tuple[str, float]:
    """The output and the median wall time in milliseconds over `runs` calls."""
    times, out = [], ""
    for _ in range(runs):
        start = time.perf_counter()
        out = await fn()
        times.append((time.perf_counter() - start) * 1000)
    return out, statistics.median(times)


def actionable_refs(nodes: list[Node]) -> Iterator[str]:
    for node in nodes:
        if node.actionable and node.ref:
            yield node.ref
        yield from actionable_refs(node.children)


async def measure(page: Page, runs: int) -> dict[str, Any]:
    raw, raw_ms = await timed(lambda: page.aria_snapshot(), runs)
    ai, ai_ms = await timed(lambda: page.aria_snapshot(mode="ai"), runs)

    async def ours(compact: bool) -> str:
        return render(await page.aria_snapshot(mode="ai"), compact=compact, base_url=page.url).text

    full, full_ms = await timed(lambda: ours(False), runs)
    small, small_ms = await timed(lambda: ours(True), runs)

    async def render_only() -> str:  # our own cost alone: rendering an already captured AI snapshot
        return render(ai, base_url=page.url).text

    _, render_ms = await timed(render_only, runs)
    wanted = set(actionable_refs(parse(ai)))
    shown = render(ai, base_url=page.url).refs
    compact_shown = render(ai, compact=True, base_url=page.url).refs
    resolving = [ref for ref in shown if await page.locator(f"aria-ref={ref}").count() == 1]
    return {
        "raw_chars": len(raw),
        "raw_ms": raw_ms,
        "ai_chars": len(ai),
        "ai_ms": ai_ms,
        "ours_chars": len(full),
        "ours_ms": full_ms,
        "render_ms": render_ms,
        "compact_chars": len(small),
        "compact_ms": small_ms,
        "actionable": len(wanted),
        "missing": len(wanted - shown),
        "missing_compact": len(wanted - compact_shown),
        "refs_resolving": f"{len(resolving)}/{len(shown)}",
    }


async def run(runs: int) -> dict[str, dict[str, Any]]:
    results: dict[str, dict[str, Any]] = {}
    with serve_directory(PAGES) as base:
        async with async_playwright() as playwright:
            executable = find_executable(None, playwright.chromium.executable_path)
            browser = await playwright.chromium.launch(
                executable_path=str(executable) if executable else None, args=list(LAUNCH_ARGS)
            )
            page = await browser.new_page(viewport={"width": 1280, "height": 720})
            for kind, name in KINDS.items():
                await page.goto(f"{base}/{name}", wait_until="load")
                results[kind] = await measure(page, runs)
            await browser.close()
    return results


def table(results: dict[str, dict[str, Any]]) -> str:
    lines = [
        "| page | raw aria_snapshot() | raw mode=ai | ours | ours compact "
        "| actionable refs kept (ours / compact) | refs resolving |",
        "|---|---|---|---|---|---|---|",
    ]
    for kind, r in results.items():
        lines.append(
            f"| {kind} | {r['raw_chars']:,} ch, {r['raw_ms']:.0f} ms | {r['ai_chars']:,} ch, {r['ai_ms']:.0f} ms "
            f"| {r['ours_chars']:,} ch, {r['ours_ms']:.0f} ms (render {r['render_ms']:.1f}) "
            f"| {r['compact_chars']:,} ch, {r['compact_ms']:.0f} ms "
            f"| {r['actionable'] - r['missing']}/{r['actionable']} "
            f"/ {r['actionable'] - r['missing_compact']}/{r['actionable']} "
            f"| {r['refs_resolving']} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs per measurement (median reported)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a Markdown table")
    args = parser.parse_args()
    results = asyncio.run(run(args.runs))
    print(json.dumps(results, indent=2) if args.json else table(results))
    # Like for like: mode="ai" is the raw snapshot that carries refs and iframe contents, as ours does.
    smaller = all(r["ours_chars"] < r["ai_chars"] for r in results.values())
    beats_default = sum(r["ours_chars"] < r["raw_chars"] for r in results.values())
    reachable = all(r["missing"] == 0 for r in results.values())
    print(
        f"\nours smaller than raw mode=ai on every page: {smaller}; smaller than ref-less default mode on "
        f"{beats_default}/{len(results)} pages; every actionable element keeps its ref: {reachable}",
        file=sys.stderr,
    )
    sys.exit(0 if smaller and reachable else 1)


if __name__ == "__main__":
    main()
