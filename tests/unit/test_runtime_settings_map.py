"""search_config builds its sub-configs from settings by name: every setting of a group must
reach its config, so that renaming a field or a setting cannot drop one silently."""

from __future__ import annotations

from dataclasses import fields

import pytest

from powercontext.config import RuntimeConfig, ServerSettings
from powercontext.memory.indexing.context import IndexTextConfig
from powercontext.memory.search.analyze import AnalyzerConfig
from powercontext.memory.search.feedback import FeedbackConfig
from powercontext.memory.search.fields import FieldWeights
from powercontext.memory.search.fusion import RrfConfig
from powercontext.memory.search.vector_feedback import VectorFeedbackConfig
from powercontext.runtime import search_config

GROUPS = [
    ("analyzer", AnalyzerConfig, "analyzer_"),
    ("feedback", FeedbackConfig, "search_feedback_"),
    ("fusion", RrfConfig, "search_rrf_"),
    ("vector_feedback", VectorFeedbackConfig, "search_vector_feedback_"),
    ("fields", FieldWeights, "search_field_weight_"),
    ("index", IndexTextConfig, "index_"),
]


@pytest.mark.parametrize(("attribute", "config", "prefix"), GROUPS)
def test_every_setting_of_a_group_names_a_field_of_its_config(
    attribute: str, config: type, prefix: str
) -> None:
    names = {field.name for field in fields(config)}
    settings = [name for name in RuntimeConfig.model_fields if name.startswith(prefix)]
    assert settings
    assert {name.removeprefix(prefix) for name in settings} <= names


@pytest.mark.parametrize(("attribute", "config", "prefix"), GROUPS)
def test_search_config_carries_each_setting_of_a_group(
    attribute: str, config: type, prefix: str
) -> None:
    runtime = RuntimeConfig()
    changed = {
        name: _other(getattr(runtime, name))
        for name in RuntimeConfig.model_fields
        if name.startswith(prefix)
    }
    settings = ServerSettings(runtime=runtime.model_copy(update=changed))
    built = getattr(search_config(settings), attribute)
    for name, value in changed.items():
        assert getattr(built, name.removeprefix(prefix)) == value


def _other(value: object) -> object:
    """A value unlike the default, of the same type."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    if value is None or isinstance(value, str):
        return f"{value}-changed"
    raise AssertionError(f"no other value for {value!r}")
