"""Fit a re-scoring model of `servers/memory/rerank.py` on LoCoMo, check it on held-out halves, print it.

    .venv/bin/python bench/_memory_train.py                            # MODELS["use"], the default embedder's
    .venv/bin/python bench/_memory_train.py --embedder e5              # MODELS["e5"]
    .venv/bin/python bench/_memory_train.py --embedder none            # MODELS["none"]: no vectors, or no model
    .venv/bin/python bench/_memory_train.py --set char_cost=1e-5       # the same under other settings

Each question's candidates (the fused lists of `MemoryIndex.signals`) get their FEATURES rows and a label: does
the chunk hold an evidence turn? The weights maximise, per question, the softmax share of the labelled
candidates (what ranking needs); a logistic fit of that score to the labels then calibrates it into a
probability. To guard against overfitting it first fits on one half of the conversations and scores the other
with the real search, both ways; the model printed at the end is fitted on all five, as a `MODELS` entry.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

import _memory_locomo as locomo
from _memory_misses import SPLITS, settings_from

from hermitcrab.servers.memory.embed import make_embedder
from hermitcrab.servers.memory.files import MemoryRoots
from hermitcrab.servers.memory.index import MemoryIndex
from hermitcrab.servers.memory.ranking import RankSettings
from hermitcrab.servers.memory.rerank import FEATURES, LinearModel, features

CACHE = Path("/tmp/hermitcrab-locomo-cache")
Query = tuple[np.ndarray, np.ndarray]  # feature rows, labels


def load(name: str, embedder: str, settings: RankSettings) -> tuple[MemoryIndex, list[locomo.Question], list[Query]]:
    data = locomo.load(name)
    workspace = CACHE / name / "workspace"
    turns = locomo.build_workspace(data, workspace)
    state = CACHE / name / f"state-{embedder}"
    index = MemoryIndex(MemoryRoots(workspace.resolve(), ()), state, make_embedder(embedder), settings)
    index.sync()
    questions = locomo.questions(data, turns)
    queries: list[Query] = []
    for question in questions:
        signals = index.signals(question.text)
        positions = list(signals.fused)
        labels = np.array([any(e in index.chunk(p).text for e in question.evidence) for p in positions], dtype=float)
        queries.append((features(positions, signals, index.table), labels))
    return index, questions, queries


def fit(queries: list[Query], steps: int = 400, rate: float = 0.05, l2: float = 1e-3) -> LinearModel:
    """Listwise weights on standardised features (Adam), then calibrated and mapped back to raw features."""
    queries = [(rows, labels) for rows, labels in queries if labels.any()]
    stacked = np.concatenate([rows for rows, _ in queries])
    mean, scale = stacked.mean(0), stacked.std(0) + 1e-9
    scaled = [((rows - mean) / scale, labels) for rows, labels in queries]
    weights = np.zeros(len(FEATURES))
    weights[FEATURES.index("fused")] = 1.0
    moment, second = np.zeros_like(weights), np.zeros_like(weights)
    for step in range(1, steps + 1):
        gradient = l2 * weights
        for rows, labels in scaled:
            share = np.exp(rows @ weights - (rows @ weights).max())
            share /= share.sum()
            wanted = share * labels / (share * labels).sum()
            gradient += rows.T @ (share - wanted) / len(scaled)
        moment = 0.9 * moment + 0.1 * gradient
        second = 0.999 * second + 0.001 * gradient**2
        weights -= rate * (moment / (1 - 0.9**step)) / (np.sqrt(second / (1 - 0.999**step)) + 1e-8)
    raw_weights = weights / scale
    offset = -float(mean @ raw_weights)
    scores = [rows @ raw_weights + offset for rows, _ in queries]
    gaps = np.concatenate([score - score.max() for score in scores])
    slope, behind, bias = _calibrate(np.concatenate(scores), gaps, np.concatenate([labels for _, labels in queries]))
    return LinearModel(tuple(float(w) for w in slope * raw_weights), slope * offset + bias, behind / slope)


def _calibrate(score: np.ndarray, gap: np.ndarray, labels: np.ndarray) -> tuple[float, float, float]:
    """Weights of the score and of its gap to the query's best, and a bias: a logistic regression (Newton)."""
    design = np.stack([score, gap, np.ones_like(score)], axis=1)
    params = np.array([1.0, 0.0, 0.0])
    for _ in range(50):
        chance = 1 / (1 + np.exp(-np.clip(design @ params, -30, 30)))
        hessian = (design * (chance * (1 - chance))[:, None]).T @ design + 1e-6 * np.eye(3)
        step = np.linalg.solve(hessian, design.T @ (chance - labels))
        params -= step / max(1.0, float(np.abs(step).max()))  # damped: a full step can overshoot from afar
    return float(params[0]), float(params[1]), float(params[2])


def evaluate(loaded: list[tuple[MemoryIndex, list[locomo.Question]]], model: LinearModel | None) -> str:
    hits = every = chars = count = 0
    for index, questions in loaded:
        models = None if model is None else {"none": model, index.embedder.name if index.embedder else "none": model}
        index.settings = dataclasses.replace(index.settings, models=models)
        for question in questions:
            snippets = [str(item["snippet"]) for item in index.search(question.text, 6)]
            hit, complete = locomo.score(snippets, question, 6)
            hits, every, count = hits + hit, every + complete, count + 1
            chars += sum(len(s) for s in snippets)
    return f"hit@6={hits / count:.3f} all@6={every / count:.3f} chars={chars / count:.0f} (n={count})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", action="append", default=[], help="a RankSettings override, name=value")
    parser.add_argument("--embedder", default="use", help="the embedder to fit a model for: use, e5 or none")
    args = parser.parse_args()
    settings = settings_from(args.set)
    loaded = {name: load(name, args.embedder, settings) for name in locomo.conversations()}
    halves = {label: [loaded[name] for name in names if name in loaded] for label, names in SPLITS.items()}
    for label, members in halves.items():
        others = [query for other, rest in halves.items() if other != label for _, _, qs in rest for query in qs]
        held_out = [(index, questions) for index, questions, _ in members]
        print(f"{label}: fusion only  {evaluate(held_out, None)}")
        print(f"{label}: held-out fit {evaluate(held_out, fit(others))}")
    model = fit([query for _, _, queries in loaded.values() for query in queries])
    print(f"all: fitted on all {evaluate([(i, q) for i, q, _ in loaded.values()], model)}")
    weights = ", ".join(f"{w:.4g}" for w in model.weights)
    print(f'"{args.embedder}": LinearModel(weights=({weights}), bias={model.bias:.4g}, behind={model.behind:.4g}),')
    for name, weight in zip(FEATURES, model.weights, strict=True):
        print(f"  {name:22} {weight:+.4f}")


if __name__ == "__main__":
    main()
