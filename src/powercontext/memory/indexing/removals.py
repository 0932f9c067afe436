"""What a version leaving its sequence changes in the index: its former neighbours.

A retire, or a revise (whose new version is indexed alone, at the end of the key order), takes
an entry's first version out of its thread's write order. The entries whose window held it
now have other neighbours: the window closes over the gap, as `reindex --rebuild` (which
indexes the versions active at the head) would derive it. Only those entries are re-derived,
their tokens rewritten and vectors re-embedded in place: derived data, so no revision is made,
and the removed version keeps its own index (as-of search still finds it by its words).

A reactivate needs nothing here: its new version is indexed alone and is nobody's neighbour,
the same as a rebuild treats it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from powercontext.memory.filters import MemoryFilter
from powercontext.memory.indexing.context import (
    IndexTextConfig,
    embedding_inputs,
    fts_tokens,
    neighbourhoods,
)
from powercontext.memory.indexing.threads import EmbeddingItem, sequence_key, source_of
from powercontext.memory.indexing.vectors import VectorIndexer, catch_up
from powercontext.memory.ports import ErasedVersion, StoredVersion, VersionPage
from powercontext.memory.search.analyze import AnalyzerConfig

Window = tuple[tuple[int, ...], tuple[int, ...]]
Derived = dict[int, tuple[str, tuple[str, ...]]]
"""key -> (tokens, embedding inputs) written for it."""
_PAGE = 1024


def had_neighbours(version: StoredVersion | ErasedVersion, index: IndexTextConfig) -> bool:
    """Whether the version was indexed within a sequence and so sat in other entries' windows:
    a thread's first version, or a thread-less one when a metadata key groups its batch."""
    if not index.contextual or not (index.context_fts or index.context_vector):
        return False
    if version.thread is not None:
        return version.version == 1
    return index.context_group_key is not None


def windows(sequence: Sequence[StoredVersion], index: IndexTextConfig) -> dict[int, Window]:
    """Each version's neighbours (before, after), by key."""
    hoods = neighbourhoods([source_of(version) for version in sequence], index)
    return {
        version.key: (
            tuple(sequence[i].key for i in before),
            tuple(sequence[i].key for i in after),
        )
        for version, (before, after) in zip(sequence, hoods, strict=True)
    }


def derive(
    sequence: Sequence[StoredVersion],
    keys: set[int],
    index: IndexTextConfig,
    analyzer: AnalyzerConfig,
) -> Derived:
    """Tokens and embedding inputs of the versions `keys` names, within `sequence`.

    Only those versions and their neighbours are analysed: the nearest neighbours of a member
    within that subset are its nearest within the whole sequence, so the result is the same."""
    sources = [source_of(version) for version in sequence]
    hoods = neighbourhoods(sources, index)
    wanted = [p for p, version in enumerate(sequence) if version.key in keys]
    needed = sorted({*wanted, *(q for p in wanted for q in (*hoods[p][0], *hoods[p][1]))})
    subset = [sources[p] for p in needed]
    tokens = fts_tokens(subset, index, analyzer)
    inputs = embedding_inputs(subset, index)
    return {
        sequence[p].key: (tokens[i], inputs[i])
        for i, p in enumerate(needed)
        if sequence[p].key in keys
    }


