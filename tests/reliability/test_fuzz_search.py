"""Arbitrary Unicode through validation, the analyzer and the FTS query path of a real store.

A search either returns a page or is refused with a pydantic ValidationError (building the
request) or a MemoryValidationError; nothing else may escape. Any text that is accepted is
stored exactly (in its normal form), resolves by citation, and is found by searching for it.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from powercontext import open_runtime
from powercontext.config import DatabaseConfig, InferenceConfig, ServerSettings
from powercontext.memory import MemoryValidationError, RememberMemoryRequest, SearchMemoryRequest
from powercontext.memory.search.analyze import query_terms
from powercontext.memory.values import normalize_text
from powercontext.runtime import Runtime
from tests import pg_server
from tests.integration.conftest import sqlite_settings

PUNCTUATION = "!?.,;:'\"*()^-+~`<>{}[]|\\/@#$%&=_"
every_code_point = st.characters(blacklist_categories=())
hostile = st.one_of(
    st.text(every_code_point, max_size=200),
    st.text(st.sampled_from(PUNCTUATION + " \t\n\x00"), min_size=1, max_size=9000),
    st.text(st.sampled_from('aé中😀\u200b\u0301\ufeff\ud800\x00 "*:-^'), max_size=50),
    st.builds(
        lambda parts: " ".join(parts),
        st.lists(st.sampled_from(["NEAR(", "OR", "AND", "NOT", "*", '"', "^", "col:", "a"])),
    ),
)
SEEDED = [
    "The deploy happens on Friday after review.",
    "Ελληνικά και русский текст with English words.",
    "中文检索和日本語のテキスト",
    "emoji 😀 party and naïve café",
    'quotes "inside" and NEAR(a b) syntax * ^',
]


class Store:
    """One runtime on a real store, kept open on its own event loop for a module."""

    def __init__(self, settings: ServerSettings) -> None:
        self.runner = asyncio.Runner()
        self._context = open_runtime(settings)
        self.runtime: Runtime = self.runner.run(self._context.__aenter__())
        memory = self.runtime.memory.for_scope("seeded")
        self.run(memory.remember_many([RememberMemoryRequest(text=t) for t in SEEDED]))

    def run(self, coroutine: Any) -> Any:
        return self.runner.run(coroutine)

    def close(self) -> None:
        self.runner.run(self._context.__aexit__(None, None, None))
        self.runner.close()


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    opened = Store(sqlite_settings(tmp_path_factory.mktemp("fuzz") / "fuzz.db"))
    yield opened
    opened.close()


@pytest.fixture(scope="module")
def pg_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    workdir = tmp_path_factory.mktemp("fuzz-pg")
    url = asyncio.run(pg_server.database_url(workdir))
    opened = Store(
        ServerSettings(
            database=DatabaseConfig(url=url), inference=InferenceConfig(embedding_model="none")
        )
    )
    yield opened
    opened.close()


OUTCOMES: dict[str, int] = {}
FUZZ = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
QUERY_EXAMPLES = [
    ("nul \x00 inside", 10),
    ("lone \ud800 surrogate", 10),
    ("\udfff", 1),
    ((PUNCTUATION * 300)[:8192], 100),
    ("." * 8193, 10),
    ("Ελληνικά русский 中文 العربية हिन्दी 😀 deploy", 10),
    ('NEAR("deploy" review) OR col:* AND -x ^y', 10),
    ("back\\slash 'quote' ''double'' :* & | ! <-> (a)", 10),
]
TEXT_EXAMPLES = [
    "Ελληνικά русский 中文 العربية हिन्दी 한국어 😀 ǅemal ß İstanbul",
    "ｆｕｌｌｗｉｄｔｈ ﬁ ﬀ Ⅻ ① ²  e\u0301 combining",
    "词" * 2730,
    " ".join(f"w{i}" for i in range(1600)),
    "back\\slash 'quote' ''double'' :* & | ! <-> (a)",
]


def with_examples(name: str, examples: list[Any]) -> Any:
    def apply(test: Any) -> Any:
        for case in examples:
            named = {"query": case[0], "limit": case[1]} if name == "query" else {"text": case}
            test = example(**named)(test)
        return test

    return apply


def check_query(store: Store, query: str, limit: int) -> None:
    memory = store.runtime.memory.for_scope("seeded")
    try:
        request = SearchMemoryRequest(query=query, limit=limit, mode="auto")
    except ValidationError:
        OUTCOMES["refused"] = OUTCOMES.get("refused", 0) + 1
        assert "\x00" in query or _unencodable(query) or _blank_or_long(query)
        return
    try:
        page = store.run(memory.search(request))
    except MemoryValidationError:
        OUTCOMES["refused by the service"] = OUTCOMES.get("refused by the service", 0) + 1
        return
    OUTCOMES["page"] = OUTCOMES.get("page", 0) + 1
    assert page.memory_ref is not None and len(page.hits) <= limit
    assert {hit.text for hit in page.hits} <= set(SEEDED)


def check_round_trip(store: Store, text: str) -> None:
    memory = store.runtime.memory.for_scope(f"round-trip-{uuid.uuid4().hex}")
    try:
        request = RememberMemoryRequest(text=text)
    except ValidationError:
        return
    written = store.run(memory.remember_many([request, RememberMemoryRequest(text="distractor")]))
    entry = written.entries[0]
    assert entry.text == normalize_text(text)
    resolved = store.run(memory.get(entry.citation))
    assert resolved is not None and resolved.text == entry.text
    page = store.run(memory.search(SearchMemoryRequest(query=text, limit=2, mode="fts")))
    if query_terms(entry.text):
        assert entry.entry_version_id in {hit.entry_version_id for hit in page.hits}
    else:  # nothing to match on (only punctuation, emoji, marks): an empty page, no error
        assert page.hits == ()


@settings(FUZZ, max_examples=400)
@given(query=hostile, limit=st.integers(min_value=1, max_value=100))
@with_examples("query", QUERY_EXAMPLES)
def test_any_query_gives_a_page_or_a_validation_error(store: Store, query: str, limit: int) -> None:
    check_query(store, query, limit)


@settings(FUZZ, max_examples=150)
@given(text=hostile)
@with_examples("text", TEXT_EXAMPLES)
def test_any_accepted_text_is_stored_exactly_and_found_by_itself(store: Store, text: str) -> None:
    check_round_trip(store, text)


@pytest.mark.postgres
@settings(FUZZ, max_examples=120)
@given(query=hostile, limit=st.integers(min_value=1, max_value=100))
@with_examples("query", QUERY_EXAMPLES)
def test_postgres_any_query_gives_a_page_or_a_validation_error(
    pg_store: Store, query: str, limit: int
) -> None:
    check_query(pg_store, query, limit)


@pytest.mark.postgres
@settings(FUZZ, max_examples=60)
@given(text=hostile)
@with_examples("text", TEXT_EXAMPLES)
def test_postgres_any_accepted_text_is_stored_exactly_and_found_by_itself(
    pg_store: Store, text: str
) -> None:
    check_round_trip(pg_store, text)


def _unencodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _blank_or_long(text: str) -> bool:
    normal = normalize_text(text)
    return not normal or len(normal.encode("utf-8")) > 8192


def test_both_outcomes_were_exercised() -> None:
    """The search property above saw pages and refusals (it ran before this test)."""
    assert OUTCOMES.get("page", 0) > 50 and OUTCOMES.get("refused", 0) > 5, OUTCOMES


@pytest.mark.parametrize(
    ("query", "status"),
    [
        ("nul \\u0000 inside", 422),
        ("lone \\ud800 surrogate", 422),
        ("reversed \\udc00\\ud800 pair", 422),
        ("." * 8193, 422),
        ((PUNCTUATION.replace('"', "").replace("\\", "") * 300)[:8192], 200),
        ("Ελληνικά русский 中文 😀 \\u00e9\\u0301", 200),
        ("a valid \\ud83d\\ude00 pair", 200),
    ],
)
def test_hostile_queries_over_http(bare_server: Any, query: str, status: int) -> None:
    # JSON escapes by hand: a lone surrogate is legal JSON text but not Unicode.
    body = '{"scope_id": "fuzz", "query": "' + query + '"}'
    with httpx.Client(base_url=bare_server.url, timeout=30) as client:
        client.post("/v1/memory/remember", json={"scope_id": "fuzz", "text": "seed text"})
        response = client.post(
            "/v1/memory/search", content=body, headers={"content-type": "application/json"}
        )
    assert response.status_code == status, response.text
    if status == 422:
        assert response.json()["error"]["code"] == "validation_error"
    else:
        assert set(response.json()) == {"memory_ref", "mode", "hits"}
