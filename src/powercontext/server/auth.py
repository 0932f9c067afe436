"""Bearer API keys, each limited to the scopes it may use.

Keys come from POWERCONTEXT_SERVER_HTTP_API_KEYS (JSON) and/or the JSON file named by
POWERCONTEXT_SERVER_HTTP_API_KEYS_FILE, both shaped {"<key>": ["scope-a", ...] or ["*"]}.
A presented key is compared against every configured key in constant time (over SHA-256
digests, so neither the position of a match nor the keys' lengths show in the timing).
Keys are never logged.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from powercontext.config import HttpConfig, env_name
from powercontext.memory.errors import ConfigurationError
from powercontext.server.errors import ForbiddenError, UnauthorizedError

ALL_SCOPES = "*"
_KEYS = env_name("http", "api_keys")
_KEYS_FILE = env_name("http", "api_keys_file")
_AUTH_ENABLED = env_name("http", "auth_enabled")


@dataclass(frozen=True, slots=True)
class KeyGrant:
    """What one authenticated caller may do. `scopes=None` means every scope."""

    scopes: frozenset[str] | None
    key_id: str | None = None
    """`key:` and the first 12 hex digits of the key's SHA-256: names the key in audit
    records (an erasure's actor) without revealing it. None when auth is off."""

    def allows(self, scope_id: str) -> bool:
        return self.scopes is None or scope_id in self.scopes

    def require(self, scope_id: str) -> None:
        if not self.allows(scope_id):
            raise ForbiddenError(f"this API key may not use scope {scope_id!r}")


UNRESTRICTED = KeyGrant(scopes=None)


def _parse_keys(raw: Any, source: str) -> dict[str, KeyGrant]:
    if not isinstance(raw, dict):
        raise ConfigurationError(f'{source}: must be a JSON object like {{"key": ["scope"]}}')
    grants: dict[str, KeyGrant] = {}
    for key, scopes in raw.items():
        if not isinstance(key, str) or len(key) < 8:
            raise ConfigurationError(f"{source}: every API key must be a string of 8+ characters")
        if (
            not isinstance(scopes, list)
            or not scopes
            or not all(isinstance(s, str) and s for s in scopes)
        ):
            raise ConfigurationError(
                f'{source}: each key maps to a non-empty list of scope ids or ["*"]'
            )
        allowed = None if ALL_SCOPES in scopes else frozenset(scopes)
        grants[key] = KeyGrant(allowed, key_id=key_fingerprint(key))
    return grants


def load_keys(http: HttpConfig) -> dict[str, KeyGrant]:
    grants: dict[str, KeyGrant] = {}
    if http.api_keys is not None:
        grants |= _parse_keys(json.loads(http.api_keys.get_secret_value()), _KEYS)
    if http.api_keys_file is not None:
        path = Path(http.api_keys_file)
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigurationError(
                f"{_KEYS_FILE}: cannot read a JSON object from {path} ({type(exc).__name__})"
            ) from exc
        grants |= _parse_keys(raw, _KEYS_FILE)
    return grants


def key_fingerprint(key: str) -> str:
    return "key:" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()


class ApiKeyAuthority:
    """Authenticates bearer tokens; with auth disabled every caller gets every scope."""

    def __init__(self, grants: dict[str, KeyGrant], *, enabled: bool) -> None:
        if enabled and not grants:
            raise ConfigurationError(
                f"{_AUTH_ENABLED}=true but no API key is configured: set {_KEYS} or {_KEYS_FILE}"
            )
        self.enabled = enabled
        self._grants = [(_digest(key), grant) for key, grant in grants.items()]

    @classmethod
    def from_config(cls, http: HttpConfig) -> ApiKeyAuthority:
        grants = load_keys(http)
        enabled = http.auth_enabled if http.auth_enabled is not None else bool(grants)
        return cls(grants, enabled=enabled)

    def authenticate(self, token: str | None) -> KeyGrant:
        if not self.enabled:
            return UNRESTRICTED
        if not token:
            raise UnauthorizedError("missing bearer API key (Authorization: Bearer <key>)")
        presented = _digest(token)
        found: KeyGrant | None = None
        for digest, grant in self._grants:
            # No early exit: every configured key is compared for every request.
            if hmac.compare_digest(presented, digest):
                found = grant
        if found is None:
            raise UnauthorizedError("invalid API key")
        return found


def is_loopback(host: str) -> bool:
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind_safety(http: HttpConfig, authority: ApiKeyAuthority) -> None:
    """Refuse to serve a non-loopback address without auth unless explicitly allowed."""
    if authority.enabled or is_loopback(http.host) or http.allow_unauthenticated_public_bind:
        return
    raise ConfigurationError(
        f"refusing to bind {http.host!r} without authentication: configure {_KEYS} or "
        f"{_KEYS_FILE}, bind 127.0.0.1, or set "
        f"{env_name('http', 'allow_unauthenticated_public_bind')}=true"
    )
