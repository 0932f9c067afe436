"""Vector hygiene shared by writes and queries: every stored vector is unit length, so the
stores' dot product is the cosine similarity the admission rule speaks of."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from powercontext.memory.ports import Vector


def unit_vector(vector: Sequence[float], dimension: int) -> Vector:
    array = np.asarray(vector, dtype=np.float32).reshape(-1)
    if array.shape[0] != dimension:
        raise ValueError(f"embedding has {array.shape[0]} dimensions, the profile says {dimension}")
    if not np.all(np.isfinite(array)):
        raise ValueError("embedding contains NaN or infinite values")
    norm = float(np.linalg.norm(array))
    return array / norm if norm > 0 else array
