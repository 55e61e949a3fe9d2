"""`hermitcrab usage [--days N] [--by model|session|day|kind]`: what the model calls of the last days cost.

It reads the transcripts (`host/usage/`), so it works beside a running host and counts every process's calls.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated
from zoneinfo import ZoneInfo

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..config import load_settings
from ..usage.prices import Prices
from ..usage.tally import GroupBy, Totals, price_hints, tally


def usage(
    days: Annotated[
        int, typer.Option("--days", min=1, help="How many days back, today included (days in the agent.timezone).")
    ] = 7,
    by: Annotated[
        GroupBy,
        typer.Option(
            "--by", help="One row per model, session, day, or kind (turn, heartbeat, compaction, flush, sub-agent)."
        ),
    ] = "model",
) -> None:
    """Tokens (input, the share read from the provider's cache, output), model calls and cost of recent days.

    Prices: genai-prices' bundled table (never fetched), else a profile's own `price` in config.toml; a model on
    this machine costs 0. A cost shown as ? has no known price; a line below says how to set one."""
    settings = load_settings()
    zone = ZoneInfo(settings.agent.timezone) if settings.agent.timezone else None
    today = dt.datetime.now(zone).astimezone(zone)
    since = today.replace(hour=0, minute=0, second=0, microsecond=0) - dt.timedelta(days=days - 1)
    groups, total = tally(settings.state, Prices(settings.providers), since, by, zone)
    table = Table(title=f"Model usage since {since:%Y-%m-%d}, by {by}")
    for heading in (by, "input tokens", "cached", "output tokens", "calls", "cost (USD)"):
        table.add_column(heading, justify="left" if heading == by else "right")
    for name, totals in groups.items():
        table.add_row(escape(name), *_cells(totals))
    table.add_section()
    table.add_row("total", *_cells(total), style="bold")
    console = Console()
    console.print(table)
    for hint in price_hints(total.unpriced):
        console.print(escape(hint), style="yellow", soft_wrap=True)


def _cells(totals: Totals) -> list[str]:
    counts = totals.usage
    return [
        f"{counts.input_tokens:,}",
        f"{totals.cached_share:.0%}",
        f"{counts.output_tokens:,}",
        f"{totals.calls:,}",
        totals.shown_cost,
    ]


def register(app: typer.Typer) -> None:
    app.command()(usage)
