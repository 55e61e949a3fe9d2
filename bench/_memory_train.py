"""Fit a re-scoring model of `servers/memory/rerank.py` on LoCoMo and LongMemEval, check it on held-out halves.

    .venv/bin/python bench/_memory_train.py                            # MODELS["use"], the default embedder's
    .venv/bin/python bench/_memory_train.py --embedder e5              # MODELS["e5"]
    .venv/bin/python bench/_memory_train.py --embedder none            # MODELS["none"]: no vectors, or no model
    .venv/bin/python bench/_memory_train.py --set char_cost=1e-5       # the same under other settings

Each question's candidates (the fused lists of `MemoryIndex.signals`) get their FEATURES rows and a label: does
the chunk hold (part of) an evidence turn? The weights maximise, per question, the softmax share of the labelled
candidates (what ranking needs); a logistic fit of that score to the labels then calibrates it into a
probability. Both benchmarks weigh the same in the fit, however many questions each has (LoCoMo 760,
LongMemEval 40), so one model serves short chat turns and long ones. To guard against overfitting it first fits
on one half of each benchmark and scores the other halves with the real search, both ways; the model printed at
the end is fitted on everything, as a `MODELS` entry.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from _memory_misses import BENCHES, CACHE, Case, Row, cases, open_index, run, settings_from, summary

from hermitcrab.servers.memory.index import MemoryIndex
from hermitcrab.servers.memory.ranking import RankSettings
from hermitcrab.servers.memory.rerank import FEATURES, LinearModel, features

Query = tuple[np.ndarray, np.ndarray, float]  # feature rows, labels, weight in the fit
Loaded = tuple[Case, MemoryIndex, list[Query]]


def load(case: Case, embedder: str, settings: RankSettings) -> Loaded:
    index = open_index(case, embedder, settings, CACHE)
    queries: list[Query] = []
    for probe in case.probes:
        signals = index.signals(probe.text)
        positions = list(signals.fused)
        labels = np.array([probe.holds_evidence(index.chunk(p).text) for p in positions], dtype=float)
        queries.append((features(positions, signals, index.table), labels, 1.0))
    return case, index, queries


def balanced(loaded: list[Loaded], shares: dict[str, float]) -> list[Query]:
    """Every question of `loaded`, weighted so that each benchmark has its share of the fit."""
    counts = {bench: sum(len(qs) for case, _, qs in loaded if case.bench == bench) for bench in BENCHES}
    return [
        (rows, labels, shares[case.bench] / counts[case.bench])
        for case, _, queries in loaded
        for rows, labels, _ in queries
    ]


def fit(queries: list[Query], steps: int = 400, rate: float = 0.05, l2: float = 1e-3) -> LinearModel:
    """Listwise weights on standardised features (Adam), then calibrated and mapped back to raw features."""
    queries = [query for query in queries if query[1].any()]
    total = sum(weight for _, _, weight in queries)
    stacked = np.concatenate([rows for rows, _, _ in queries])
    mean, scale = stacked.mean(0), stacked.std(0) + 1e-9
    scaled = [((rows - mean) / scale, labels, weight / total) for rows, labels, weight in queries]
    weights = np.zeros(len(FEATURES))
    weights[FEATURES.index("fused")] = 1.0
    moment, second = np.zeros_like(weights), np.zeros_like(weights)
    for step in range(1, steps + 1):
        gradient = l2 * weights
        for rows, labels, weight in scaled:
            share = np.exp(rows @ weights - (rows @ weights).max())
            share /= share.sum()
            wanted = share * labels / (share * labels).sum()
            gradient += weight * (rows.T @ (share - wanted))
        moment = 0.9 * moment + 0.1 * gradient
        second = 0.999 * second + 0.001 * gradient**2
        weights -= rate * (moment / (1 - 0.9**step)) / (np.sqrt(second / (1 - 0.999**step)) + 1e-8)
    raw_weights = weights / scale
    offset = -float(mean @ raw_weights)
    scores = [rows @ raw_weights + offset for rows, _, _ in queries]
    gaps = np.concatenate([score - score.max() for score in scores])
    labels = np.concatenate([labels for _, labels, _ in queries])
    slope, behind, bias = _calibrate(np.concatenate(scores), gaps, labels)
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


def evaluate(loaded: list[Loaded], model: LinearModel | None, label: str) -> None:
    """Print the real search's scores on `loaded`, per benchmark, ranked by `model` (None: fusion only)."""
    rows: dict[str, list[Row]] = {}
    for case, index, _ in loaded:
        models = None if model is None else {"none": model, index.embedder.name if index.embedder else "none": model}
        index.settings = dataclasses.replace(index.settings, models=models)
        rows.setdefault(case.bench, []).extend(run(index, case, show=0, limit=6))
    for bench, found in rows.items():
        print(summary(f"{bench} {label}", found))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", action="append", default=[], help="a RankSettings override, name=value")
    parser.add_argument("--embedder", default="use", help="the embedder to fit a model for: use, e5 or none")
    parser.add_argument("--longmemeval-share", type=float, default=0.5, help="its share of the fit (LoCoMo: the rest)")
    args = parser.parse_args()
    shares = {"longmemeval": args.longmemeval_share, "locomo": 1 - args.longmemeval_share}
    settings = settings_from(args.set)
    loaded = [load(case, args.embedder, settings) for bench in BENCHES for case in cases(bench, CACHE)]
    for half in ("A", "B"):
        held_out = [item for item in loaded if item[0].half == half]
        others = [item for item in loaded if item[0].half != half]
        evaluate(held_out, None, f"{half} fusion only")
        evaluate(held_out, fit(balanced(others, shares)), f"{half} held-out fit")
    model = fit(balanced(loaded, shares))
    evaluate(loaded, model, "all, fitted on all")
    weights = ", ".join(f"{w:.4g}" for w in model.weights)
    print(f'"{args.embedder}": LinearModel(weights=({weights}), bias={model.bias:.4g}, behind={model.behind:.4g}),')
    for name, weight in zip(FEATURES, model.weights, strict=True):
        print(f"  {name:22} {weight:+.4f}")


if __name__ == "__main__":
    main()
