"""State kept as one JSON object in a file, for every part: read whole, replaced whole by the one atomic write.

A file that holds no JSON object is torn: every save here is atomic, so only a disk fault, a hand edit or a writer
from elsewhere leaves one. Each store says what then: start empty with a warning (`load`), or decide itself, on
`Torn`, whether to set the file aside for a person to look into (`read`, `set_aside`).
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from .files import Stamp, atomic_write_json, stamp

logger = logging.getLogger(__name__)


class Torn(ValueError):
    """`path` is there but holds no JSON object; the message says what it holds instead."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(reason)
        self.path = path


@dataclass(frozen=True)
class JsonFile:
    """One JSON object in `path`, saved atomically and 0600 (state holds conversations, tokens and people);
    `indent` None keeps a big file that only programs read on one line (the exec server's undo manifest), and
    `durable` False skips the fsyncs for a file written twice a call whose loss in a power cut costs little."""

    path: Path
    indent: int | None = 2
    durable: bool = True

    def read(self) -> dict[str, Any]:
        """The object; FileNotFoundError when there is no file, Torn when it holds anything else."""
        raw = self.path.read_bytes()
        try:
            data: object = json.loads(raw)
        except ValueError as exc:  # not JSON, or not UTF-8
            raise Torn(self.path, str(exc)) from exc
        if not isinstance(data, dict):
            raise Torn(self.path, f"a JSON {type(data).__name__}, not an object")
        return cast(dict[str, Any], data)

    def load(self, instead: str) -> dict[str, Any]:
        """The object, or {} when there is no file or a torn one, with a warning ending in `instead` (what an empty
        start means for this store); the torn file stays until the next save replaces it."""
        try:
            return self.read()
        except FileNotFoundError:
            return {}
        except Torn as torn:
            logger.warning("%s is torn (%s); %s", self.path, torn, instead)
            return {}

    def save(self, data: dict[str, Any]) -> None:
        atomic_write_json(self.path, data, self.indent, durable=self.durable)

    def set_aside(self, suffix: str) -> Path:
        """Move the file to `<name><suffix>` beside it, kept for a person to look into; the new name."""
        aside = self.path.with_name(self.path.name + suffix)
        os.replace(self.path, aside)
        return aside

    def stamp(self) -> Stamp | None:
        """Changes with every save: one stat() tells a poller whether to read again."""
        return stamp(self.path)
