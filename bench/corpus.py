"""The synthetic corpus every search benchmark shares: same texts, vectors and queries.

Texts are 8-24 words drawn Zipf-like from a 30k-word pseudo-English vocabulary, so a few words
are as common as "the" and most are rare, which is what makes full-text scoring expensive.
Vectors are a pure function of the text, so every system under test gets bit-identical
vectors and query embedding costs nothing in the timed path. Each vocabulary word has a fixed
dense 384-d vector (one of 256 topic directions plus noise); a text's vector is the unit sum
of its words' vectors, like averaged word embeddings. (The hashing embedder was tried first:
its vectors have ~14 non-zeros of 384, an adversarial case for every ANN index, which held
HNSW's recall@30 at 0.88; dense vectors are closer to what a sentence model produces.)
Queries mix two words of a stored entry with two very common words and one random word, like
an agent's natural-language question.
"""

from __future__ import annotations

import json
import os
import platform
import resource
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from powercontext.memory.models import EmbeddingProfile

DIMENSION = 384
VOCABULARY = 30_000
RESULTS = Path(__file__).resolve().parent / "results"
_SYLLABLES = [c + v for c in "bcdfghjklmnprstvwz" for v in "aeiou"] + ["an", "er", "in", "on"]


def vocabulary(size: int = VOCABULARY, seed: int = 11) -> list[str]:
    rng = np.random.default_rng(seed)
    words: dict[str, None] = {}
    while len(words) < size:
        parts = rng.integers(0, len(_SYLLABLES), size=int(rng.integers(1, 5)))
        words["".join(_SYLLABLES[p] for p in parts)] = None
    return list(words)


def texts(count: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    words = vocabulary()
    lengths = rng.integers(8, 25, size=count)
    ranks = (rng.zipf(1.1, size=int(lengths.sum())) - 1) % len(words)
    out: list[str] = []
    start = 0
    for length in lengths.tolist():
        out.append(" ".join(words[r] for r in ranks[start : start + length].tolist()))
        start += length
    return out


def queries(corpus: Sequence[str], count: int, seed: int = 1) -> list[str]:
    rng = np.random.default_rng(seed)
    words = vocabulary()
    out = []
    for index in rng.integers(0, len(corpus), size=count).tolist():
        own = corpus[index].split()
        picked = [own[int(i)] for i in rng.integers(0, len(own), size=2)]
        picked += [words[int(i)] for i in rng.integers(0, 20, size=2)]  # very common
        picked.append(words[int(rng.integers(0, len(words)))])
        rng.shuffle(picked)
        out.append(" ".join(picked))
    return out


def _word_vectors(count: int, seed: int = 5) -> npt.NDArray[np.float32]:
    rng = np.random.default_rng(seed)
    topics = rng.standard_normal((256, DIMENSION)).astype(np.float32)
    noise = rng.standard_normal((count, DIMENSION)).astype(np.float32)
    words = topics[rng.integers(0, 256, size=count)] + 0.8 * noise
    units: npt.NDArray[np.float32] = words / np.linalg.norm(words, axis=1, keepdims=True)
    return units


def embed(items: Sequence[str], batch: int = 5_000) -> npt.NDArray[np.float32]:
    """Unit sum of the words' vectors, per text (see the module doc)."""
    words = vocabulary()
    position = {word: i for i, word in enumerate(words)}
    table = _word_vectors(len(words))
    parts = []
    for offset in range(0, len(items), batch):
        split = [text.split() for text in items[offset : offset + batch]]
        ids = [position[word] for tokens in split for word in tokens]
        starts = np.cumsum([0] + [len(tokens) for tokens in split[:-1]])
        parts.append(np.add.reduceat(table[ids], starts, axis=0))
    if not parts:
        return np.zeros((0, DIMENSION), dtype=np.float32)
    vectors = np.concatenate(parts)
    units: npt.NDArray[np.float32] = (
        vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    ).astype(np.float32)
    return units


class PrecomputedEmbedder:
    """An EmbeddingModel port that looks vectors up, so the timed path pays no embedding.

    The vectors are computed by `embed` before timing starts.
    """

    def __init__(self, items: Sequence[str], vectors: npt.NDArray[np.float32]) -> None:
        self.profile = EmbeddingProfile(profile_id=f"bench-topic:{DIMENSION}", dimension=DIMENSION)
        self._vectors = dict(zip(items, vectors, strict=True))

    async def embed_documents(self, items: Sequence[str]) -> list[npt.NDArray[np.float32]]:
        return [self._vectors[text] for text in items]

    async def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        return self._vectors[text]

    async def embed_queries(self, items: Sequence[str]) -> list[npt.NDArray[np.float32]]:
        return [self._vectors[text] for text in items]


@dataclass(frozen=True)
class Corpus:
    texts: list[str]
    vectors: npt.NDArray[np.float32]
    queries: list[str]
    query_vectors: npt.NDArray[np.float32]

    def embedder(self) -> PrecomputedEmbedder:
        return PrecomputedEmbedder(
            [*self.texts, *self.queries], np.concatenate((self.vectors, self.query_vectors))
        )


def build(count: int, query_count: int) -> Corpus:
    corpus = texts(count)
    asked = queries(corpus, query_count)
    return Corpus(corpus, embed(corpus), asked, embed(asked))


def exact_top(
    vectors: npt.NDArray[np.float32], query: npt.NDArray[np.float32], k: int
) -> npt.NDArray[np.int64]:
    """Row indices of the exact k nearest by inner product (the ground truth for recall)."""
    similarities = np.einsum("ij,j->i", vectors, query)
    best = np.argpartition(-similarities, k - 1)[:k]
    ordered: npt.NDArray[np.int64] = best[np.argsort(-similarities[best], kind="stable")]
    return ordered


def percentiles(samples_ms: Sequence[float]) -> dict[str, float]:
    values = np.asarray(samples_ms, dtype=np.float64)
    return {
        "p50_ms": round(float(np.percentile(values, 50)), 3),
        "p95_ms": round(float(np.percentile(values, 95)), 3),
        "p99_ms": round(float(np.percentile(values, 99)), 3),
        "mean_ms": round(float(values.mean()), 3),
        "samples": int(values.size),
    }


def peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def machine() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def write_results(name: str, figures: dict[str, Any]) -> Path:
    """Print the figures and write them to bench/results/<name>.json."""
    out = RESULTS / f"{name}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(figures, indent=2))
    print(f"wrote {out}")
    return out
