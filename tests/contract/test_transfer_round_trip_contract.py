"""Contract: an export imported elsewhere gives back what went in, on every backend, and a
bad export is refused with the line and field named, leaving the target as it was.

What an import deliberately does not keep: `created_at` (the import's own write time),
`version` and entry_version_id (an import writes version 1 of a new entry), history and
retired entries (an export is the scope at one revision), and the offset of `occurred_at`
(stored in UTC: the same instant)."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from powercontext.memory.errors import (
    ErasedError,
    MemoryValidationError,
    PayloadTooLargeError,
    RevisionConflictError,
)
from powercontext.memory.models import (
    ReactivateMemoryRequest,
    RememberMemoryRequest,
    RetireMemoryRequest,
    ReviseMemoryRequest,
)
from powercontext.memory.ports import MemoryStore
from powercontext.memory.scoped import ScopedMemory
from powercontext.memory.service import MemoryService
from powercontext.memory.transfer import FORMAT
from powercontext.memory.transfer_lines import MAX_LINE_BYTES, split_lines, text_lines

TEXTS = [
    "emoji 😀 👩‍👩‍👧 and 𝄞 from plane 1",
    "CJK 漢字 かな 한국어 and 𠀋 from plane 2",
    "combining a\u0301 and o\u0308\u0332",
    "RTL שלום עולם and مرحبا",
    "plane 14 \U000e0041 and 16 \U00100000, a line\u2028separator, NEL\x85, para\u2029end",
]
METADATA: dict[str, Any] = {
    "nested": {"list": [1, {"deep": [None, True]}], "empty": {}},
    "empty_list": [],
    "tenth": 0.1,
    "huge": 1e300,
    "minus_zero": -0.0,
    "max_int": 2**63 - 1,
    "min_int": -(2**63),
    "yes": True,
    "no": False,
    "nothing": None,
    "blank": "",
    "unicode ключ 😀": "значение",
}
INDIA = timezone(timedelta(hours=5, minutes=30))


def _header(entry_count: int) -> str:
    return json.dumps(
        {"format": FORMAT, "version": 1, "scope_id": "x", "revision": 1}
        | {"entry_count": entry_count, "exported_at": "2024-01-01T00:00:00Z"}
    )


def _entry(entry_id: str, **fields: Any) -> str:
    return json.dumps({"entry_id": entry_id, "text": f"note {entry_id}"} | fields)


async def _lines(memory: ScopedMemory, revision: int | None = None) -> list[str]:
    return [line async for line in memory.export_lines(revision=revision)]


def _kept(lines: list[str]) -> list[dict[str, Any]]:
    """The lines without what an import does not keep."""
    dropped = {"created_at", "version", "revision", "exported_at", "scope_id"}
    return [{k: v for k, v in json.loads(line).items() if k not in dropped} for line in lines]


async def _rich_scope(memory: ScopedMemory) -> list[str]:
    """A scope written every way an entry can be; the ids of the entries it still holds."""
    written = await memory.remember_many(
        [
            RememberMemoryRequest(
                kind=f"kind-{i}",
                text=text,
                metadata=METADATA,
                thread="thread ✓",
                occurred_at=datetime(2020, 2, 29, 23, 59, 59, 999_990 + i, tzinfo=INDIA),
            )
            for i, text in enumerate(TEXTS)
        ]
    )
    cited = [entry.citation for entry in written.entries]
    revised = await memory.revise(ReviseMemoryRequest(citation=cited[0], text="revised once"))
    again = ReviseMemoryRequest(citation=revised.citations[0], text="twice", metadata={"v": 2})
    await memory.revise(again)
    await memory.retire(RetireMemoryRequest(citation=cited[1]))
    await memory.reactivate(ReactivateMemoryRequest(citation=cited[1]))
    await memory.retire(RetireMemoryRequest(citation=cited[2]))
    await memory.forget(written.entries[3].entry_id)
    return [written.entries[i].entry_id for i in (4, 0, 1)]


async def test_what_comes_back_equals_what_went_in(store: MemoryStore) -> None:
    service = MemoryService(store)
    source, target = service.for_scope("src"), service.for_scope("dst")
    held = await _rich_scope(source)
    lines = await _lines(source)
    assert [json.loads(line)["entry_id"] for line in lines[1:]] == held, "erased: not exported"

    result = await target.import_lines(lines)
    assert (result.added, result.revisions) == (3, 1)
    assert _kept(await _lines(target)) == _kept(lines)
    fields = ("entry_id", "kind", "text", "metadata", "thread", "occurred_at")
    before, after = (await source.list()).entries, (await target.list()).entries
    assert [e.model_dump(include=set(fields)) for e in after] == [
        e.model_dump(include=set(fields)) for e in before
    ]
    assert after[0].metadata == METADATA and after[0].text == TEXTS[4]
    assert after[1].occurred_at == datetime(2020, 2, 29, 18, 29, 59, 999_990, tzinfo=UTC)
    older = await _lines(source, revision=1)
    assert len(older) == 5, "as of revision 1: every entry but the erased one"
    assert json.loads(older[1])["text"] == TEXTS[0]


async def test_an_import_never_brings_an_erased_entry_back(store: MemoryStore) -> None:
    memory = MemoryService(store).for_scope("src")
    written = await memory.remember_many(
        [RememberMemoryRequest(text=f"note {i}") for i in range(3)]
    )
    backup = await _lines(memory)
    gone = written.entries[1].entry_id
    await memory.forget(gone)
    head = await memory.head()
    for policy in ("fail", "replace"):
        with pytest.raises(RevisionConflictError, match=f"{gone!r} was erased"):
            await memory.import_lines(backup, on_existing=policy)
        assert await memory.head() == head
    skipped = await memory.import_lines(backup, on_existing="skip")
    assert (skipped.added, skipped.skipped, skipped.revisions) == (0, 3, 0)
    with pytest.raises(ErasedError):
        await memory.get_entry(gone)


async def test_a_truncated_or_overlong_export_is_refused(store: MemoryStore) -> None:
    memory = MemoryService(store).for_scope("dst")
    entries = [_entry(f"e{i}") for i in range(3)]
    with pytest.raises(MemoryValidationError, match="ends after 2 of the 3 entries"):
        await memory.import_lines([_header(3), *entries[:2]])
    with pytest.raises(MemoryValidationError, match="line 3: the header announced 1"):
        await memory.import_lines([_header(1), *entries[:2]])
    assert await memory.head() is None, "nothing of a short export is written"
    assert (await memory.import_lines([_header(0)])).memory_ref is None, "an empty scope"


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ([_header(1), '{"entry_id": "a"}'], "line 2: text: Field required"),
        ([_header(1), _entry("a", kind=5)], "line 2: kind: Input should be a valid string"),
        ([_header(1), _entry("a", occurred_at="soon")], "line 2: occurred_at: "),
        ([_header(1), _entry("a", metadata={"k": "\u0000"})], "line 2: metadata: .*NUL"),
        ([_header(1), "[1, 2]"], "line 2: Input should be a valid dictionary"),
        ([_header(1), '{"entry_id": "a", "te'], "line 2: not JSON"),
        (['{"format": "powercontext.memory.export", "version": 1}'], "line 1: scope_id: "),
        (['{"format": "powercontext.memory.export", "version": 2}'], "line 1: .*version 2"),
        (['{"format": "powercontext.memory.export", "version": "1"}'], "version '1'"),
    ],
)
async def test_errors_name_the_line_and_the_field(
    store: MemoryStore, lines: list[str], message: str
) -> None:
    memory = MemoryService(store).for_scope("dst")
    with pytest.raises(MemoryValidationError, match=message):
        await memory.import_lines(lines)
    assert await memory.head() is None


async def test_a_bom_crlf_and_no_trailing_newline_are_read(store: MemoryStore) -> None:
    text = "\ufeff" + _header(2) + "\r\n" + _entry("a") + "\r\n\r\n" + _entry("b")

    async def chunks() -> Any:
        data = text.encode("utf-8")
        for start in range(0, len(data), 5):
            yield data[start : start + 5]

    service = MemoryService(store)
    streamed = await service.for_scope("http").import_lines(split_lines(chunks()))
    read = await service.for_scope("file").import_lines(text_lines(io.StringIO(text)))
    assert streamed.added == read.added == 2


class _BoundedReadsOnly(io.StringIO):
    """A file that fails any read of a whole line: one without newlines could be gigabytes."""

    def __iter__(self) -> Any:
        raise AssertionError("an unbounded line read")

    def readline(self, size: int | None = -1, /) -> str:  # type: ignore[override]
        assert size is not None and 0 < size <= MAX_LINE_BYTES + 2, "an unbounded line read"
        return super().readline(size)


def test_a_file_is_read_a_bounded_line_at_a_time() -> None:
    handle = _BoundedReadsOnly(_header(1) + "\n" + "x" * (3 * MAX_LINE_BYTES))
    lines = text_lines(handle)
    assert next(lines) == _header(1) + "\n"
    with pytest.raises(PayloadTooLargeError, match="line 2 exceeds"):
        next(lines)
    assert handle.tell() <= 2 * MAX_LINE_BYTES, "the rest of the long line was never read"
