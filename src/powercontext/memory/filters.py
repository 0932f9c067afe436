"""Filters on search and list: which entry versions a request may see at all.

Backends apply a filter inside each channel before its top-k (SQL on PostgreSQL, a row mask
on SQLite's in-memory channels), so a filtered search returns `limit` hits whenever that many
versions match: never fewer because hits were dropped after ranking.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from powercontext.memory.iso_time import iso_8601_only
from powercontext.memory.values import Kind, Thread, check_unicode, in_utc

MAX_FILTER_VALUES = 100
MAX_METADATA_CONDITIONS = 16
INT64 = (-(2**63), 2**63 - 1)
"""The integers a filter compares with: SQLite's (and so both stores') integer range."""

Finite = Annotated[float, Field(allow_inf_nan=False)]


def _storable(value: object) -> object:
    # Both stores compare these as they are; a NUL, a lone surrogate or an integer beyond 64
    # bits would fail in one store's driver and not the other's, so both refuse them here.
    if isinstance(value, str):
        check_unicode(value, "a filter value")
    elif (
        isinstance(value, int)
        and not isinstance(value, bool)
        and not (INT64[0] <= value <= INT64[1])
    ):
        raise ValueError("a filter integer is within -2**63 .. 2**63-1 (64 bits)")
    return value


def _aware(value: datetime) -> datetime:
    if value.tzinfo is None:
        raise ValueError("filter times need a time zone (e.g. 2026-01-01T00:00:00Z)")
    return in_utc(value, "a filter time")


FilterTime = Annotated[datetime, BeforeValidator(iso_8601_only), AfterValidator(_aware)]
"""A bound on a time, with a time zone; compared in UTC, as both stores keep times. A
`datetime` or ISO 8601 text: a number is refused, not read as Unix seconds."""

Scalar = Annotated[str | bool | int | Finite, AfterValidator(_storable)]


def _not_boolean(value: object) -> object:
    if isinstance(value, bool):
        raise ValueError("a range bound is a number or a string, not a boolean")
    return value


Bound = Annotated[str | int | Finite, BeforeValidator(_not_boolean), AfterValidator(_storable)]
"""A range bound: a string or a number, never a boolean (`gt: true` is not `gt: 1`)."""


def _check_key(key: str) -> str:
    # The key is quoted into a JSON path on SQLite; these characters would end the quoting.
    if not key or any(c in key for c in '"\\\x00') or len(key) > 256:
        raise ValueError('a metadata key is 1-256 characters without ", \\ or NUL')
    return key


MetadataKey = Annotated[str, AfterValidator(_check_key)]


class MetadataCondition(BaseModel):
    """Conditions on one top-level metadata key; all given ones must hold.

    `eq`/`one_of` compare JSON values by type (the string "1" is not the number 1); range
    bounds compare numbers with numbers and strings with strings (by code point)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    eq: Scalar | None = Field(default=None, description="Equal to this JSON value.")
    one_of: tuple[Scalar, ...] | None = Field(
        default=None, min_length=1, max_length=100, description="Equal to one of these."
    )
    gt: Bound | None = Field(default=None, description="Greater than (number or string).")
    gte: Bound | None = Field(default=None, description="At least (number or string).")
    lt: Bound | None = Field(default=None, description="Less than (number or string).")
    lte: Bound | None = Field(default=None, description="At most (number or string).")
    exists: bool | None = Field(
        default=None, strict=True, description="The key is present (or absent): true or false."
    )

    @model_validator(mode="after")
    def _not_empty(self) -> MetadataCondition:
        if all(getattr(self, name) is None for name in type(self).model_fields):
            raise ValueError("a metadata condition needs at least one of its fields")
        return self


class MemoryFilter(BaseModel):
    """Every given part must hold. `created_*` compare with the write time, `occurred_*` with
    `occurred_at` (the write time when none was given); `*_after` is inclusive, `*_before`
    exclusive. Times are ISO 8601 with a time zone (e.g. 2024-05-08T13:56:00Z); a number is
    refused."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kinds: tuple[Kind, ...] | None = Field(
        default=None, min_length=1, max_length=100, description="The entry's kind is one of these."
    )
    metadata: dict[MetadataKey, MetadataCondition] = Field(
        default_factory=dict,
        max_length=MAX_METADATA_CONDITIONS,
        description="Conditions per top-level metadata key; all must hold.",
    )
    threads: tuple[Thread, ...] | None = Field(
        default=None,
        min_length=1,
        max_length=100,
        description="The entry's thread is one of these.",
    )
    created_after: FilterTime | None = Field(
        default=None, description="Written at or after this time (with a time zone)."
    )
    created_before: FilterTime | None = Field(
        default=None, description="Written before this time (with a time zone)."
    )
    occurred_after: FilterTime | None = Field(
        default=None,
        description="The event happened at or after this time (`occurred_at`, else the write "
        "time; with a time zone).",
    )
    occurred_before: FilterTime | None = Field(
        default=None, description="The event happened before this time (with a time zone)."
    )

    @property
    def empty(self) -> bool:
        return (
            self.kinds is None
            and self.threads is None
            and not self.metadata
            and all(
                value is None
                for value in (
                    self.created_after,
                    self.created_before,
                    self.occurred_after,
                    self.occurred_before,
                )
            )
        )
