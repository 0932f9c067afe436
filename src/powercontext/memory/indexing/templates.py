"""Index-text templates: what the search channels see of an entry, built from its text and
metadata. The stored `text` is never changed; only the FTS tokens and the embedding text are.

A template is a `str.format` string over three names: `{text}`, `{kind}` and
`{metadata[KEY]}` (any metadata key). Rendering is safe by construction:

- a missing key, or a metadata value that is null, renders as nothing (no KeyError);
- attribute access (`{text.__class__}`) and positional fields are rejected when the template
  is validated, so a template cannot reach into Python objects;
- lists render as their items joined by ", ", other non-string values through `str()`;
- a format spec that does not suit the value falls back to the plain value;
- lines left blank by a missing value are dropped, so `"{text}\\n{metadata[date]}"` on an
  entry without `date` is exactly its text.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

DEFAULT_TEMPLATE = "{text}"
TEMPLATE_NAMES = ("text", "kind", "metadata")
_FIELD_HEAD = re.compile(r"[^.\[]*")


class TemplateError(ValueError):
    """The template uses a name or construct that index templates do not allow."""


def _split_field(field_name: str) -> tuple[str, list[tuple[bool, str]]]:
    """`metadata[date]` -> ("metadata", [(False, "date")]); `a.b` -> ("a", [(True, "b")]).

    The same split str.format applies, written out so no private module is needed.
    """
    match = _FIELD_HEAD.match(field_name)
    first = match.group(0) if match else ""
    rest: list[tuple[bool, str]] = []
    position = len(first)
    while position < len(field_name):
        char = field_name[position]
        if char == "[":
            close = field_name.find("]", position)
            if close < 0:
                raise TemplateError(f"template field {{{field_name}}}: missing ']'")
            rest.append((False, field_name[position + 1 : close]))
            position = close + 1
        elif char == ".":
            name = _FIELD_HEAD.match(field_name, position + 1)
            attr = name.group(0) if name else ""
            rest.append((True, attr))
            position += 1 + len(attr)
        else:
            raise TemplateError(f"template field {{{field_name}}} is malformed")
    return first, rest


@lru_cache(maxsize=64)
def validate_template(template: str) -> str:
    """Return `template` when it only uses the allowed names, else raise TemplateError."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise TemplateError(f"invalid template {template!r}: {exc}") from exc
    for _literal, field_name, _spec, _conversion in parsed:
        if field_name is None:
            continue
        first, rest = _split_field(field_name)
        if first not in TEMPLATE_NAMES:
            raise TemplateError(
                f"template field {{{field_name}}} is not allowed; use {{text}}, {{kind}} "
                "or {metadata[KEY]}"
            )
        if any(is_attr for is_attr, _ in rest):
            raise TemplateError(f"template field {{{field_name}}}: attribute access is not allowed")
        if first == "metadata" and len(rest) != 1:
            raise TemplateError(f"template field {{{field_name}}}: write {{metadata[KEY]}}")
        if first != "metadata" and rest:
            raise TemplateError(f"template field {{{field_name}}} takes no index")
    return template


def _plain(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple):
        return ", ".join(_plain(item) for item in value if item is not None)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class _SafeFormatter(string.Formatter):
    def __init__(self, text: str, kind: str, metadata: Mapping[str, Any]) -> None:
        self._values = {"text": text, "kind": kind}
        self._metadata = metadata

    def get_field(self, field_name: str, args: Any, kwargs: Any) -> tuple[Any, str]:
        first, rest = _split_field(field_name)
        if first == "metadata":
            return self._metadata.get(rest[0][1]) if rest else None, first
        return self._values.get(first, ""), first

    def convert_field(self, value: Any, conversion: str | None) -> Any:
        return value if conversion is None else super().convert_field(_plain(value), conversion)

    def format_field(self, value: Any, format_spec: str) -> str:
        if value is None:
            return ""
        if format_spec:
            try:
                return format(value, format_spec)
            except (TypeError, ValueError):
                pass
        return _plain(value)


def render(template: str, text: str, kind: str, metadata: Mapping[str, Any]) -> str:
    """The index text of one entry. `"{text}"` (the default) returns `text` unchanged."""
    if template == DEFAULT_TEMPLATE:
        return text
    rendered = _SafeFormatter(text, kind, metadata).format(validate_template(template))
    lines = [line for line in rendered.split("\n") if line.strip()]
    return "\n".join(lines)
