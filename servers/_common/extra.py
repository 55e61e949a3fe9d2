"""What a server started without its extra says: the one pip line that fixes it, instead of an ImportError."""

from __future__ import annotations

import sys
from typing import NoReturn


def exit_for_missing_extra(extra: str, missing: ModuleNotFoundError) -> NoReturn:
    """Exit 2 with one line on stderr naming the extra that installs `missing`, a third-party module the server needs.

    Each server package imports its modules under `try` and calls this from `except ModuleNotFoundError`: its
    console script imports the package first, so nothing has run yet. A missing module of hermitcrab itself is a
    broken checkout, not a missing extra, and is raised as it is.
    """
    if (missing.name or "").partition(".")[0] == "hermitcrab":
        raise missing
    print(f"hermitcrab-{extra} needs the {extra} extra: pip install 'hermitcrab[{extra}]'", file=sys.stderr)
    raise SystemExit(2)
