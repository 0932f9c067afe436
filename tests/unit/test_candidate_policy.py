"""The by-class candidate policy: query classes, per-class limits, and the trace."""

from __future__ import annotations

import pytest

from powercontext.config import ServerSettings
from powercontext.inference.embeddings.hashing import HashingEmbedder
from powercontext.memory.models import (
    RememberMemoryRequest,
    SearchMemoryRequest,
)
from powercontext.memory.search.analyze import AnalyzerConfig
from powercontext.memory.search.candidates import (
    BY_CLASS_POLICY_ID,
    DEFAULT_CLASS_LIMITS,
    FIXED_POLICY_ID,
    CandidatePolicy,
    classify_query,
)
from powercontext.memory.search.config import SearchConfig
from powercontext.memory.service import MemoryService
from powercontext.runtime import search_config
from powercontext.storage.sqlite import SqliteMemoryStore
from powercontext.testing import ScriptedReranker


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("How many children does Ana have?", "count"),
        ("How often do they meet?", "count"),
        ("When did the team ship the release?", "time"),
        ("What year was the house built?", "time"),
        ("Is the new plan better than the old one?", "comparison"),
        ("List the books Ben read", "list"),
        ("What are the hobbies of Mia?", "list"),
        ("Where does Mia work? Who is her manager?", "list"),
        ("Where does Mia work?", "one_fact"),
    ],
)
def test_english_classes(query: str, expected: str) -> None:
    assert classify_query(query) == expected


@pytest.mark.parametrize(
    ("query", "language", "expected"),
    [
        ("Wie viele Kinder hat Ana?", "german", "count"),
        ("Wann kam das Release?", "german", "time"),
        ("Combien d'enfants a Ana ?", "french", "count"),
        ("¿Cuándo salió la versión?", "spanish", "time"),
        # No cue words for Dutch: only the language-independent question-mark rule applies.
        ("Hoeveel kinderen heeft Ana?", "dutch", "one_fact"),
        ("Waar werkt Mia? Wie is haar baas?", "dutch", "list"),
        ("米娅在哪里工作？她的经理是谁？", "english", "list"),
    ],
)
def test_other_languages(query: str, language: str, expected: str) -> None:
    assert classify_query(query, AnalyzerConfig(language=language)) == expected


def test_fixed_policy_keeps_the_configured_limit() -> None:
    choice = CandidatePolicy().choose("How many?", AnalyzerConfig(), 30)
    assert (choice.policy_id, choice.candidate_limit, choice.query_class) == (
        FIXED_POLICY_ID,
        30,
        None,
    )


def test_by_class_policy_uses_the_table_with_defaults() -> None:
    policy = CandidatePolicy(name="by_class", class_limits={"count": 7})
    count = policy.choose("How many cats?", AnalyzerConfig(), 30)
    when = policy.choose("When was it?", AnalyzerConfig(), 30)
    assert (count.policy_id, count.query_class, count.candidate_limit) == (
        BY_CLASS_POLICY_ID,
        "count",
        7,
    )
    assert (when.query_class, when.candidate_limit) == ("time", DEFAULT_CLASS_LIMITS["time"])


def test_settings_table_reads_json_and_rejects_unknown_classes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("POWERCONTEXT_SERVER_RUNTIME_MEMORY_RERANK_CANDIDATE_POLICY", "by_class")
    monkeypatch.setenv(
        "POWERCONTEXT_SERVER_RUNTIME_MEMORY_RERANK_CANDIDATE_LIMITS_BY_CLASS", '{"list": 80}'
    )
    config = search_config(ServerSettings())
    assert config.candidates.name == "by_class"
    assert config.candidates.class_limits == {**DEFAULT_CLASS_LIMITS, "list": 80}
    monkeypatch.setenv(
        "POWERCONTEXT_SERVER_RUNTIME_MEMORY_RERANK_CANDIDATE_LIMITS_BY_CLASS", '{"lists": 80}'
    )
    with pytest.raises(Exception, match="unknown query classes"):
        ServerSettings()


async def test_trace_records_class_and_limit_and_the_pool_follows_it() -> None:
    store = await SqliteMemoryStore.open(":memory:")
    policy = CandidatePolicy(name="by_class", class_limits={"count": 4, "one_fact": 2})
    service = MemoryService(
        store,
        embedder=HashingEmbedder(64),
        reranker=ScriptedReranker(),
        config=SearchConfig(candidates=policy),
    )
    await service.remember_many(
        "s", [RememberMemoryRequest(text=f"cat number {i} sleeps") for i in range(10)]
    )
    count = await service.search("s", SearchMemoryRequest(query="how many cats sleep", limit=1))
    fact = await service.search("s", SearchMemoryRequest(query="which cat sleeps", limit=1))
    await store.close()
    assert count.rerank is not None and fact.rerank is not None
    assert (count.rerank.query_class, count.rerank.candidate_limit) == ("count", 4)
    assert len(count.rerank.candidate_hits) == 4
    assert (fact.rerank.query_class, fact.rerank.candidate_limit) == ("one_fact", 2)
    assert len(fact.rerank.candidate_hits) == 2
    assert count.rerank.candidate_policy_id == BY_CLASS_POLICY_ID
    redacted = count.rerank.redacted()
    assert (redacted.query_class, redacted.candidate_limit) == ("count", 4)


def test_v2_defaults_give_time_questions_the_smaller_pool() -> None:
    """by_class.v2's fitted table: a date question is answered from a small pool."""
    assert BY_CLASS_POLICY_ID.endswith(".by_class.v2")
    one_date = CandidatePolicy(name="by_class").choose("When did Ana move?", AnalyzerConfig(), 30)
    one_fact = CandidatePolicy(name="by_class").choose("Where does Ana live?", AnalyzerConfig(), 30)
    assert (one_date.candidate_limit, one_fact.candidate_limit) == (10, 20)
