"""Fit the memory server's re-scoring model on a training split, choose its regularisation on a validation split,
and write it as data (`servers/memory/ranking/models/*.json`, with its provenance).

    .venv/bin/python bench/_memory_train.py                  # hybrid.json, fitted with the default embedder (use)
    .venv/bin/python bench/_memory_train.py --embedder none  # bm25.json, for an index without vectors
    .venv/bin/python bench/_memory_train.py --dry-run        # fit and report, write nothing

Data: LongMemEval_S's 218 development questions (`dev40.json.gz` and `more.json.gz`), split by question type
60/40 into training and validation (`_memory_longmemeval.splits`), and LoCoMo's five development conversations,
split by conversation (26, 30, 41 training; 42, 43 validation): a benchmark held out is other people's chats, so
the validation split must be too. The benchmark questions in neither file are what the project is judged on.

Each question's candidates (the union of the legs) get their FEATURES rows and a label: does the chunk hold (part
of) an evidence turn? Features are standardised on the training split; the weights maximise, per question, the
softmax share of the labelled candidates (what ranking needs), with an L2 penalty, both benchmarks weighing the
same however many questions each has; a logistic fit of that score and its gap to the best then calibrates it.
The penalty is the only choice made on the validation split (the mean of hit@6 and all-evidence@6 over both
benchmarks, by the real search); the figures printed and written are the validation split's, beside a plain
one-result-per-line BM25 on the same LongMemEval questions.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

import _memory_longmemeval as longmemeval
from _memory_misses import BENCHES, CACHE, LOCOMO_SPLITS, Case, Row, cases, open_index, run, summary

from hermitcrab.servers.memory.index import MemoryIndex
from hermitcrab.servers.memory.ranking import RankSettings
from hermitcrab.servers.memory.ranking.fusion import fuse
from hermitcrab.servers.memory.ranking.rescoring import FEATURES, LinearModel, features

MODELS = Path(__file__).resolve().parents[1] / "servers" / "memory" / "ranking" / "models"
PENALTIES = (0.01, 0.03, 0.1, 0.3)
Query = tuple[np.ndarray, np.ndarray, float]  # feature rows, labels, weight in the fit
Loaded = tuple[Case, MemoryIndex, list[Query]]


def load(case: Case, embedder: str) -> Loaded:
    index = open_index(case, embedder, RankSettings(), CACHE)
    queries: list[Query] = []
    for probe in case.probes:
        legs = index.legs(probe.text)
        fused = fuse(legs.lists(), index.settings.place_k)
        positions = list(fused)
        labels = np.array([probe.holds_evidence(index.chunk(p).text) for p in positions], dtype=float)
        queries.append((features(positions, fused, legs, index.table, index.settings), labels, 1.0))
    return case, index, queries


def balanced(loaded: list[Loaded]) -> list[Query]:
    """Every question of `loaded`, weighted so that each benchmark has half the fit."""
    counts = {bench: sum(len(qs) for case, _, qs in loaded if case.bench == bench) for bench in BENCHES}
    return [(rows, labels, 0.5 / counts[case.bench]) for case, _, queries in loaded for rows, labels, _ in queries]


def fit(queries: list[Query], penalty: float, steps: int = 400, rate: float = 0.05) -> LinearModel:
    """Listwise weights on standardised features (Adam), then calibrated. A feature that never varies (the
    similarities without vectors) gets no weight."""
    queries = [query for query in queries if query[1].any()]
    total = sum(weight for _, _, weight in queries)
    stacked = np.concatenate([rows for rows, _, _ in queries])
    mean, scale = stacked.mean(0), stacked.std(0)
    used = scale > 1e-9
    scale = np.where(used, scale, 1.0)
    scaled = [(((rows - mean) / scale)[:, used], labels, weight / total) for rows, labels, weight in queries]
    weights = np.zeros(int(used.sum()))
    moment, second = np.zeros_like(weights), np.zeros_like(weights)
    for step in range(1, steps + 1):
        gradient = penalty * weights
        for rows, labels, weight in scaled:
            share = np.exp(rows @ weights - (rows @ weights).max())
            share /= share.sum()
            wanted = share * labels / (share * labels).sum()
            gradient += weight * (rows.T @ (share - wanted))
        moment = 0.9 * moment + 0.1 * gradient
        second = 0.999 * second + 0.001 * gradient**2
        weights -= rate * (moment / (1 - 0.9**step)) / (np.sqrt(second / (1 - 0.999**step)) + 1e-8)
    scores = [rows @ weights for rows, _, _ in scaled]
    gaps = np.concatenate([score - score.max() for score in scores])
    labels = np.concatenate([labels for _, labels, _ in scaled])
    slope, behind, bias = _calibrate(np.concatenate(scores), gaps, labels)
    names = [name for name, kept in zip(FEATURES, used, strict=True) if kept]
    columns = [i for i, kept in enumerate(used) if kept]
    return LinearModel(
        weights={name: float(slope * w) for name, w in zip(names, weights, strict=True)},
        mean={name: float(mean[i]) for name, i in zip(names, columns, strict=True)},
        scale={name: float(scale[i]) for name, i in zip(names, columns, strict=True)},
        bias=bias,
        behind=behind / slope,
    )


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


def evaluate(loaded: list[Loaded], model: LinearModel) -> dict[str, list[Row]]:
    """The real search's rows on `loaded`, per benchmark, ranked by `model`."""
    rows: dict[str, list[Row]] = {}
    for case, index, _ in loaded:
        index.model = model
        rows.setdefault(case.bench, []).extend(run(index, case, show=0, limit=6))
    return rows


