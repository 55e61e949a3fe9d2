"""BM25 over chunks with tantivy; our own analyzer (stemmed Latin words, Han unigrams + bigrams, no stopwords).

Text is analysed here in Python and handed to tantivy pre-split on whitespace, so the index and the queries
always agree, and nothing depends on tokenizers that tantivy does not persist.
"""

from __future__ import annotations

import hashlib
import logging
import math
import re
import shutil
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, cast

import Stemmer
import tantivy

from . import heap

logger = logging.getLogger(__name__)
LEXICAL_VERSION = 3  # bump when analyze(), the schema or what chunk_markdown() indexes changes: all is re-indexed

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(rf"([{_HAN}]+)|([\u3040-\u30ff]+|[\uac00-\ud7af]+)|([^\W_{_CJK}]+)")
_STOPWORD_TEXT = """
a about above after again against all am an and any are aren as at be because been before being below between
both but by can could couldn d did didn do does doesn doing don down during each few for from further had hadn
has hasn have haven having he her here hers herself him himself his how i if in into is isn it its itself just
ll m me might more most must my myself no nor not now o of off on once only or other our ours ourselves out
over own re s same shall she should so some such t than that the their theirs them themselves then there these
they this those through to too under until up ve very was wasn we were weren what when where which while who
whom why will with won would y you your yours yourself yourselves also yes yeah oh wow hey hi really thanks
thank
"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())
_stemmer: Any = Stemmer.Stemmer("english")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]  # PyStemmer ships no types


@lru_cache(maxsize=4096)
def _stem(word: str) -> str:
    return str(_stemmer.stemWord(word))


def analyze(text: str) -> list[str]:
    """Index terms of `text`: lowercased, stemmed words without stopwords; Han runs as unigrams and bigrams."""
    terms: list[str] = []
    for han, kana_hangul, word in _TOKEN.findall(text.lower()):
        if han:
            terms.extend(han)
            terms.extend(han[i : i + 2] for i in range(len(han) - 1))
        elif kana_hangul:
            terms.append(kana_hangul)
        elif word not in _STOPWORDS:
            terms.append(_stem(word))
    return terms


class LexicalIndex:
    """A tantivy index of chunk ids -> analysed text, with BM25 search; rebuilt from scratch if unreadable."""

    def __init__(self, directory: Path) -> None:
        builder = tantivy.SchemaBuilder()
        builder.add_integer_field("key", fast=True)  # a hit's chunk, read from a column: no stored document to fetch
        builder.add_text_field("path", tokenizer_name="raw")
        builder.add_text_field("body", tokenizer_name="whitespace")
        builder.add_text_field("near", tokenizer_name="whitespace")
        self._schema = builder.build()
        self.directory = directory
        self.rebuilt = False
        directory.mkdir(parents=True, exist_ok=True)
        try:
            self._index = tantivy.Index(self._schema, path=str(directory), reuse=True)
        except ValueError as exc:
            # an index of an earlier LEXICAL_VERSION is re-indexed as a matter of course, not reported as broken
            self.rebuilt = "schema does not match" not in str(exc)
            if self.rebuilt:
                logger.warning("BM25 index at %s is unreadable (%s); rebuilding it from the files", directory, exc)
            shutil.rmtree(directory)
            directory.mkdir(parents=True)
            self._index = tantivy.Index(self._schema, path=str(directory), reuse=False)

    def count(self) -> int:
        self._index.reload()
        return self._index.searcher().num_docs

    def refresh(self) -> None:
        """See the latest commit, whichever process made it."""
        self._index.reload()

    def replace(
        self, remove_paths: Iterable[str], add: Sequence[tuple[str, str, list[str], list[str]]], clear: bool = False
    ) -> None:
        """Drop every chunk of `remove_paths`, then add `(id, path, body terms, near terms)` rows (`analyze`d by
        the caller, who knows which texts repeat), in one commit."""
        writer = self._index.writer(heap_size=32_000_000, num_threads=1)
        if clear:
            writer.delete_all_documents()
        for path in remove_paths:
            writer.delete_documents_by_term("path", path)
        for chunk_id, path, body, near in add:
            document = tantivy.Document(key=doc_key(chunk_id), path=path, body=" ".join(body), near=" ".join(near))
            writer.add_document(document)
        writer.commit()
        writer.wait_merging_threads()
        self._index.reload()
        heap.trim()

    def term_weights(self, query: str) -> dict[str, float]:
        """The index terms of `query` with their IDF."""
        searcher = self._index.searcher()
        terms = dict.fromkeys(analyze(query))
        return {term: _idf(searcher.doc_freq("body", term), searcher.num_docs) for term in terms}

    def search(
        self, weights: Mapping[str, float], limit: int, paths: Sequence[str] | None = None
    ) -> list[tuple[int, float]]:
        """The `doc_key`s of chunks by BM25 over the chunk text plus a BM25 of equal weight over its neighbours
        (any term may match), only from `paths` when given.

        `weights` are the query's `term_weights`. Each query term is boosted by its IDF, so a term weighs IDF
        squared in all (the query side of tf-idf):
        a rare, specific word ("workshop") outweighs the common ones a question is framed with ("recently",
        a name on every line), which BM25's length normalisation otherwise lets short lines win on.
        """
        if not weights:
            return []
        searcher = self._index.searcher()
        clauses: list[tuple[tantivy.Occur, tantivy.Query]] = []
        for term, boost in weights.items():
            body = tantivy.Query.term_query(self._schema, "body", term)
            near = tantivy.Query.term_query(self._schema, "near", term)
            clauses.append((tantivy.Occur.Should, tantivy.Query.boost_query(body, boost)))
            clauses.append((tantivy.Occur.Should, tantivy.Query.boost_query(near, boost)))
        query_obj = tantivy.Query.boolean_query(clauses)
        if paths is not None:
            within = tantivy.Query.term_set_query(self._schema, "path", list(paths))
            query_obj = tantivy.Query.boolean_query([(tantivy.Occur.Must, within), (tantivy.Occur.Must, query_obj)])
        hits = searcher.search(query_obj, limit).hits
        keys = cast(list[int], searcher.fast_field_values("key", [address for _, address in hits]))  # all have one
        return [(key, float(score)) for key, (score, _) in zip(keys, hits, strict=True)]


def doc_key(chunk_id: str) -> int:
    """The number a chunk id is stored as: a 63-bit hash (collisions are out of reach for one person's notes)."""
    return int.from_bytes(hashlib.blake2b(chunk_id.encode(), digest_size=8).digest(), "little") >> 1


def _idf(doc_freq: int, docs: int) -> float:
    """BM25's inverse document frequency (always positive)."""
    return math.log(1 + (docs - doc_freq + 0.5) / (doc_freq + 0.5))
