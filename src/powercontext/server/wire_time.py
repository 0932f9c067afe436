"""Times on the wire: ISO 8601 strings only, as the OpenAPI document says (`format: date-time`).

Pydantic's lax datetime also reads a JSON number, or a string of digits, as Unix seconds, so
`"occurred_at": 20240101` would be stored as 1970-08-23. These types refuse both with a 422
before pydantic parses the value; every string form pydantic took before (`Z`, offsets,
fractions, a date alone) is still taken and parsed exactly as before, and a time without
offset keeps its meaning (UTC for `occurred_at`, refused in a filter).
"""

from __future__ import annotations

import inspect
from typing import Annotated, Any

from pydantic import BeforeValidator, Field

from powercontext.memory import filters
from powercontext.memory.iso_time import ISO_EXAMPLE, iso_8601_only
from powercontext.memory.values import OccurredAt

WireOccurredAt = Annotated[OccurredAt, BeforeValidator(iso_8601_only)]
"""`occurred_at` of a request: an ISO 8601 string; without offset it is UTC."""
WireFilterTime = Annotated[filters.FilterTime, BeforeValidator(iso_8601_only)]
"""A filter bound: an ISO 8601 string with a time zone."""


def _described(name: str) -> Any:
    return Field(default=None, description=filters.MemoryFilter.model_fields[name].description)


class MemoryFilter(filters.MemoryFilter):
    # The core filter with its four times taken from ISO 8601 strings only. It keeps the core
    # class's name, so the OpenAPI component and the MCP schemas keep theirs, and is one, so
    # the runtime takes it as it is.
    __doc__ = (
        f"{inspect.cleandoc(filters.MemoryFilter.__doc__ or '')} "
        f"Times are ISO 8601 strings with a time zone (e.g. {ISO_EXAMPLE}); a number is refused."
    )

    created_after: WireFilterTime | None = _described("created_after")
    created_before: WireFilterTime | None = _described("created_before")
    occurred_after: WireFilterTime | None = _described("occurred_after")
    occurred_before: WireFilterTime | None = _described("occurred_before")
