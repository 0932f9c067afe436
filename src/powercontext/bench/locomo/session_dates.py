"""Session dates as LoCoMo writes them (`1:56 pm on 8 May, 2023`), parsed to UTC moments."""

from __future__ import annotations

import re
from datetime import UTC, datetime

# `1:56 pm on 8 May, 2023`: parsed by hand, not strptime, so the month names and am/pm do not
# depend on the process locale (`%B` and `%p` follow LC_TIME).
_SESSION_DATE = re.compile(
    r"(\d{1,2}):(\d{2})\s*([ap])\.?\s*m\.?\s+on\s+(\d{1,2})\s+([a-z]+)\.?,?\s+(\d{4})",
    re.IGNORECASE,
)
_MONTH_NAMES = (
    "january february march april may june july august september october november december"
).split()
_MONTHS = {
    **{name: number for number, name in enumerate(_MONTH_NAMES, start=1)},
    **{name[:3]: number for number, name in enumerate(_MONTH_NAMES, start=1)},
    "sept": 9,
}


def parse_session_date(value: str | None) -> datetime | None:
    """`1:56 pm on 8 May, 2023` -> 2023-05-08T13:56Z. The file names no time zone: UTC is the
    harness's convention, so every entry of a run is on one clock. None when unparseable."""
    match = _SESSION_DATE.fullmatch(value.strip()) if value else None
    if match is None:
        return None
    hour, minute, half, day, month_name, year = match.groups()
    month = _MONTHS.get(month_name.lower())
    if month is None or not 1 <= int(hour) <= 12:
        return None
    hour24 = int(hour) % 12 + (12 if half.lower() == "p" else 0)
    try:
        return datetime(int(year), month, int(day), hour24, int(minute), tzinfo=UTC)
    except ValueError:  # 31 June, minute 75
        return None
