"""List cursors that are scope-local and opaque.

A cursor used to be `<revision>:<row key>`, and the row key is shared by every scope of a
database: two cursors a few writes apart told a caller how much *other* tenants had written
meanwhile. A cursor now names the last entry version of the page instead (a random id,
resolved within the caller's scope only) and the revision it paginates, base64url-encoded.
It needs no secret, so it stays valid across processes and restarts sharing a database: a
forged cursor can only name versions of the caller's own scope, which the caller may list
anyway; one from another scope, another revision or of another shape is `invalid_cursor`.
"""

from __future__ import annotations

import base64
import binascii

from powercontext.memory.errors import InvalidCursorError

_PREFIX = "c1."
_MAX_REVISION = 2**63 - 1


def encode_cursor(revision: int, entry_version_id: str) -> str:
    raw = f"{revision}:{entry_version_id}".encode()
    return _PREFIX + base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_cursor(cursor: str, revision: int) -> str:
    """The entry version id a cursor of `revision` resumes after."""
    if not cursor.startswith(_PREFIX):
        raise InvalidCursorError("invalid cursor: pass a next_cursor exactly as received")
    body = cursor[len(_PREFIX) :]
    try:
        raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode("utf-8")
        at, version_id = raw.split(":", 1)
    except (binascii.Error, UnicodeDecodeError, ValueError) as exc:
        raise InvalidCursorError("invalid cursor: pass a next_cursor exactly as received") from exc
    # Only what `encode_cursor` writes: `int()` also reads "-1", "4_0" and non-ASCII digits,
    # and advising "pass revision -1" would name a revision the API refuses.
    at_revision = int(at) if at.isascii() and at.isdigit() else 0
    if not version_id or not 1 <= at_revision <= _MAX_REVISION:
        raise InvalidCursorError("invalid cursor: pass a next_cursor exactly as received")
    if at_revision != revision:
        raise InvalidCursorError(
            f"the cursor continues the listing at revision {at_revision}, not {revision}: "
            f"pass revision {at_revision} with it"
        )
    return version_id
