"""From a query to the few results a model reads, in four stages, one module each:

- `legs`: ranked lists of chunks from each retriever (BM25, vectors, and both again over the days a query names);
- `fusion`: the candidates, their union (and, for comparisons without a model, reciprocal-rank fusion);
- `rescoring`: a small linear model over standardised features turns each candidate into a probability that it
  holds what the query asks for (its weights are data, `models/*.json`, fitted by `bench/_memory_train.py`);
- `windows`: results, windows of neighbouring chunks chosen to hold the most likely findings within a budget.

`table` holds the per-chunk facts the stages share, `settings` the few constants they take.
"""

from .settings import RankSettings

__all__ = ["RankSettings"]
