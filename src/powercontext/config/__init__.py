"""ServerSettings: every knob, read from POWERCONTEXT_SERVER_<GROUP>_<FIELD> and `.env`.

An invalid value raises ConfigurationError naming the environment variable to fix. Each group
of the environment has its module (runtime, inference, database, http); `environment` holds
what they share, `settings` puts them together.
"""

from powercontext.config.database import DatabaseConfig
from powercontext.config.environment import ENV_PREFIX, HOME_VARIABLE, data_home, env_name
from powercontext.config.http import BODY_READ_TIMEOUT_SECONDS, HttpConfig, UiConfig
from powercontext.config.inference import LLAMACPP_PREFIX, OPENAI_COMPATIBLE_PREFIX, InferenceConfig
from powercontext.config.runtime import RuntimeConfig
from powercontext.config.settings import ServerSettings, describe_validation_error

__all__ = [
    "BODY_READ_TIMEOUT_SECONDS",
    "ENV_PREFIX",
    "HOME_VARIABLE",
    "LLAMACPP_PREFIX",
    "OPENAI_COMPATIBLE_PREFIX",
    "DatabaseConfig",
    "HttpConfig",
    "InferenceConfig",
    "RuntimeConfig",
    "ServerSettings",
    "UiConfig",
    "data_home",
    "describe_validation_error",
    "env_name",
]
