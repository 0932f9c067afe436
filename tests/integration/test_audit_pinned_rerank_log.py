"""Names the rerank issues pin on the log line and the trace, by their exact spelling.

#3 asks for one structured log line per rerank carrying the policy, the candidate, selected
and discarded counts, the fallback, the latency and the tokens, and never the query or memory
text; log pipelines key on those field names. #9 names the endpoint adapter's policy id
`powercontext.memory.rerank.scored.v1`. Other tests count the lines and check that nothing
leaks; these pin the field names and values.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from powercontext import open_runtime
from powercontext.config import RuntimeConfig
from powercontext.memory import (
    InferenceUsage,
    MemoryRerankTrace,
    RememberMemoryRequest,
    SearchMemoryRequest,
)
from powercontext.server.logs import JsonFormatter
from powercontext.testing import FakeRerankEndpoint, ScriptedReranker
from tests.runtime_settings import sqlite_settings

LOGGER = "powercontext.memory.rerank"
QUERY = "zq4query deploy"
TEXTS = ["zq4text deploy friday", "zq4text deploy approval", "zq4text lunch deploy"]
# The fields #3 lists, as the log line spells them.
PINNED_FIELDS = {
    "policy_id": "test.pinned.v1",
    "candidate_count": 3,
    "selected_count": 2,
    "discarded_count": 2,
    "used_fallback": False,
    "input_tokens": 11,
    "output_tokens": 4,
}


async def test_one_rerank_log_line_carries_the_pinned_fields(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    usage = InferenceUsage(requests=1, input_tokens=11, output_tokens=4)
    reranker = ScriptedReranker([2, 2, 99, 1], usage=usage, policy_id="test.pinned.v1")
    settings = sqlite_settings(tmp_path, "hash")
    async with open_runtime(settings, memory_reranker=reranker) as runtime:
        memory = runtime.memory.for_scope("pinned")
        await memory.remember_many([RememberMemoryRequest(kind="fact", text=t) for t in TEXTS])
        with caplog.at_level(logging.INFO, logger=LOGGER):
            page = await memory.search(SearchMemoryRequest(query=QUERY, limit=3, mode="fts"))
    assert isinstance(page.rerank, MemoryRerankTrace)
    assert page.rerank.selected_ranks == (2, 1)
    (record,) = [r for r in caplog.records if r.name == LOGGER]
    for field, value in PINNED_FIELDS.items():
        assert getattr(record, field) == value, field
    assert isinstance(record.latency_ms, float) and record.latency_ms >= 0
    line = json.loads(JsonFormatter().format(record))
    assert {**PINNED_FIELDS, "latency_ms": record.latency_ms}.items() <= line.items()
    assert "zq4" not in json.dumps(line)  # neither the query nor any memory text


async def test_the_endpoint_adapter_policy_id_is_the_pinned_one(tmp_path: Path) -> None:
    with FakeRerankEndpoint() as endpoint:
        settings = sqlite_settings(tmp_path, "hash")
        settings.runtime = RuntimeConfig(
            memory_rerank_enabled=True,
            memory_rerank_provider="endpoint",
            memory_rerank_endpoint_url=endpoint.url,
            vector_backfill_interval_seconds=0,
        )
        async with open_runtime(settings) as runtime:
            memory = runtime.memory.for_scope("pinned")
            await memory.remember_many([RememberMemoryRequest(text=t) for t in TEXTS])
            page = await memory.search(SearchMemoryRequest(query="deploy friday", limit=2))
    assert page.rerank is not None
    assert page.rerank.policy_id == "powercontext.memory.rerank.scored.v1"
    assert page.rerank.usage.documents == 3 and page.rerank.usage.input_tokens is None