def derive_removed(
    peers: Sequence[StoredVersion],
    index: IndexTextConfig,
    analyzer: AnalyzerConfig,
    *,
    removed_after: int = 0,
) -> Derived:
    """Tokens and embedding inputs of the inactive members of one sequence (`peers`: every
    stored member, active or not, ascending by key) removed after revision `removed_after`,
    each within the sequence as it stood at its last active revision (`removed_revision - 1`):
    the index it held when it left, which as-of search reads. Versions no longer stored
    (erased) are not in `peers`, so they are left out."""
    derived: Derived = {}
    if peers and peers[0].thread is not None:
        # A thread: each from the turns around it then, not the whole thread at each revision
        # (a long thread with many retirements would cost their product).
        for position, version in enumerate(peers):
            gone = version.removed_revision
            if gone is not None and gone > removed_after:
                stood = _stood_around(peers, position, gone - 1, index)
                derived.update(derive(stood, {version.key}, index, analyzer))
        return derived
    # A batch (bounded by the batch size): its groups interleave, so it is taken whole.
    stale: dict[int, set[int]] = {}  # last active revision -> keys removed after it
    for version in peers:
        gone = version.removed_revision
        if gone is not None and gone > removed_after:
            stale.setdefault(gone - 1, set()).add(version.key)
    for at, keys in stale.items():
        stood = [version for version in peers if version.active_at(at)]
        derived.update(derive(stood, keys, index, analyzer))
    return derived


def _stood_around(
    peers: Sequence[StoredVersion], position: int, at: int, index: IndexTextConfig
) -> list[StoredVersion]:
    """The version at `position` and its neighbours in the thread as it stood at `at`: the
    nearest `before` and `after` members active then, ascending by key."""
    earlier: list[StoredVersion] = []
    for i in range(position - 1, -1, -1):
        if len(earlier) >= index.context_before:
            break
        if peers[i].active_at(at):
            earlier.append(peers[i])
    later: list[StoredVersion] = []
    for i in range(position + 1, len(peers)):
        if len(later) >= index.context_after:
            break
        if peers[i].active_at(at):
            later.append(peers[i])
    return [*reversed(earlier), peers[position], *later]


def removed_index(
    active: Sequence[StoredVersion],
    removed: Sequence[StoredVersion],
    index: IndexTextConfig,
    analyzer: AnalyzerConfig,
    since: Mapping[object, int] | None = None,
) -> Derived:
    """`derive_removed` over every sequence holding one of `removed` (inactive versions), its
    members the versions of `active` (those active at the head) and of `removed` in it.
    `since`: only the sequences it names, and only their members removed after its revision."""
    members: dict[object, dict[int, StoredVersion]] = {}
    # A version another process retired since `active` was read is in both: the later wins.
    for version in (*active, *removed):
        members.setdefault(sequence_key(version), {})[version.key] = version
    wanted = {sequence_key(version) for version in removed}
    derived: Derived = {}
    for key, by_key in members.items():
        if key not in wanted or (since is not None and key not in since):
            continue
        peers = sorted(by_key.values(), key=lambda version: version.key)
        after = 0 if since is None else since[key]
        derived.update(derive_removed(peers, index, analyzer, removed_after=after))
    return derived


def closed_over(
    sequence: Sequence[StoredVersion],
    removed: Sequence[StoredVersion],
    index: IndexTextConfig,
) -> set[int]:
    """Keys of `sequence` (active now, ascending by key) whose window changes when `removed`
    leave it: the entries before and after the gap that had a removed version as neighbour."""
    before = windows(sorted([*sequence, *removed], key=lambda v: v.key), index)
    after = windows(sequence, index)
    return {key for key, window in after.items() if before[key] != window}


async def stretch(
    indexer: VectorIndexer,
    index: IndexTextConfig,
    scope_id: str,
    head: int,
    version: StoredVersion,
    *,
    to_end: bool = False,
) -> list[StoredVersion]:
    """Versions active at `head` of the sequence `version` was indexed in, ascending by key:
    the `before + after` turns before it, then the `before + after` after it (or, `to_end`,
    it and every later one).

    Around a removed version, that is what the windows closing over its gap can reach: the
    entries whose window held it are the `after` ones before it and the `before` ones after
    it, and each of their new windows reaches `before` and `after` further. A retire in a
    long thread reads a few rows, not the thread. A batch (thread-less versions grouped by a
    metadata key) has no filter of its own, so the scope is listed for it."""
    wanted = sequence_key(version)
    if version.thread is None:
        return await members_listed(
            indexer, scope_id, head, None, wanted, after_key=None, limit=None
        )
    reach = index.context_before + index.context_after
    earlier = await indexer.store.thread_tail(
        scope_id, version.thread, limit=reach, before_key=version.key
    )
    where = MemoryFilter(threads=(version.thread,))
    after_key, limit = (version.key - 1, None) if to_end else (version.key, reach)
    later = await members_listed(
        indexer, scope_id, head, where, wanted, after_key=after_key, limit=limit
    )
    return [*earlier, *later]


