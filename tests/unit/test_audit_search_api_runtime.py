"""The in-process search API probed as a user would: a wrong argument type is the SDK's
TypeError (not an AttributeError from inside the pipeline), bad values are validation errors
naming the field, and an unknown scope or revision answers as over HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from powercontext import open_runtime
from powercontext.memory import (
    CapabilityNotSupportedError,
    NotFoundError,
    RememberMemoryRequest,
    ScopedMemory,
    SearchMemoryRequest,
)
from powercontext.runtime import Runtime
from tests.runtime_settings import sqlite_settings


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[Runtime]:
    async with open_runtime(sqlite_settings(tmp_path, "hash")) as opened:
        await opened.memory.for_scope("s").remember_many(
            [RememberMemoryRequest(text="alpha beta"), RememberMemoryRequest(text="gamma")]
        )
        yield opened


REQUEST = SearchMemoryRequest(query="alpha")


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda m: m.search("alpha"), "search takes a SearchMemoryRequest, not str"),
        (lambda m: m.search({"query": "alpha"}), "search takes a SearchMemoryRequest, not dict"),
        (lambda m: m.search(None), "search takes a SearchMemoryRequest, not NoneType"),
        (lambda m: m.search_batch(["alpha"]), "search_batch takes a SearchMemoryRequest, not str"),
        (lambda m: m.search_batch("alpha"), "search_batch takes a list of SearchMemoryRequest"),
        (lambda m: m.search_batch([{"query": "alpha"}]), "SearchMemoryRequest, not dict"),
        (lambda m: m.search_batch([REQUEST, "beta"]), "SearchMemoryRequest, not str"),
        (lambda m: m.search_batch(REQUEST), "list of SearchMemoryRequest, not SearchMemoryReq"),
        (lambda m: m.remember("text"), "remember takes a RememberMemoryRequest, not str"),
        (lambda m: m.remember({"text": "t"}), "RememberMemoryRequest, not dict"),
        (lambda m: m.remember_many("text"), "remember_many takes a list of RememberMemory"),
        (lambda m: m.remember_many(["text"]), "RememberMemoryRequest, not str"),
        (lambda m: m.revise("x"), "revise takes a ReviseMemoryRequest, not str"),
        (lambda m: m.retire("x"), "retire takes a RetireMemoryRequest, not str"),
        (lambda m: m.reactivate("x"), "reactivate takes a ReactivateMemoryRequest, not str"),
        (lambda m: m.get("cit"), "get takes a MemoryCitation, not str"),
    ],
)
async def test_a_wrong_argument_type_is_the_sdks_type_error(
    runtime: Runtime, call: Callable[[ScopedMemory], Any], message: str
) -> None:
    with pytest.raises(TypeError, match=message):
        await call(runtime.memory.for_scope("s"))
    # the runtime still answers afterwards
    page = await runtime.memory.for_scope("s").search(REQUEST)
    assert [hit.text for hit in page.hits] == ["alpha beta"]


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"query": ""}, "query"),
        ({"query": " \t\u3000"}, "query"),
        ({"query": "a\x00"}, "query"),
        ({"query": "x" * 8193}, "query"),
        ({"query": "\u6771" * 2731}, "query"),  # 8193 UTF-8 bytes in 2731 characters
        ({"query": "a", "limit": 0}, "limit"),
        ({"query": "a", "limit": 101}, "limit"),
        ({"query": "a", "limit": "5"}, "limit"),
        ({"query": "a", "mode": "semantic"}, "mode"),
        ({"query": "a", "revision": 0}, "revision"),
        ({"query": "a", "min_similarity": 1.5}, "min_similarity"),
        ({"query": "a", "min_score": float("nan")}, "min_score"),
        ({"query": "a", "filter": {"kinds": []}}, "filter"),
    ],
)
def test_a_bad_value_is_a_validation_error_naming_the_field(
    fields: dict[str, Any], field: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        SearchMemoryRequest(**fields)
    assert {str(error["loc"][0]) for error in caught.value.errors()} == {field}


async def test_the_documented_maxima_are_accepted(runtime: Runtime) -> None:
    memory = runtime.memory.for_scope("s")
    for query in ("x" * 8192, "\u6771" * 2730, "alpha " + "z" * 8186):
        page = await memory.search(SearchMemoryRequest(query=query, limit=100))
        assert page.memory_ref is not None
    page = await memory.search(SearchMemoryRequest(query="alpha " + "z" * 8186, mode="fts"))
    assert [hit.text for hit in page.hits] == ["alpha beta"]


async def test_an_unknown_scope_is_an_empty_page_and_its_revisions_are_not_found(
    runtime: Runtime,
) -> None:
    memory = runtime.memory.for_scope("never-written")
    for mode in ("auto", "fts", "vector", "hybrid"):
        page = await memory.search(SearchMemoryRequest(query="alpha", mode=mode))
        assert page.memory_ref is None
        assert page.hits == ()
    with pytest.raises(NotFoundError, match="has no revision 1"):
        await memory.search(SearchMemoryRequest(query="alpha", revision=1))
    with pytest.raises(NotFoundError, match="has no revision 2"):
        await runtime.memory.for_scope("s").search(SearchMemoryRequest(query="a", revision=2))


async def test_vector_search_without_an_embedder_names_the_missing_model(tmp_path: Path) -> None:
    async with open_runtime(sqlite_settings(tmp_path, "none")) as opened:
        memory = opened.memory.for_scope("s")
        await memory.remember(RememberMemoryRequest(text="alpha beta"))
        page = await memory.search(SearchMemoryRequest(query="alpha"))
        assert page.mode == "fts"
        assert [hit.text for hit in page.hits] == ["alpha beta"]
        for mode in ("vector", "hybrid"):
            with pytest.raises(CapabilityNotSupportedError, match="needs an embedding model"):
                await memory.search(SearchMemoryRequest(query="alpha", mode=mode))
