"""An experiment, not a feature: how much of an entry's vector is its own text.

With contextual indexing on, an entry's vector is the unit mean of two unit vectors, its own
text and its neighbourhood (docs/search-quality.md, "Contextual indexing by thread"): equal
weights. This runs the turn-by-turn ablation of the defaults with the own vector weighted
`--own` and the neighbourhood `1 - own` (the indexer is patched in this process only):

    python bench/locomo_vector_mix.py --own 0.65 --out RUN_DIR --results locomo_vector_mix_065

Every other argument goes to locomo_ablation.py (`--variant defaults` is the default). Copy an
earlier run's `embedding-cache.sqlite` into RUN_DIR first and no text is embedded again: the
weights change how the two cached vectors are mixed, not what is embedded.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from powercontext.memory.indexing import vectors
from powercontext.memory.ports import Vector

BENCH = Path(__file__).resolve().parent


def weighted_mean(own: float) -> object:
    """`_unit_mean` with the first part (the entry's own text) weighted `own`."""

    def mix(parts: Sequence[Vector]) -> Vector:
        weights = np.array([own, *([(1.0 - own) / (len(parts) - 1)] * (len(parts) - 1))])
        total: Vector = np.sum(np.stack(parts) * weights[:, None], axis=0, dtype=np.float32)
        norm = float(np.linalg.norm(total))
        return total / norm if norm > 0 else parts[0]

    return mix


def main() -> None:
    arguments = sys.argv[1:]
    if "--own" not in arguments:
        raise SystemExit("--own WEIGHT is required (0.5 is the defaults' equal mix)")
    at = arguments.index("--own")
    own = float(arguments[at + 1])
    del arguments[at : at + 2]
    if not 0.0 < own <= 1.0:
        raise SystemExit("--own must be in (0, 1]")
    vectors._unit_mean = weighted_mean(own)  # type: ignore[assignment]
    sys.path.insert(0, str(BENCH))
    import locomo_ablation

    locomo_ablation.run_experiment(arguments)


if __name__ == "__main__":
    main()
