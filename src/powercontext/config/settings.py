"""ServerSettings: the groups together, read from the environment and `.env`, with errors that
name the variable to fix.

Every name under POWERCONTEXT_SERVER_ is ours: one that names no setting (a typo, a setting
of another version) fails like a bad value, naming the closest real one. pydantic-settings
would ignore it at the top level and reject it inside a group; one rule for both, and a
misspelt setting never leaves the server running on a default the operator did not choose.
"""

from __future__ import annotations

import difflib
import json
from typing import Any, Literal, get_origin

from pydantic import BaseModel, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict
from pydantic_settings.exceptions import SettingsError

from powercontext.config.database import DatabaseConfig
from powercontext.config.environment import (
    ENV_FILE,
    ENV_PREFIX,
    FROM_ENV_FILE,
    env_name,
    set_variables,
)
from powercontext.config.http import HttpConfig, UiConfig
from powercontext.config.inference import InferenceConfig
from powercontext.config.runtime import RuntimeConfig
from powercontext.memory.errors import ConfigurationError


class ServerSettings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_nested_delimiter="_",
        env_nested_max_split=1,
        env_file=ENV_FILE,
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
        variables = set_variables()
        unknown = _unknown(variables)
        try:
            super().__init__(**values)
        except ValidationError as exc:
            raise ConfigurationError(describe_validation_error(exc, unknown)) from exc
        except SettingsError as exc:  # a JSON-valued variable that is not JSON
            problems = [*unknown.values(), _undecodable(exc, variables)]
            raise ConfigurationError(_joined(problems)) from exc
        if unknown:
            raise ConfigurationError(_joined(list(unknown.values())))


def setting_names() -> list[str]:
    """Every variable that names one setting, in the order of the model."""
    names: list[str] = []
    for section, field in ServerSettings.model_fields.items():
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            names.extend(env_name(section, name) for name in field.annotation.model_fields)
        else:
            names.append(env_name(section))
    return names


def _unknown(variables: dict[str, tuple[str, str]]) -> dict[str, str]:
    """Each set variable that names no setting, with its problem."""
    known = set(setting_names())
    # A whole group as one JSON object (POWERCONTEXT_SERVER_HTTP='{"port": 9000}') is
    # pydantic-settings' own form: it is read, so it is not unknown.
    known.update(env_name(section) for section in ServerSettings.model_fields)
    return {
        name: _unknown_problem(name, origin)
        for name, (_, origin) in sorted(variables.items())
        if name not in known
    }


def _unknown_problem(name: str, origin: str) -> str:
    where = " (in .env)" if origin == FROM_ENV_FILE else ""
    suffixes = [known.removeprefix(ENV_PREFIX) for known in setting_names()]
    close = difflib.get_close_matches(name.removeprefix(ENV_PREFIX), suffixes, n=1, cutoff=0.6)
    hint = (
        f"did you mean {ENV_PREFIX}{close[0]}?"
        if close
        else "`powercontext config show` lists every setting"
    )
    return f"{name}{where}: no such setting; {hint}"


def _joined(problems: list[str]) -> str:
    return "invalid configuration: " + "; ".join(problems)


def _undecodable(exc: SettingsError, variables: dict[str, tuple[str, str]]) -> str:
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
        value, origin = variables.get(name, ("{}", ""))
        try:
            json.loads(value)
        except ValueError:
            wrong.append(name + (" (in .env)" if origin == FROM_ENV_FILE else ""))
    if not wrong:
        return str(exc)
    return f"{', '.join(wrong)}: not valid JSON (write a JSON object)"


def describe_validation_error(exc: ValidationError, unknown: dict[str, str] | None = None) -> str:
    """One line: each problem with the variable to fix (and `.env` when it was set there);
    `unknown` names no setting and replaces pydantic's "Extra inputs are not permitted"."""
    variables = set_variables()
    unknown = unknown or {}
    problems = list(unknown.values())
    for error in exc.errors():
        loc = [part for part in error["loc"] if isinstance(part, str)]
        name = env_name(*loc)
        if error["type"] == "extra_forbidden":
            if name not in unknown:
                problems.append(_unknown_problem(name, variables.get(name, ("", ""))[1]))
            continue
        # pydantic's "Value error, " says nothing to an operator.
        message = str(error["msg"]).removeprefix("Value error, ")
        if error["type"] == "value_error" and len(loc) == 1 and name not in variables:
            # A check across a group's settings: its message names the variables involved.
            problems.append(message)
            continue
        where = " (in .env)" if variables.get(name, ("", ""))[1] == FROM_ENV_FILE else ""
        problems.append(f"{name}{where}: {message}")
    return _joined(problems)
