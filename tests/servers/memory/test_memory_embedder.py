"""The local embedding model is loaded when first needed and dropped when idle, so an idle server stays small."""

from __future__ import annotations

import time

import numpy as np

from hermitcrab.servers.memory.embed import Unloading, USEEmbedder


def test_model_loads_on_first_use_and_is_dropped_when_idle() -> None:
    embedder = Unloading(USEEmbedder, idle_s=0.3)
    assert not embedder.loaded and embedder.name == "use"
    first = embedder.query("the dentist appointment")
    assert embedder.loaded
    deadline = time.monotonic() + 5
    while embedder.loaded and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not embedder.loaded
    again = embedder.query("the dentist appointment")
    assert np.allclose(first, again)
