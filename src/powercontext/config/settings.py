"""ServerSettings: the groups together, read from the environment and `.env`, with errors that
name the variable to fix."""

from __future__ import annotations

import json
import os
from typing import Any, Literal, get_origin

from pydantic import BaseModel, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict
from pydantic_settings.exceptions import SettingsError

from powercontext.config.database import DatabaseConfig
from powercontext.config.environment import ENV_PREFIX, env_name
from powercontext.config.http import HttpConfig, UiConfig
from powercontext.config.inference import InferenceConfig
from powercontext.config.runtime import RuntimeConfig
from powercontext.memory.errors import ConfigurationError


class ServerSettings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_nested_delimiter="_",
        env_nested_max_split=1,
        env_file=".env",
        extra="ignore",
        validate_default=True,
    )

    runtime: RuntimeConfig = RuntimeConfig()
    inference: InferenceConfig = InferenceConfig()
    database: DatabaseConfig = DatabaseConfig()
    http: HttpConfig = HttpConfig()
    ui: UiConfig = UiConfig()
    log_format: Literal["json", "text"] = "text"

    def __init__(self, **values: Any) -> None:
        try:
            super().__init__(**values)
        except ValidationError as exc:
            raise ConfigurationError(describe_validation_error(exc)) from exc
        except SettingsError as exc:  # a JSON-valued variable that is not JSON
            raise ConfigurationError(_undecodable(exc)) from exc


def _undecodable(exc: SettingsError) -> str:
    """Name the JSON-valued variables that hold no JSON: pydantic-settings names only the
    section ("runtime"), and its traceback reached the user."""
    json_valued = [
        env_name(section, name)
        for section, field in ServerSettings.model_fields.items()
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)
        for name, sub in field.annotation.model_fields.items()
        if get_origin(sub.annotation) is dict
    ]
    wrong = []
    for name in json_valued:
        try:
            json.loads(os.environ.get(name, "{}"))
        except ValueError:
            wrong.append(name)
    if not wrong:  # the value came from .env (or a lower-case name): say what to look for
        return (
            f"invalid configuration: {exc}; the JSON-valued settings are "
            f"{', '.join(json_valued)}: check their values (in .env too) are JSON objects"
        )
    return f"invalid configuration: {', '.join(wrong)}: not valid JSON (write a JSON object)"


def describe_validation_error(exc: ValidationError) -> str:
    problems = []
    for error in exc.errors():
        loc = [part for part in error["loc"] if isinstance(part, str)]
        problems.append(f"{env_name(*loc)}: {error['msg']}")
    return "invalid configuration: " + "; ".join(problems)
