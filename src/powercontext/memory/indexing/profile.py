"""Index profiles: the settings that decide a scope's derived index (tokens and vectors).

A scope records the profile its entries were indexed under. When the settings change (a new
default, another template, another embedding model), searches keep working on the old index
and say so, until `powercontext reindex --rebuild` re-derives every active version under the
current profile. Query-time settings (stop words, RRF k, weights) are not part of it: they
take effect on the next search without touching the index. Nor is the embedding model:
vectors are stored per embedding profile, so another model's vectors are *missing* (and
`reindex` fills them), not stale.
"""

from __future__ import annotations

import hashlib
import json
import logging
from typing import Any

from powercontext.memory.indexing.context import IndexTextConfig
from powercontext.memory.ports import MemoryStore
from powercontext.memory.search.analyze import AnalyzerConfig

log = logging.getLogger("powercontext.memory")

UNKNOWN_PROFILE = "unknown: indexed before index profiles were recorded"
"""What a scope with entries but no recorded profile reports: whoever wrote its first
revision did not record one (code from before profiles, or a failed bookkeeping write)."""


def index_profile(index: IndexTextConfig, analyzer: AnalyzerConfig) -> str:
    """The profile as canonical JSON (recorded verbatim, compared as text)."""
    settings: dict[str, Any] = {
        # 3: combining marks stay inside words (search.marks); 2: field prefixes
        # (search.fields); 1: one flat field
        "tokens": 3,
        "speaker_key": index.speaker_key,
        "analyzer_language": analyzer.language,
        "analyzer_strip_clitics": analyzer.strip_clitics,
        "template": index.template,
        "event_date": index.event_date,
    }
    if index.contextual:
        settings["context"] = {
            "before": index.context_before,
            "after": index.context_after,
            "group_key": index.context_group_key,
            "fts": index.context_fts,
            "vector": index.context_vector,
            "neighbour_chars": index.context_neighbour_chars,
        }
    return json.dumps(settings, sort_keys=True, separators=(",", ":"))


def profile_id(profile: str) -> str:
    """A short name of a profile for logs and reports."""
    return hashlib.sha256(profile.encode("utf-8")).hexdigest()[:12]


class IndexProfiles:
    """The profile each scope was indexed under; `current` is this process's. A scope's first
    write records it; a stale scope is searched as it is, and logged once per process."""

    def __init__(self, store: MemoryStore, current: str) -> None:
        self.store = store
        self.current = current
        self._unrecorded: set[str] = set()
        self._warned: set[str] = set()

    async def record(self, scope_id: str, revision: int) -> None:
        """After a write. Only the writer of revision 1 knows the profile of the whole index:
        the scope was empty before it. A later writer cannot tell (the earlier revisions may
        come from code that predates profiles), so it writes nothing: a scope with entries
        and no profile reports UNKNOWN_PROFILE until rebuilt. Writing UNKNOWN_PROFILE instead
        would race with (and could overwrite) the record of the revision 1 writer, whose
        write may still be in flight in this process or another."""
        if revision != 1 and scope_id not in self._unrecorded:
            return
        try:
            await self.store.set_index_profile(scope_id, self.current)
        except Exception as exc:  # bookkeeping only: the write stands; our next write retries
            self._unrecorded.add(scope_id)
            log.warning("recording the index profile failed (%s)", type(exc).__name__)
            return
        self._unrecorded.discard(scope_id)

    async def recorded(self, scope_id: str) -> str | None:
        """The profile the scope's index was derived under (None: an empty scope). Read from
        the store each time: another process may have rebuilt the scope since."""
        recorded = await self.store.index_profile(scope_id)
        if recorded is None and await self.store.head(scope_id) is not None:
            return UNKNOWN_PROFILE
        return recorded

    async def is_stale(self, scope_id: str) -> bool:
        recorded = await self.recorded(scope_id)
        return recorded is not None and recorded != self.current

    async def warn_if_stale(self, scope_id: str) -> None:
        if scope_id in self._warned:
            return
        self._warned.add(scope_id)
        recorded = await self.recorded(scope_id)
        if recorded is not None and recorded != self.current:
            log.warning(
                "scope %r is indexed under index profile %s, not the current %s: search uses "
                "the old index; run `powercontext reindex --rebuild`",
                scope_id,
                "unknown" if recorded == UNKNOWN_PROFILE else profile_id(recorded),
                profile_id(self.current),
            )

    async def mark_rebuilt(self, scope_id: str) -> None:
        await self.store.set_index_profile(scope_id, self.current)
        self._unrecorded.discard(scope_id)
        self._warned.discard(scope_id)

    async def stale_scopes(self) -> list[str]:
        """Every scope with entries whose recorded profile is not the current one."""
        recorded = await self.store.index_profiles()
        return [
            scope_id
            for scope_id in await self.store.scope_ids()
            if recorded.get(scope_id, UNKNOWN_PROFILE) != self.current
        ]
