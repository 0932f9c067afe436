"""Small builders of planned changes and vectors, shared by the contract tests."""

from __future__ import annotations

import itertools
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from powercontext.memory.ports import NewVersion, PlannedChange, StoredVersion, Vector
from powercontext.memory.search.analyze import index_tokens

_ids = itertools.count(1)


def new_id(prefix: str) -> str:
    return f"{prefix}-{next(_ids):08d}"


def version(
    text: str,
    *,
    entry_id: str | None = None,
    number: int = 1,
    kind: str = "fact",
    metadata: dict[str, Any] | None = None,
    tokens: str | None = None,
    thread: str | None = None,
    occurred_at: datetime | None = None,
) -> NewVersion:
    return NewVersion(
        entry_id=entry_id or new_id("entry"),
        entry_version_id=new_id("version"),
        version=number,
        kind=kind,
        text=text,
        metadata=metadata if metadata is not None else {"source": "test"},
        index_tokens=index_tokens(text) if tokens is None else tokens,
        thread=thread,
        occurred_at=occurred_at,
    )


def add(text: str, reason: str | None = None, **kwargs: Any) -> PlannedChange:
    return PlannedChange(op="add", new=version(text, **kwargs), reason=reason)


def revise(current: StoredVersion, text: str, reason: str | None = None) -> PlannedChange:
    return PlannedChange(
        op="revise",
        new=version(text, entry_id=current.entry_id, number=current.version + 1),
        previous_entry_version_id=current.entry_version_id,
        reason=reason,
    )


def retire(current: StoredVersion, reason: str | None = None) -> PlannedChange:
    return PlannedChange(
        op="retire", previous_entry_version_id=current.entry_version_id, reason=reason
    )


def reactivate(current: StoredVersion) -> PlannedChange:
    return PlannedChange(
        op="reactivate",
        new=version(current.text, entry_id=current.entry_id, number=current.version + 1),
    )


def unit(*values: float) -> Vector:
    array = np.asarray(values, dtype=np.float32)
    return array / np.linalg.norm(array)


def random_units(count: int, dimension: int, seed: int = 0) -> npt.NDArray[np.float32]:
    matrix = np.random.default_rng(seed).standard_normal((count, dimension)).astype(np.float32)
    units: npt.NDArray[np.float32] = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    return units
