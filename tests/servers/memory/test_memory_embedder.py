"""What keeps an idle memory server small: the model loaded when first needed and dropped when idle, and vectors kept
in a plain file (that survives a torn write) instead of a database."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import numpy.typing as npt

from hermitcrab.servers.memory.embed import Embedder, Unloading, USEEmbedder
from hermitcrab.servers.memory.vectors import VectorStore


def _cosines(store: VectorStore, query: str) -> npt.NDArray[np.float32]:
    scored = store.scores(query)
    assert scored is not None
    return scored.cosines


def _matrix(store: VectorStore) -> npt.NDArray[np.float32]:
    matrix = store._view.matrix  # pyright: ignore[reportPrivateUsage]
    assert matrix is not None
    return matrix


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


def test_vectors_survive_a_restart_and_a_torn_last_batch(tmp_path: Path, use_embedder: Embedder) -> None:
    store = VectorStore(tmp_path / "vectors", use_embedder)
    store.embed([("a" * 32, "green tea"), ("b" * 32, "a road bike")])
    store.embed([("c" * 32, "the dentist")])
    (cache,) = (tmp_path / "vectors").glob("*.vec")
    with cache.open("ab") as handle:
        handle.write(b"\x01" * 100)  # a batch cut short by a crash
    again = VectorStore(tmp_path / "vectors", use_embedder)
    assert again.cached == 3 and not again.rebuilt
    assert again.missing([("c" * 32, "the dentist"), ("d" * 32, "new")]) == [("d" * 32, "new")]
    again.use(["a" * 32, "b" * 32, "c" * 32])
    assert int(np.argmax(_cosines(again, "bicycle"))) == 1


def test_an_unreadable_vector_cache_is_rebuilt(tmp_path: Path, use_embedder: Embedder) -> None:
    store = VectorStore(tmp_path / "vectors", use_embedder)
    store.embed([("a" * 32, "green tea")])
    (cache,) = (tmp_path / "vectors").glob("*.vec")
    cache.write_bytes(b"garbage, not vectors")
    again = VectorStore(tmp_path / "vectors", use_embedder)
    assert again.rebuilt and again.cached == 0


def test_chunks_sharing_a_vector_score_alike_and_a_vector_edited_away_stays_cached(
    tmp_path: Path, use_embedder: Embedder
) -> None:
    store = VectorStore(tmp_path / "vectors", use_embedder)
    store.embed([("a" * 32, "green tea"), ("b" * 32, "a road bike"), ("c" * 32, "the dentist")])
    store.use(["a" * 32, "b" * 32, "b" * 32, "c" * 32])  # the two pieces of one long line share "b"
    scores = _cosines(store, "bicycle")
    assert len(scores) == 4 and scores[1] == scores[2] and int(np.argmax(scores)) == 1
    assert _matrix(store).shape[0] == 3  # held once, not once a chunk
    store.use(["b" * 32, "c" * 32])  # "a" was edited away: still cached, so undoing the edit embeds nothing
    assert store.missing([("a" * 32, "green tea")]) == []
    held = store._cache.values()  # pyright: ignore[reportPrivateUsage]
    assert all(vector.base is None or vector.base is _matrix(store) for vector in held)  # no stale array kept alive
    store.use(["a" * 32, "c" * 32])
    assert int(np.argmax(_cosines(store, "a cup of tea"))) == 0
