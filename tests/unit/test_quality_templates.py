"""Index templates: what the channels see of an entry, rendered safely from text and metadata."""

from __future__ import annotations

import pytest

from powercontext.config import RuntimeConfig, ServerSettings
from powercontext.memory.errors import ConfigurationError
from powercontext.memory.indexing.templates import TemplateError, render, validate_template


def test_default_template_is_the_text_unchanged() -> None:
    assert render("{text}", "  as  stored \n", "note", {"date": "x"}) == "  as  stored \n"


def test_metadata_value_is_appended() -> None:
    out = render("{text}\n{metadata[date]}", "we met", "turn", {"date": "8 May 2023"})
    assert out == "we met\n8 May 2023"


def test_missing_and_null_keys_render_as_nothing_and_their_lines_vanish() -> None:
    template = "{text}\n{metadata[date]}\non {metadata[place]}"
    assert render(template, "we met", "turn", {"date": None}) == "we met\non "
    assert render("{text}\n{metadata[date]}", "we met", "turn", {}) == "we met"


def test_lists_numbers_and_booleans_render_plainly() -> None:
    metadata = {"tags": ["a", "b", None], "n": 3, "ok": True}
    out = render("{metadata[tags]} {metadata[n]} {metadata[ok]} {kind}", "t", "fact", metadata)
    assert out == "a, b 3 true fact"


def test_format_spec_that_does_not_fit_falls_back_to_the_value() -> None:
    assert render("{metadata[n]:>4}|{metadata[s]:d}", "", "k", {"n": 7, "s": "x"}) == "   7|x"


def test_conversion_applies_to_the_plain_value() -> None:
    assert render("{metadata[s]!r}", "", "k", {"s": "x"}) == "'x'"


@pytest.mark.parametrize(
    "template",
    [
        "{text.__class__}",
        "{metadata[a].b}",
        "{0}",
        "{}",
        "{other}",
        "{metadata}",
        "{text[0]}",
        "{text",
        "{metadata[a}",
    ],
)
def test_unsafe_or_unknown_fields_are_rejected(template: str) -> None:
    with pytest.raises(TemplateError):
        validate_template(template)


def test_config_validates_the_template_and_accepts_escaped_newlines() -> None:
    assert RuntimeConfig(index_template="{text}\\n{metadata[d]}").index_template == (
        "{text}\n{metadata[d]}"
    )
    with pytest.raises(ConfigurationError, match="INDEX_TEMPLATE"):
        ServerSettings(runtime={"index_template": "{text.upper}"})


def test_environment_variables_reach_the_new_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POWERCONTEXT_SERVER_RUNTIME_INDEX_TEMPLATE", "{text}\\n{metadata[d]}")
    monkeypatch.setenv("POWERCONTEXT_SERVER_RUNTIME_INDEX_CONTEXT_BEFORE", "3")
    monkeypatch.setenv("POWERCONTEXT_SERVER_RUNTIME_INDEX_CONTEXT_AFTER", "0")
    monkeypatch.setenv("POWERCONTEXT_SERVER_RUNTIME_INDEX_CONTEXT_GROUP_KEY", "thread")
    monkeypatch.setenv("POWERCONTEXT_SERVER_RUNTIME_INDEX_SPEAKER_KEY", "")
    runtime = ServerSettings().runtime
    assert runtime.index_template == "{text}\n{metadata[d]}"
    assert runtime.index_context_before == 3 and runtime.index_context_after == 0
    assert runtime.index_speaker_key is None
    assert runtime.index_context_group_key == "thread"
