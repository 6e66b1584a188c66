"""How far int8 storage moves a cosine, against float16 (before schema 15) and exact.

Every LoCoMo observation and dialogue turn is embedded by the built-in model
(wordllama, 256 dimensions), as are ``--queries`` of its questions (every
n-th, spread over the ten conversations). Each stored form (float16 as schema
12 wrote and read it; int8 as ``memlineage.store.vector_rows`` writes and
reads it) is compared with every query, as recall does: the query's own vector
is never stored. Reported: the largest and the 99th-percentile cosine change,
and how often the order of two texts' cosines to one query flips.

    python bench/bench_vector_precision.py [--queries N]
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from common import LOCOMO
from memlineage.operations.locomo import load
from memlineage.recall.embed import WordLlamaEmbedder
from memlineage.store.vector_rows import decode, to_bytes


def stored(vectors: np.ndarray) -> dict[str, np.ndarray]:
    dims = vectors.shape[1]
    return {
        "float16": vectors.astype("<f2").astype(np.float32),
        "int8": decode([to_bytes(v) for v in vectors], dims),
    }


def flips(exact: np.ndarray, other: np.ndarray, rng: np.random.Generator) -> float:
    """The share of random pairs of texts whose order by cosine to a query swaps."""
    rows, cols = exact.shape
    q = rng.integers(0, rows, 200_000)
    a, b = rng.integers(0, cols, 200_000), rng.integers(0, cols, 200_000)
    before = np.sign(exact[q, a] - exact[q, b])
    after = np.sign(other[q, a] - other[q, b])
    return float(np.mean((before != after) & (before != 0)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    conversations = load(LOCOMO)
    questions = [qa.question for c in conversations for qa in c.qa]
    step = max(1, len(questions) // args.queries)
    embedder = WordLlamaEmbedder()
    queries = embedder.embed(questions[::step][: args.queries])
    rng = np.random.default_rng(7)
    for view in ("observations", "turns"):
        texts = [e.text for c in conversations for e in getattr(c, view)]
        vectors = embedder.embed(texts)
        exact = queries @ vectors.T
        forms = {name: queries @ rows.T for name, rows in stored(vectors).items()}
        print(f"{view}: {len(texts):,} texts x {len(queries)} queries")
        for name, cosines in [*forms.items(), ("int8 vs float16", None)]:
            base = forms["float16"] if cosines is None else exact
            cosines = forms["int8"] if cosines is None else cosines
            change = np.abs(cosines - base)
            print(
                f"  {name:<16} largest cosine change {change.max():.5f},"
                f" p99 {np.percentile(change, 99):.5f}, median {np.median(change):.5f};"
                f" order of two texts flips for {flips(base, cosines, rng):.4%} of pairs"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
