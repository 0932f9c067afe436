"""The argument checks adapters and caches share: one rule and one message for each."""

from __future__ import annotations

import math


def positive(name: str, value: float) -> float:
    """`value` when it is a positive finite number (a timeout, a time-to-live)."""
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{name} must be a positive number")
    return value


def at_least_one(name: str, value: int) -> int:
    """`value` when it is a count of at least 1 (requests, entries, a batch)."""
    if value < 1:
        raise ValueError(f"{name} must be at least 1")
    return value
