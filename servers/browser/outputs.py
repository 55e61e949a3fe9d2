"""Name files the browser writes (PDFs, screenshots, downloads) inside the output directory only."""

from __future__ import annotations

import re
import time
from pathlib import Path

# Well under the 255 bytes a file name may have, even when every character takes several bytes in UTF-8.
_MAX_NAME_CHARS = 60


def output_path(directory: Path, filename: str | None, default_stem: str, suffix: str) -> Path:
    """`directory/<safe name>`: any folders in `filename` are dropped, so a page or model cannot write elsewhere."""
    name = Path(filename).name if filename else ""
    name = re.sub(r"[^\w.\- ]", "_", name).strip(". ")[-_MAX_NAME_CHARS:]
    if not name:
        name = f"{default_stem}-{time.strftime('%Y%m%d-%H%M%S')}{suffix}"
    elif not name.lower().endswith(suffix):
        name += suffix
    directory.mkdir(parents=True, exist_ok=True)
    return directory / name
