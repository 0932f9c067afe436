"""How an import's batch is indexed: new entries join their thread, replacements stand alone."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from powercontext.memory.indexing.context import embedding_inputs
from powercontext.memory.indexing.threads import WriteIndex, source_of
from powercontext.memory.ports import StoredVersion

if TYPE_CHECKING:
    from powercontext.memory.service import MemoryService
    from powercontext.memory.transfer import NewEntry


async def index_import(
    service: MemoryService,
    scope_id: str,
    kept: Sequence[NewEntry],
    heads: Mapping[str, StoredVersion],
) -> tuple[WriteIndex, list[str | None]]:
    """The batch's index, and each entry's tokens (None: indexed alone, by new_version).

    A thread entry's later version is indexed alone, as a revise indexes it and a rebuild does
    (indexing.threads.sequence_key); the others join their thread or batch, widening the
    stored neighbours before them. A replaced version may still sit in the thread's stored
    tail: it keeps its own index (its rewrite is dropped), and the re-derivation after the
    commit closes its gap, the new entries' windows included."""
    alone = [entry.entry_id in heads and entry.thread is not None for entry in kept]
    within = [source_of(entry) for entry, lone in zip(kept, alone, strict=True) if not lone]
    index = await service.threads.plan(scope_id, within)
    own = iter(zip(index.tokens, index.embeddings, strict=True))
    tokens: list[str | None] = []
    inputs: list[tuple[str, ...]] = []
    for entry, lone in zip(kept, alone, strict=True):
        if lone:
            tokens.append(None)
            inputs.extend(embedding_inputs([source_of(entry)], service.config.index))
        else:
            entry_tokens, entry_inputs = next(own)
            tokens.append(entry_tokens)
            inputs.append(entry_inputs)
    gone = {heads[entry.entry_id].key for entry in kept if entry.entry_id in heads}
    rewrites = [(key, text) for key, text in index.rewrites if key not in gone]
    re_embed = [(key, texts) for key, texts in index.re_embed if key not in gone]
    return WriteIndex([], inputs, rewrites, re_embed), tokens
