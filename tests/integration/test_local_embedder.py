"""The real offline MiniLM: loaded once per module from the installed `local` extra."""

from __future__ import annotations

import asyncio
import shutil
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from powercontext.inference.embeddings import LocalMiniLM, ModelFiles, packaged_minilm_files
from powercontext.memory.errors import ConfigurationError
from powercontext.memory.ports import EmbeddingModel

QUERY = "What did Caroline do at the LGBTQ support group?"
SIMILAR = "Caroline went to an LGBTQ support group meeting on Sunday."
UNRELATED = "The quarterly earnings report showed a rise in semiconductor sales."


async def _first_use_from_many_tasks(model: LocalMiniLM) -> list[list[float]]:
    return list(await asyncio.gather(*(model.embed_query(QUERY) for _ in range(4))))


@pytest.fixture(scope="module")
def first_use() -> tuple[LocalMiniLM, list[list[float]]]:
    model = LocalMiniLM()
    assert not model.loaded
    # Lazy loading is not bound to an event loop, so one load serves every test's loop.
    vectors = asyncio.run(_first_use_from_many_tasks(model))
    assert model.loaded
    return model, vectors


@pytest.fixture
def model(first_use: tuple[LocalMiniLM, list[list[float]]]) -> LocalMiniLM:
    return first_use[0]


def _words(count: int, vocabulary: list[str]) -> str:
    return " ".join(vocabulary[i % len(vocabulary)] for i in range(count))


def test_concurrent_first_use_agrees(
    first_use: tuple[LocalMiniLM, list[list[float]]],
) -> None:
    _, vectors = first_use
    assert all(np.array_equal(vectors[0], vector) for vector in vectors[1:])


async def test_profile_dimension_and_unit_norm(model: LocalMiniLM) -> None:
    assert isinstance(model, EmbeddingModel)
    assert model.profile.profile_id == "local:all-minilm-l6-v2@int8-onnx-8199be6f"
    assert model.profile.dimension == 384
    assert model.profile.normalization == "unit"
    vectors = await model.embed_documents([QUERY, SIMILAR, UNRELATED, "", "東京で寿司を食べた"])
    for vector in vectors:
        assert len(vector) == 384
        assert np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-5)


async def test_similar_sentences_score_higher_than_unrelated(model: LocalMiniLM) -> None:
    query = np.asarray(await model.embed_query(QUERY))
    similar, unrelated = np.asarray(await model.embed_documents([SIMILAR, UNRELATED]))
    assert query @ similar > 0.5
    assert query @ similar > query @ unrelated + 0.3
    # Semantic, not lexical: no shared content word, still close.
    car, automobile, banana = np.asarray(
        await model.embed_documents(
            ["I bought a new car.", "I purchased an automobile.", "ripe banana"]
        )
    )
    assert car @ automobile > car @ banana + 0.2


async def test_empty_list_gives_empty_result(model: LocalMiniLM) -> None:
    assert await model.embed_documents([]) == []
    with pytest.raises(TypeError):
        await model.embed_documents("one string")


async def test_batches_equal_single_texts_in_callers_order(model: LocalMiniLM) -> None:
    vocabulary = "we hiked up the hill and talked about music painting school and family".split()
    # More texts than one internal batch, in an order length-sorting must undo.
    texts = [_words(3 + (i * 7) % 40, vocabulary[i % 5 :]) + f" {i}" for i in range(45)]
    batch = np.asarray(await model.embed_documents(texts))
    assert batch.shape == (45, 384)
    for index in (0, 1, 17, 31, 32, 44):
        single = np.asarray(await model.embed_query(texts[index]))
        assert np.max(np.abs(batch[index] - single)) < 1e-5


async def test_long_text_truncates_at_256_tokens_not_128(model: LocalMiniLM) -> None:
    vocabulary = "river mountain forest city ocean desert valley island".split()
    head = _words(200, vocabulary)  # about 200 tokens
    tail_a = _words(100, ["violin", "guitar", "piano"])
    tail_b = _words(400, ["tax", "invoice", "audit"])
    # Both texts exceed 256 tokens (about 300 and 600); they share their first 200.
    a, b = np.asarray(await model.embed_documents([f"{head} {tail_a}", f"{head} {tail_b}"]))
    # Tokens 200..255 differ, so a 256-token window sees the difference (128 would not)...
    assert not np.allclose(a, b, atol=1e-3)
    # ...and anything past token 256 is cut: a different far tail changes nothing.
    c = np.asarray(await model.embed_query(f"{head} {tail_a} {tail_b}"))
    assert np.max(np.abs(a - c)) < 1e-5
    assert np.linalg.norm(a) == pytest.approx(1.0, abs=1e-5)


async def test_inference_never_blocks_the_event_loop(model: LocalMiniLM) -> None:
    texts = [f"Melanie told Caroline about her pottery class number {i}." for i in range(96)]
    gaps: list[float] = []
    done = asyncio.Event()

    async def ticker() -> None:
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(0.005)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    tick = asyncio.create_task(ticker())
    started = time.perf_counter()
    await model.embed_documents(texts)
    elapsed = time.perf_counter() - started
    done.set()
    await tick
    assert len(gaps) >= 3, f"the loop ran {len(gaps)} ticks during {elapsed:.3f}s of inference"
    assert max(gaps) < max(0.25, elapsed / 2)


def _corrupt_copy(source: Path, target: Path) -> Path:
    shutil.copyfile(source, target)
    with target.open("r+b") as stream:
        stream.seek(target.stat().st_size // 2)
        byte = stream.read(1)
        stream.seek(-1, 1)
        stream.write(bytes([byte[0] ^ 0x01]))
    return target


async def test_corrupted_model_file_is_refused(tmp_path: Path) -> None:
    packaged = packaged_minilm_files()
    files = replace(packaged, model=_corrupt_copy(packaged.model, tmp_path / "model.onnx"))
    corrupted = LocalMiniLM(files)
    with pytest.raises(ConfigurationError) as caught:
        await corrupted.embed_query(QUERY)
    assert "sha256" in str(caught.value)
    assert packaged.model_sha256 in str(caught.value)
    assert not corrupted.loaded


async def test_corrupted_tokenizer_file_is_refused(tmp_path: Path) -> None:
    packaged = packaged_minilm_files()
    files = ModelFiles(
        model=packaged.model,
        tokenizer=_corrupt_copy(packaged.tokenizer, tmp_path / "tokenizer.json"),
    )
    with pytest.raises(ConfigurationError, match="tokenizer"):
        await LocalMiniLM(files).warm_up()


def test_a_different_pinned_file_changes_the_profile() -> None:
    packaged = packaged_minilm_files()
    other = LocalMiniLM(replace(packaged, model_sha256="0123abcd" + "0" * 56))
    assert other.profile.profile_id == "local:all-minilm-l6-v2@int8-onnx-0123abcd"
    assert not other.loaded


def test_missing_runtime_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tokenizers", None)
    with pytest.raises(ConfigurationError, match=r"pip install 'powercontext-memory\[local\]'"):
        LocalMiniLM(packaged_minilm_files())
