"""Where settings come from: POWERCONTEXT_SERVER_<GROUP>_<FIELD> variables, the data home, and
the base of every group."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import platformdirs
from pydantic import BaseModel, ConfigDict

ENV_PREFIX = "POWERCONTEXT_SERVER_"
HOME_VARIABLE = "POWERCONTEXT_HOME"


def env_name(*loc: str | int) -> str:
    return ENV_PREFIX + "_".join(str(part) for part in loc).upper()


def data_home() -> Path:
    """POWERCONTEXT_HOME, else the platform's user data directory."""
    configured = os.environ.get(HOME_VARIABLE)
    return Path(configured) if configured else Path(platformdirs.user_data_dir("powercontext"))


def blank_to_none(value: Any) -> Any:
    """A blank environment value means unset (an empty variable is easier to write than none)."""
    return None if isinstance(value, str) and not value.strip() else value


class SettingsGroup(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_default=True)
