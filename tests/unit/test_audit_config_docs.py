"""The settings tables of README.md and docs/*.md against ServerSettings: every setting is in
a table with its real default, and every POWERCONTEXT_SERVER_ name the docs write is one.

A table documents settings when its first header cell says `variable` or `Setting`, or names a
prefix (`POWERCONTEXT_SERVER_RUNTIME_...`) that its rows' names continue. A row may name
several settings, `A` / `_B`: `_B` replaces the end of `A` (`..._HTTP_HOST` / `_PORT`), with
as many defaults, or one for all.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from powercontext.config import ServerSettings
from powercontext.config.settings import setting_names

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PREFIX = "POWERCONTEXT_SERVER_"
# Defaults that are None in the model and described in words in the docs.
DESCRIBED_UNSET = {
    "POWERCONTEXT_SERVER_DATABASE_URL": "sqlite:///$POWERCONTEXT_HOME/powercontext.db",
    "POWERCONTEXT_SERVER_HTTP_AUTH_ENABLED": "on when keys are set",
    "POWERCONTEXT_SERVER_INFERENCE_LLAMACPP_THREADS": "llama.cpp's",
}
_MIB = re.compile(r"^(\d+) MiB$")


def _defaults() -> dict[str, Any]:
    values: dict[str, Any] = {}
    for section, field in ServerSettings.model_fields.items():
        group = field.annotation
        fields = (
            {f"{section}_{n}": f for n, f in group.model_fields.items()}
            if isinstance(group, type) and issubclass(group, BaseModel)
            else {section: field}
        )
        for name, sub in fields.items():
            default = sub.default_factory() if sub.default_factory else sub.default  # type: ignore[call-arg]
            assert default is not PydanticUndefined
            values[PREFIX + name.upper()] = default
    return values


DEFAULTS = _defaults()


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _table_rows() -> list[tuple[str, str, str]]:
    """(where, name, documented default) of every setting row of every settings table."""
    rows = []
    for page in PAGES:
        lines = page.read_text(encoding="utf-8").splitlines()
        prefix: str | None = None
        for number, line in enumerate(lines, 1):
            if not line.startswith("|"):
                prefix = None
                continue
            cells = _cells(line)
            if prefix is None:  # a header
                head = cells[0]
                named = re.search(r"`(POWERCONTEXT_SERVER_[A-Z_]*?_)\.\.\.`", head)
                if named:
                    prefix = named.group(1)
                elif head.lower() in ("variable", "setting"):
                    prefix = ""
                else:
                    prefix = "-"  # another kind of table: skip its rows
                continue
            if prefix == "-" or set(cells[0]) <= set("-: "):
                continue
            names = re.findall(r"`([A-Z_][A-Z0-9_]*)(?:=[^`]*)?`", cells[0])
            if not names:
                continue
            where = f"{page.relative_to(ROOT)}:{number}"
            full = [_resolve(prefix + names[0], prefix + names[0], where)]
            full += [_resolve(full[0], part, where) for part in names[1:]]
            defaults = [d.strip() for d in cells[1].split(" / ")]
            if "=" in cells[0]:  # a row about one value of a setting, not its default
                defaults = []
            for index, name in enumerate(full):
                if name.startswith(PREFIX) and defaults:
                    rows.append((where, name, defaults[min(index, len(defaults) - 1)]))
                elif name.startswith(PREFIX):
                    rows.append((where, name, ""))
    return rows


def _resolve(first: str, name: str, where: str) -> str:
    """`_B` after `..._X_A`: the setting that replacing the end of the first name makes."""
    if not name.startswith("_"):
        return name
    parts = first.split("_")
    for cut in range(1, 4):
        candidate = "_".join(parts[:-cut]) + name
        if candidate in DEFAULTS:
            return candidate
    raise AssertionError(f"{where}: {name} after {first} names no setting")


def _parsed(text: str) -> Any:
    text = text.strip()
    if text.startswith("`") and "`" in text[1:]:
        text = text[1 : text.index("`", 1)]  # `0` (off): the value, not the remark
    if text == "unset":
        return None
    if text in ("true", "false"):
        return text == "true"
    if mib := _MIB.match(text):
        return int(mib.group(1)) * 1024 * 1024
    try:
        return json.loads(text)
    except ValueError:
        return text


ROWS = _table_rows()


def test_settings_tables_are_found() -> None:
    pages = {where.split(":")[0] for where, _, _ in ROWS}
    assert {"README.md", "docs/http.md", "docs/rerank.md"} <= pages
    assert len(ROWS) >= 60


@pytest.mark.parametrize("name", setting_names())
def test_every_setting_is_in_a_table_with_its_default(name: str) -> None:
    documented = [(where, default) for where, row, default in ROWS if row == name and default]
    assert documented, f"{name} is in no settings table of README.md or docs/*.md"
    real = DEFAULTS[name]
    for where, default in documented:
        described = DESCRIBED_UNSET.get(name)
        if real is None and described and default.strip("`").startswith(described):
            continue
        assert _parsed(default) == real, f"{where}: {name} default {default!r}, really {real!r}"


def test_every_documented_name_is_a_setting() -> None:
    for where, name, _ in ROWS:
        assert name in DEFAULTS, f"{where}: {name} is no setting"
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in re.finditer(r"POWERCONTEXT_SERVER_[A-Z0-9_]*", text):
            if match.group(0).endswith("_"):  # a prefix: `POWERCONTEXT_SERVER_HTTP_*`
                continue
            line = text.count("\n", 0, match.start()) + 1
            where = f"{page.relative_to(ROOT)}:{line}"
            assert match.group(0) in DEFAULTS, f"{where}: {match.group(0)} is no setting"
