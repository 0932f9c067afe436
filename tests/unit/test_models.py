import pytest
from pydantic import ValidationError

from powercontext.memory import RememberMemoryRequest, SearchMemoryRequest
from powercontext.memory.filters import MemoryFilter
from powercontext.memory.transfer import NewEntry
from powercontext.memory.values import MAX_METADATA_DEPTH


def test_query_is_nfc_and_stripped() -> None:
    assert SearchMemoryRequest(query="  cafe\u0301 ").query == "caf\u00e9"


@pytest.mark.parametrize("query", ["", "   ", "\x00", "a\x00b", "x" * 8193, "\ud800"])
def test_bad_queries_are_rejected_clearly(query: str) -> None:
    with pytest.raises(ValidationError):
        SearchMemoryRequest(query=query)


def test_query_bound_is_in_utf8_bytes() -> None:
    SearchMemoryRequest(query="é" * 4096)  # 8192 bytes
    with pytest.raises(ValidationError, match="UTF-8 bytes"):
        SearchMemoryRequest(query="é" * 4097)


@pytest.mark.parametrize("limit", [0, 101])
def test_limit_bounds(limit: int) -> None:
    with pytest.raises(ValidationError):
        SearchMemoryRequest(query="q", limit=limit)


def test_text_and_metadata_bounds() -> None:
    with pytest.raises(ValidationError):
        RememberMemoryRequest(text="x" * 8193)
    with pytest.raises(ValidationError, match="metadata"):
        RememberMemoryRequest(text="x", metadata={"k": "v" * 20000})
    with pytest.raises(ValidationError, match="JSON"):
        RememberMemoryRequest(text="x", metadata={"k": float("nan")})


def test_emoji_and_cjk_are_fine() -> None:
    assert RememberMemoryRequest(text="🎉 中文").text == "🎉 中文"


@pytest.mark.parametrize(
    "metadata",
    [{"k": "a\x00b"}, {"a\x00b": 1}, {"k": [{"deep": "\x00"}]}, {"k": "\ud800"}, {"\udfff": 1}],
)
def test_metadata_strings_are_checked_one_by_one(metadata: dict[str, object]) -> None:
    # JSON text escapes NUL as \u0000, so a check of the encoded whole never saw one.
    with pytest.raises(ValidationError, match=r"metadata.*(NUL|surrogates)"):
        RememberMemoryRequest(text="x", metadata=metadata)


def test_a_reason_holding_nul_is_refused() -> None:
    with pytest.raises(ValidationError, match="reason must not contain NUL"):
        RememberMemoryRequest(text="x", reason="a\x00b")
    assert RememberMemoryRequest(text="x", reason="why: \\u0000 typed").reason is not None


@pytest.mark.parametrize("when", ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00"])
def test_an_event_time_outside_the_calendar_in_utc_is_a_validation_error(when: str) -> None:
    # astimezone raises OverflowError there, which pydantic would not turn into a 422.
    with pytest.raises(ValidationError, match="occurred_at is outside the years 1-9999"):
        RememberMemoryRequest(text="x", occurred_at=when)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="a filter time is outside"):
        MemoryFilter.model_validate({"occurred_before": when})


def test_metadata_nesting_is_bounded_everywhere_it_is_taken() -> None:
    deep: object = "leaf"
    for _ in range(MAX_METADATA_DEPTH - 1):  # the metadata object is the first level
        deep = [deep]
    assert RememberMemoryRequest(text="x", metadata={"k": deep}).metadata["k"] == deep
    for made in (
        lambda: RememberMemoryRequest(text="x", metadata={"k": [deep]}),
        lambda: NewEntry(entry_id="e1", text="x", metadata={"k": [deep]}),
    ):
        with pytest.raises(ValidationError, match="more than 100 levels deep"):
            made()
