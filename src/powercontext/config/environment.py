"""Where settings come from: POWERCONTEXT_SERVER_<GROUP>_<FIELD> variables (in the environment
or `.env`), the data home, and the base of every group."""

from __future__ import annotations

import os
import types
from pathlib import Path
from typing import Any, Union, get_args, get_origin

import platformdirs
from dotenv import dotenv_values
from pydantic import BaseModel, ConfigDict, model_validator

ENV_PREFIX = "POWERCONTEXT_SERVER_"
HOME_VARIABLE = "POWERCONTEXT_HOME"
ENV_FILE = ".env"
FROM_ENV_FILE = ".env"
FROM_ENVIRONMENT = "the environment"


def env_name(*loc: str | int) -> str:
    return ENV_PREFIX + "_".join(str(part) for part in loc).upper()


def data_home() -> Path:
    """POWERCONTEXT_HOME, else the platform's user data directory."""
    configured = os.environ.get(HOME_VARIABLE)
    return Path(configured) if configured else Path(platformdirs.user_data_dir("powercontext"))


def set_variables(prefix: str = ENV_PREFIX) -> dict[str, tuple[str, str]]:
    """Every variable set whose name starts with `prefix` (POWERCONTEXT_SERVER_ unless given),
    by its upper-case name: its value and where it was set. As pydantic-settings reads them:
    names in any case, the environment over `.env` (in the working directory)."""
    found: dict[str, tuple[str, str]] = {}
    if Path(ENV_FILE).is_file():
        for name, value in dotenv_values(ENV_FILE).items():
            if name.upper().startswith(prefix) and value is not None:
                found[name.upper()] = (value, FROM_ENV_FILE)
    for name, value in os.environ.items():
        if name.upper().startswith(prefix):
            found[name.upper()] = (value, FROM_ENVIRONMENT)
    return found


def blank_to_none(value: Any) -> Any:
    """A blank environment value means unset (an empty variable is easier to write than none)."""
    return None if isinstance(value, str) and not value.strip() else value


def _optional_number(annotation: Any) -> bool:
    if get_origin(annotation) not in (Union, types.UnionType):
        return False
    args = get_args(annotation)
    return type(None) in args and all(arg in (int, float, bool, type(None)) for arg in args)


class SettingsGroup(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_default=True)

    @model_validator(mode="before")
    @classmethod
    def _blank_optional_number_is_unset(cls, values: Any) -> Any:
        # `X=${X:-}` in a deployment template sets a blank value: for an optional number or
        # switch that means its default (unset), as it does for the optional strings. Strings,
        # secrets and paths keep a blank as given, so a blank API key still fails closed.
        if not isinstance(values, dict):
            return values
        return {
            name: None
            if name in cls.model_fields
            and _optional_number(cls.model_fields[name].annotation)
            and blank_to_none(value) is None
            else value
            for name, value in values.items()
        }
