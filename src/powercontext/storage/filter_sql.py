"""A MemoryFilter as a SQL condition on entry_versions, for SQLite and for PostgreSQL.

Both dialects compare JSON values by type, so the two backends answer a filter alike: SQLite
through json_type/json_extract, PostgreSQL through jsonb operators (metadata is stored as
json; the cast costs a parse per row the other conditions left).
"""

from __future__ import annotations

import json
from datetime import UTC
from typing import Literal

from powercontext.memory.filters import MemoryFilter, MetadataCondition

Dialect = Literal["sqlite", "postgres"]
_RANGES = (("gt", ">"), ("gte", ">="), ("lt", "<"), ("lte", "<="))


def placeholder(dialect: Dialect) -> str:
    return "?" if dialect == "sqlite" else "%s"


def active_at(dialect: Dialect, prefix: str = "") -> str:
    """The condition that a `prefix`-qualified entry_versions row is active at a revision (its
    two placeholders both take the revision)."""
    mark = placeholder(dialect)
    return (
        f"{prefix}added_revision <= {mark} AND "
        f"({prefix}removed_revision IS NULL OR {prefix}removed_revision > {mark})"
    )


def filter_sql(
    where: MemoryFilter | None, dialect: Dialect, prefix: str = ""
) -> tuple[str, list[object]]:
    """(" AND ..." or "", params) restricting `prefix`-qualified entry_versions columns."""
    if where is None or where.empty:
        return "", []
    mark = placeholder(dialect)
    parts: list[str] = []
    params: list[object] = []
    sets: tuple[tuple[str, tuple[str, ...] | None], ...] = (
        ("kind", where.kinds),
        ("thread", where.threads),
    )
    for column, values in sets:
        if values is None:
            continue
        if dialect == "sqlite":
            parts.append(f"{prefix}{column} IN ({','.join(mark * len(values))})")
            params.extend(values)
        else:
            parts.append(f"{prefix}{column} = ANY(%s::text[])")
            params.append(list(values))
    # Both backends store UTC times (ISO 8601 text on SQLite), so text order is time order.
    event = f"COALESCE({prefix}occurred_at, {prefix}created_at)"
    for column, bound, op in (
        (f"{prefix}created_at", where.created_after, ">="),
        (f"{prefix}created_at", where.created_before, "<"),
        (event, where.occurred_after, ">="),
        (event, where.occurred_before, "<"),
    ):
        if bound is not None:
            parts.append(f"{column} {op} {mark}")
            utc = bound.astimezone(UTC)
            params.append(utc.isoformat() if dialect == "sqlite" else utc)
    for key, condition in where.metadata.items():
        build = _sqlite_condition if dialect == "sqlite" else _postgres_condition
        clause, condition_params = build(f"{prefix}metadata", key, condition)
        parts.append(clause)
        params.extend(condition_params)
    return " AND " + " AND ".join(parts), params


def _sqlite_eq(column: str, path: str, value: object) -> tuple[str, list[object]]:
    if isinstance(value, bool):
        return f"json_type({column}, ?) = '{'true' if value else 'false'}'", [path]
    if isinstance(value, str):
        return f"(json_type({column}, ?) = 'text' AND json_extract({column}, ?) = ?)", [
            path,
            path,
            value,
        ]
    return f"(json_type({column}, ?) IN ('integer', 'real') AND json_extract({column}, ?) = ?)", [
        path,
        path,
        value,
    ]


def _sqlite_condition(column: str, key: str, c: MetadataCondition) -> tuple[str, list[object]]:
    path = f'$."{key}"'
    parts: list[str] = []
    params: list[object] = []
    if c.eq is not None:
        clause, values = _sqlite_eq(column, path, c.eq)
        parts.append(clause)
        params.extend(values)
    if c.one_of is not None:
        options = [_sqlite_eq(column, path, value) for value in c.one_of]
        parts.append("(" + " OR ".join(clause for clause, _ in options) + ")")
        params.extend(value for _, values in options for value in values)
    for name, op in _RANGES:
        bound = getattr(c, name)
        if bound is None:
            continue
        types = "('text')" if isinstance(bound, str) else "('integer', 'real')"
        parts.append(f"(json_type({column}, ?) IN {types} AND json_extract({column}, ?) {op} ?)")
        params.extend((path, path, bound))
    if c.exists is not None:
        parts.append(f"json_type({column}, ?) IS {'NOT ' if c.exists else ''}NULL")
        params.append(path)
    return "(" + " AND ".join(parts) + ")", params


def _postgres_condition(column: str, key: str, c: MetadataCondition) -> tuple[str, list[object]]:
    value = f"({column}::jsonb -> %s)"
    parts: list[str] = []
    params: list[object] = []
    if c.eq is not None:
        parts.append(f"{value} = %s::jsonb")
        params.extend((key, json.dumps(c.eq)))
    if c.one_of is not None:
        parts.append(f"{value} = ANY(%s::jsonb[])")
        params.extend((key, [json.dumps(option) for option in c.one_of]))
    for name, op in _RANGES:
        bound = getattr(c, name)
        if bound is None:
            continue
        if isinstance(bound, str):
            parts.append(
                f"(jsonb_typeof({value}) = 'string' AND "
                f'({column}::jsonb ->> %s) COLLATE "C" {op} %s)'
            )
            params.extend((key, key, bound))
        else:
            # numeric, not float8: a JSON integer beyond 2**53 compares exactly, as on SQLite.
            parts.append(
                f"(jsonb_typeof({value}) = 'number' AND "
                f"({column}::jsonb ->> %s)::numeric {op} %s::numeric)"
            )
            params.extend((key, key, str(bound) if isinstance(bound, int) else repr(bound)))
    if c.exists is not None:
        parts.append(f"{value} IS {'NOT ' if c.exists else ''}NULL")
        params.append(key)
    return "(" + " AND ".join(parts) + ")", params