def lines_baseline(loaded: list[Loaded]) -> list[Row]:
    """The plain one-result-per-line BM25 on the LongMemEval questions of `loaded`."""
    found: list[Row] = []
    for case, _, _ in loaded:
        if case.bench != "longmemeval":
            continue
        snippets = longmemeval.LineBM25(longmemeval.haystack_lines(case.workspace)).search(case.probes[0].text, 6)
        hit, every = case.probes[0].score(snippets)
        found.append((case.probes[0].kind, hit, every, sum(map(len, snippets))))
    return found


def figures(rows: list[Row]) -> dict[str, float]:
    n = max(len(rows), 1)
    return {
        "questions": len(rows),
        "hit@6": round(sum(r[1] for r in rows) / n, 3),
        "all@6": round(sum(r[2] for r in rows) / n, 3),
        "chars": round(sum(r[3] for r in rows) / n),
    }


def goal(rows: dict[str, list[Row]]) -> float:
    """What the penalty is chosen by: the mean of hit@6 and all-evidence@6, each benchmark alike."""
    return float(np.mean([(f["hit@6"] + f["all@6"]) / 2 for f in map(figures, rows.values())]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--embedder", default="use", help="the embedder to fit a model for: use, e5 or none")
    parser.add_argument("--dry-run", action="store_true", help="report only; write no model")
    args = parser.parse_args()
    loaded = [load(case, args.embedder) for bench in BENCHES for case in cases(bench, CACHE)]
    train = [item for item in loaded if item[0].split == "train"]
    validation = [item for item in loaded if item[0].split == "validation"]
    trials: list[tuple[float, float, LinearModel, dict[str, list[Row]]]] = []
    for penalty in PENALTIES:
        model = fit(balanced(train), penalty)
        rows = evaluate(validation, model)
        trials.append((goal(rows), penalty, model, rows))
        print(f"penalty {penalty:g}: " + "; ".join(summary(bench, found) for bench, found in rows.items()))
    _, penalty, model, held_out = max(trials, key=lambda trial: trial[0])
    trained = evaluate(train, model)
    lines = {"train": lines_baseline(train), "validation": lines_baseline(validation)}
    report = {
        split: {**{name: figures(rows) for name, rows in found.items()}, "longmemeval-lines": figures(lines[split])}
        for split, found in (("train", trained), ("validation", held_out))
    }
    for split, entries in report.items():
        for name, entry in entries.items():
            print(f"{split:10} {name:18} {entry}")
    for name, weight in model.weights.items():
        print(f"  {name:22} {weight:+.4f} per standard deviation")
    print(f"  bias {model.bias:+.4f}  behind {model.behind:+.4f}  penalty {penalty:g}")
    if args.dry_run:
        return
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False)
    document = {
        "embedder": args.embedder,
        "features": {
            name: {"weight": round(weight, 5), "mean": round(model.mean[name], 5), "scale": round(model.scale[name], 5)}
            for name, weight in model.weights.items()
        },
        "bias": round(model.bias, 5),
        "behind": round(model.behind, 5),
        "provenance": {
            "fitted_by": "bench/_memory_train.py",
            "date": dt.date.today().isoformat(),
            "commit": commit.stdout.strip() or None,
            "data": {
                "longmemeval": [f"../shared/data/longmemeval/{name}" for name in longmemeval.FILES],
                "locomo": [f"../shared/data/locomo/{name}.json" for names in LOCOMO_SPLITS.values() for name in names],
            },
            "split": {
                "longmemeval": f"by question type, {longmemeval.TRAIN_SHARE:.0%} training (blake2b order of the ids)",
                "locomo": {split: list(names) for split, names in LOCOMO_SPLITS.items()},
            },
            "penalty": penalty,
            "figures": report,
        },
    }
    target = MODELS / ("bm25.json" if args.embedder == "none" else "hybrid.json")
    target.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
