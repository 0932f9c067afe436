"""Resumable run state in the output directory: one file per finished conversation.

A conversation is either wholly recorded or not at all (atomic rename), and a directory is
only resumed by a run whose settings fingerprint is identical.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

STATE_FILE = "state.json"
CONVERSATIONS_DIR = "conversations"


class RunStateError(RuntimeError):
    """The output directory holds a run with other settings."""


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    """Nested settings as dotted keys (`config.top_k`), so a refusal names the setting."""
    if not isinstance(value, dict) or not value:
        return {prefix: value} if prefix else {}
    flat: dict[str, Any] = {}
    for key, item in value.items():
        flat |= _flat(item, f"{prefix}.{key}" if prefix else str(key))
    return flat


def _write_json(path: Path, payload: Any) -> None:
    temporary = path.with_suffix(path.suffix + ".tmp")
    temporary.write_text(json.dumps(payload, indent=1, ensure_ascii=False), encoding="utf-8")
    os.replace(temporary, path)


def _safe_name(sample_id: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in sample_id) + ".json"


class RunState:
    def __init__(self, out: Path, fingerprint: dict[str, Any]) -> None:
        self.out = out
        self.fingerprint: dict[str, Any] = json.loads(json.dumps(fingerprint))
        self._dir = out / CONVERSATIONS_DIR
        self._path = out / STATE_FILE
        self.completed: dict[str, str] = {}
        self.resumed = False

    def open(self) -> RunState:
        self._dir.mkdir(parents=True, exist_ok=True)
        if self._path.exists():
            saved = json.loads(self._path.read_text(encoding="utf-8"))
            previous = saved.get("fingerprint", {})
            if previous != self.fingerprint:
                before, now = _flat(previous), _flat(self.fingerprint)
                changed = sorted(
                    key for key in set(before) | set(now) if before.get(key) != now.get(key)
                )
                raise RunStateError(
                    f"{self.out} holds a run with different settings ({', '.join(changed)}); "
                    "use another --out directory or delete this one"
                )
            self.completed = {
                sample_id: name
                for sample_id, name in saved.get("completed", {}).items()
                if (self._dir / name).exists()
            }
            self.resumed = bool(self.completed)
        self._save()
        return self

    def _save(self) -> None:
        _write_json(self._path, {"fingerprint": self.fingerprint, "completed": self.completed})

    def is_done(self, sample_id: str) -> bool:
        return sample_id in self.completed

    def record(self, sample_id: str, payload: dict[str, Any]) -> None:
        name = _safe_name(sample_id)
        _write_json(self._dir / name, payload)
        self.completed[sample_id] = name
        self._save()

    def load(self, sample_id: str) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads(
            (self._dir / self.completed[sample_id]).read_text(encoding="utf-8")
        )
        return loaded