async def members_listed(
    indexer: VectorIndexer,
    scope_id: str,
    head: int,
    where: MemoryFilter | None,
    wanted: object,
    *,
    after_key: int | None,
    limit: int | None,
) -> list[StoredVersion]:
    """The first `limit` (None: all) versions active at `head` past `after_key` that are
    members of the sequence `wanted`, ascending by key."""
    found: list[StoredVersion] = []
    size = _PAGE if limit is None else max(limit, 8)  # a thread's later versions: a few more
    while limit is None or len(found) < limit:
        page = VersionPage(scope_id, head, after_key=after_key, limit=size, where=where)
        rows = await indexer.store.list_versions(page)
        if not rows:
            break
        found.extend(row for row in rows if sequence_key(row) == wanted)
        after_key = rows[-1].key
    return found if limit is None else found[:limit]


async def store_derived(
    indexer: VectorIndexer, index: IndexTextConfig, scope_id: str, derived: Derived
) -> None:
    """Rewrite the tokens and re-embed the vectors `derived` holds, each where contextual
    indexing puts neighbours' words in it."""
    if index.context_fts and derived:
        tokens = [(key, value[0]) for key, value in derived.items()]
        await indexer.store.rewrite_index_tokens(scope_id, tokens)
    work: list[EmbeddingItem] = [(key, value[1]) for key, value in derived.items()]
    if index.context_vector and indexer.embedder is not None and work:
        await indexer.embed_and_store(scope_id, work, lambda _done, _total: None)


async def rederive_around(
    indexer: VectorIndexer,
    index: IndexTextConfig,
    analyzer: AnalyzerConfig,
    scope_id: str,
    removed: Sequence[StoredVersion],
) -> int:
    """Re-derive the former neighbours of `removed` (versions a committed write just took out
    of their sequence); returns how many were re-derived. Raises what the store or the
    embedder raises; the write stands either way."""
    removed = [version for version in removed if had_neighbours(version, index)]
    head = await indexer.store.head(scope_id)
    if not removed or head is None:
        return 0
    written: Derived = {}

    async def redo(
        now: int | None, keys: Callable[[object, list[StoredVersion]], set[int]]
    ) -> None:
        if now is None:
            return
        # Several removed versions of one sequence (an import's): the union of their stretches.
        stretches: dict[object, dict[int, StoredVersion]] = {}
        for version in removed:
            members = stretches.setdefault(sequence_key(version), {})
            if version.thread is None and members:
                continue  # a batch is listed whole once
            for peer in await stretch(indexer, index, scope_id, now, version):
                members[peer.key] = peer
        derived: Derived = {}
        for wanted, by_key in stretches.items():
            peers = sorted(by_key.values(), key=lambda version: version.key)
            derived.update(derive(peers, keys(wanted, peers), index, analyzer))
        changed = {key: value for key, value in derived.items() if written.get(key) != value}
        await store_derived(indexer, index, scope_id, changed)
        written.update(changed)

    def gap(wanted: object, peers: list[StoredVersion]) -> set[int]:
        return closed_over(peers, [v for v in removed if sequence_key(v) == wanted], index)

    await redo(head, gap)
    # A turn committed meanwhile (another process) may have rewritten the same neighbours
    # before this pass stored its older view over theirs: re-derive what was written here.
    await catch_up(
        indexer.store, scope_id, head, lambda now: redo(now, lambda _wanted, _peers: set(written))
    )
    return len(written)
