"""Settings shown to people (`config show`, a benchmark's results file) without credentials.

A URL-valued setting may carry a password: in its user part (`http://user:pw@host/`) or as a
libpq `password=` parameter. Secret fields (SecretStr) are masked by their type; these are the
plain strings that can hold one.
"""

from __future__ import annotations

import re
from typing import Any

MASK = "********"
# The user part's password up to the authority's last `@` (a password may hold `@`), and
# a `password=` query parameter (libpq's URL form).
_URL_PASSWORD = re.compile(r"(?P<head>://[^/@:]*:)[^/]*@")
_QUERY_PASSWORD = re.compile(r"(?P<head>[?&]password=)[^&#]*", re.IGNORECASE)


def mask_url(url: str) -> str:
    """`url` with any password replaced by MASK; a value that is not a URL is unchanged."""
    if "://" not in url:
        return url
    url = _URL_PASSWORD.sub(lambda m: f"{m.group('head')}{MASK}@", url)
    return _QUERY_PASSWORD.sub(lambda m: f"{m.group('head')}{MASK}", url)


def masked_values(values: dict[str, Any]) -> dict[str, Any]:
    """Each string value through `mask_url` (numbers, booleans and None as they are)."""
    return {k: mask_url(v) if isinstance(v, str) else v for k, v in values.items()}
