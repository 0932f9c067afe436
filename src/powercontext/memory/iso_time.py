"""Times read from text (the HTTP and MCP wire, export files, the CLI): ISO 8601 only.

Pydantic's lax datetime also reads a JSON number, or a string of digits, as Unix seconds, so
`"occurred_at": 20240101` would become 1970-08-23. `iso_8601_only` refuses both before
pydantic parses the value; every string form pydantic takes as a date-time (`Z`, offsets,
fractions, a date alone) and every `datetime` object pass through unchanged.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any

from pydantic import BeforeValidator, TypeAdapter, ValidationError
from pydantic_core import PydanticCustomError

ISO_EXAMPLE = "2024-05-08T13:56:00Z"
_ISO_START = re.compile(r"[0-9]{4}-")
"""How every date-time pydantic parses from text begins (the year, then the date separator):
any other string it accepts is a number of seconds."""
_LAX = TypeAdapter(datetime)


def _refuse(what: str) -> PydanticCustomError:
    return PydanticCustomError(
        "datetime_type",
        "Input should be an ISO 8601 date-time string such as {example}, not {what}",
        {"example": ISO_EXAMPLE, "what": what},
    )


def _is_seconds(text: str) -> bool:
    try:
        _LAX.validate_python(text)
    except ValidationError:
        return False  # not a time at all: pydantic's own error names why
    return True


def iso_8601_only(value: Any) -> Any:
    """`value` unchanged when pydantic may read it as a time written in ISO 8601."""
    if isinstance(value, bool):
        raise _refuse("a boolean")
    if isinstance(value, int | float):
        raise _refuse("a number (Unix seconds are not read as a time)")
    if isinstance(value, str) and not _ISO_START.match(value) and _is_seconds(value):
        raise _refuse("a number in a string (Unix seconds are not read as a time)")
    return value


IsoDateTime = Annotated[datetime, BeforeValidator(iso_8601_only)]
"""A time given as ISO 8601 text (or a `datetime`); a number is refused."""
