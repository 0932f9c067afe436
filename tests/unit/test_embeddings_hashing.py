"""HashingEmbedder: deterministic, unit-norm, lexical feature hashing."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from powercontext.inference.embeddings import HashingEmbedder
from powercontext.memory.ports import EmbeddingModel


def _cosine(a: list[float], b: list[float]) -> float:
    return float(np.dot(a, b))


async def test_satisfies_the_port_and_names_its_profile() -> None:
    embedder = HashingEmbedder(128)
    assert isinstance(embedder, EmbeddingModel)
    assert embedder.profile.profile_id == "hash:128"
    assert embedder.profile.dimension == 128
    assert embedder.profile.normalization == "unit"
    assert HashingEmbedder().profile.profile_id == "hash:384"


async def test_vectors_are_unit_norm_with_the_profile_dimension() -> None:
    embedder = HashingEmbedder()
    texts = ["Caroline went to the LGBTQ support group.", "", "!!! ???", "東京で寿司を食べた", "😀"]
    vectors = await embedder.embed_documents(texts)
    assert len(vectors) == len(texts)
    for vector in vectors:
        assert len(vector) == 384
        assert np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-6)


def test_deterministic_across_calls_instances_and_processes() -> None:
    text = "Melanie painted a sunrise over the lake last summer."
    first = HashingEmbedder().embed_sync([text])[0]
    assert np.array_equal(first, HashingEmbedder().embed_sync([text])[0])
    # A fresh interpreter has a different str hash seed; BLAKE2b buckets must not care.
    script = (
        "import json; from powercontext.inference.embeddings import HashingEmbedder; "
        f"print(json.dumps(HashingEmbedder().embed_sync([{text!r}])[0].tolist()))"
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        check=True,
        capture_output=True,
        text=True,
        env={"PYTHONHASHSEED": "12345"},
    )
    assert np.array_equal(np.asarray(json.loads(out.stdout), dtype=np.float32), first)


async def test_query_and_document_vectors_agree_and_batches_keep_order() -> None:
    embedder = HashingEmbedder()
    texts = [f"entry number {i} mentions topic{i % 7}" for i in range(150)]
    batch = await embedder.embed_documents(texts)
    for index in (0, 63, 64, 149):
        assert np.allclose(batch[index], await embedder.embed_query(texts[index]), atol=1e-7)


async def test_shared_tokens_score_higher_than_unrelated_text() -> None:
    embedder = HashingEmbedder()
    query = await embedder.embed_query("When did Caroline go hiking?")
    related = await embedder.embed_query("Caroline went hiking in the mountains")
    unrelated = await embedder.embed_query("Quarterly revenue beat analyst forecasts")
    assert _cosine(query, related) > _cosine(query, unrelated)
    # Stemming comes from the analyzer: inflections collide on purpose.
    a, b = await embedder.embed_documents(["running dogs", "dog runs"])
    assert _cosine(a, b) == pytest.approx(1.0, abs=1e-6)


async def test_it_is_lexical_not_semantic() -> None:
    embedder = HashingEmbedder()
    car, automobile = await embedder.embed_documents(["car", "automobile"])
    assert abs(_cosine(car, automobile)) < 0.3


async def test_empty_input_and_bad_arguments() -> None:
    embedder = HashingEmbedder()
    assert await embedder.embed_documents([]) == []
    with pytest.raises(TypeError):
        await embedder.embed_documents("not a list")
    for bad in (0, -1, 8193):
        with pytest.raises(ValueError):
            HashingEmbedder(bad)
