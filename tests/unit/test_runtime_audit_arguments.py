"""In process, a bad value is refused as HTTP refuses it (422 there): with the same bounds, as a
MemoryValidationError naming the argument (plain arguments) or a pydantic ValidationError
carrying the wire's message (request models); and `remember_many` takes 10,000 entries in one
revision, up to a configurable bound.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from powercontext import ServerSettings, open_runtime
from powercontext.config import DatabaseConfig, InferenceConfig, RuntimeConfig
from powercontext.memory import (
    ForgetMemoryRequest,
    MemoryValidationError,
    PayloadTooLargeError,
    RememberMemoryRequest,
    ScopedMemory,
    SearchMemoryRequest,
)

BEYOND_INT64 = 2**63


def _settings(tmp_path: Path, **runtime: int) -> ServerSettings:
    return ServerSettings(
        database=DatabaseConfig(url=f"sqlite:///{tmp_path / 'memory.db'}"),
        inference=InferenceConfig(embedding_model="none"),
        runtime=RuntimeConfig(vector_backfill_interval_seconds=0, **runtime),
    )


@pytest.fixture
async def memory(tmp_path: Path) -> AsyncIterator[ScopedMemory]:
    async with open_runtime(_settings(tmp_path)) as runtime:
        scoped = runtime.memory.for_scope("s")
        await scoped.remember(RememberMemoryRequest(text="one entry"))
        yield scoped


ARGUMENTS: list[tuple[str, Callable[[ScopedMemory], Awaitable[Any]], str]] = [
    ("get_entry revision 0", lambda m: m.get_entry("e", revision=0), "revision must be between"),
    (
        "get_entry revision > int64",
        lambda m: m.get_entry("e", revision=BEYOND_INT64),
        "revision must be between 1 and 9223372036854775807",
    ),
    ("get_entry NUL id", lambda m: m.get_entry("a\x00b"), "entry_id must be 1 to 128"),
    ("get_entry long id", lambda m: m.get_entry("e" * 129), "entry_id must be 1 to 128"),
    ("history blank id", lambda m: m.history(""), "entry_id must be 1 to 128"),
    ("list revision 0", lambda m: m.list(revision=0), "revision must be between"),
    ("list limit True", lambda m: m.list(limit=True), "limit must be an integer, not bool"),
    ("export revision 0", lambda m: m.export(revision=0), "revision must be between"),
    (
        "changes since > int64",
        lambda m: m.changes(BEYOND_INT64),
        "since_revision must be between 0 and 9223372036854775807",
    ),
    ("changes since -1", lambda m: m.changes(-1), "since_revision must be between 0"),
    ("changes limit 0", lambda m: m.changes(limit=0), "limit must be between 1 and 10000"),
    ("forget blank id", lambda m: m.forget(""), "entry_id must be 1 to 128"),
    ("forget NUL id", lambda m: m.forget("\x00"), "entry_id must be 1 to 128"),
]


@pytest.mark.parametrize(("label", "call", "message"), ARGUMENTS, ids=[a[0] for a in ARGUMENTS])
async def test_a_bad_argument_is_a_validation_error_naming_it(
    memory: ScopedMemory,
    label: str,
    call: Callable[[ScopedMemory], Awaitable[Any]],
    message: str,
) -> None:
    with pytest.raises(MemoryValidationError) as caught:
        await call(memory)
    assert message in str(caught.value)


REQUESTS: list[tuple[Callable[[], object], str]] = [
    (lambda: RememberMemoryRequest(text=" "), "text must not be blank"),
    (lambda: RememberMemoryRequest(text="a\x00"), "text must not contain NUL characters"),
    (lambda: RememberMemoryRequest(text="a" * 8193), "at most 8192 are allowed"),
    (lambda: RememberMemoryRequest(text="a", metadata={"x": "y" * 16_384}), "at most 16384"),
    (lambda: RememberMemoryRequest(text="a", metadata={"x": float("nan")}), "not JSON compliant"),
    (lambda: RememberMemoryRequest(text="a", thread=" "), "thread must not be blank"),
    (lambda: SearchMemoryRequest(query="a", limit=0), "greater than or equal to 1"),
    (lambda: SearchMemoryRequest(query="a", limit=101), "less than or equal to 100"),
    (lambda: SearchMemoryRequest(query="a", mode="bm25"), "'auto', 'fts', 'vector' or 'hybrid'"),  # type: ignore[arg-type]
    (
        lambda: SearchMemoryRequest(query="a", revision=BEYOND_INT64),
        "less than or equal to 9223372036854775807",
    ),
    (
        lambda: RememberMemoryRequest(text="a", expected_revision=BEYOND_INT64),
        "less than or equal to 9223372036854775807",
    ),
    (lambda: ForgetMemoryRequest(entry_ids=("a\x00",)), "must not contain NUL"),
]


@pytest.mark.parametrize(("build", "message"), REQUESTS)
def test_a_bad_request_field_is_refused_with_the_wire_message(
    build: Callable[[], object], message: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        build()
    assert message in str(caught.value)


def test_a_naive_occurred_at_is_read_as_utc_as_on_the_wire() -> None:
    request = RememberMemoryRequest(text="a", occurred_at=datetime(2023, 5, 8, 13, 56))
    assert request.occurred_at == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


async def test_remember_many_takes_ten_thousand_entries_in_one_revision(tmp_path: Path) -> None:
    entries = [RememberMemoryRequest(text=f"entry {i}") for i in range(10_000)]
    async with open_runtime(_settings(tmp_path)) as runtime:
        memory = runtime.memory.for_scope("s")
        written = await memory.remember_many(entries)
        head = await memory.head()
    assert written.memory_ref.revision == 1 and len(written.entries) == 10_000
    assert head is not None and head.revision == 1


async def test_remember_many_beyond_the_configured_bound_names_the_setting(
    tmp_path: Path,
) -> None:
    async with open_runtime(_settings(tmp_path, max_batch_entries=3)) as runtime:
        memory = runtime.memory.for_scope("s")
        with pytest.raises(PayloadTooLargeError) as caught:
            await memory.remember_many([RememberMemoryRequest(text="x")] * 4)
        assert await memory.head() is None
    assert str(caught.value) == (
        "batch of 4 entries exceeds the bound of 3 (POWERCONTEXT_SERVER_RUNTIME_MAX_BATCH_ENTRIES)"
    )
