"""What the channels index for each entry: its template-rendered text (with the event date
when one was given), optionally widened with neighbouring entries (contextual indexing). Pure
functions; the stored text is never changed.

Neighbours of an entry with a `thread` are the entries of that thread in write order (first
versions, ascending by key), whether they were written in one batch or one call at a time:
the caller hands these functions the thread's stored tail followed by the new entries, so
both ways of writing give the same sequence and the same index. A turn such as "Yes, we went
there last June" is then found by the words of the turns around it.

An entry without a thread gets neighbours only when `context_group_key` is set: the entries of
its own batch (one `remember_many` call) that share that metadata value, in batch order.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from powercontext.memory.indexing.templates import DEFAULT_TEMPLATE, render, validate_template
from powercontext.memory.search.analyze import AnalyzerConfig, analyze
from powercontext.memory.search.fields import context_tokens, speaker_tokens

_NO_GROUP = object()


@dataclass(frozen=True, slots=True)
class IndexTextConfig:
    template: str = DEFAULT_TEMPLATE
    """Index template over {text}, {kind} and {metadata[KEY]} (see indexing.templates)."""
    context_before: int = 0
    """Neighbours before the entry added to what the channels see (0 with `after` = off)."""
    context_after: int = 0
    context_group_key: str | None = None
    """For entries without a thread: metadata key whose value groups neighbours within one
    batch. None: such entries get no neighbours. An entry lacking the key gets none either."""
    context_fts: bool = True
    """Add the neighbours' words to the entry's full-text tokens."""
    context_vector: bool = True
    """Embed the entry together with its neighbours' text."""
    context_neighbour_chars: int = 512
    """Each neighbour contributes at most this many characters, so a long neighbour cannot
    crowd the entry's own words out of the embedding model's input window."""

    speaker_key: str | None = "speaker"
    """Metadata key naming who wrote or said the entry; its words are indexed as the speaker
    field, so a query naming the speaker favours the entry (see search.fields)."""
    event_date: bool = True
    """Append the event date (`occurred_at`, when the caller gave one) to the indexed text, as
    words ("8 May 2023"), so "when ... in May" finds it by both channels."""

    def __post_init__(self) -> None:
        validate_template(self.template)
        if self.context_before < 0 or self.context_after < 0:
            raise ValueError("context windows must be >= 0")
        if self.context_neighbour_chars < 1:
            raise ValueError("context_neighbour_chars must be >= 1")

    @property
    def contextual(self) -> bool:
        return self.context_before > 0 or self.context_after > 0


@dataclass(frozen=True, slots=True)
class IndexSource:
    """One entry as the index sees it: what is stored, before any rendering."""

    kind: str
    text: str
    metadata: Mapping[str, Any]
    thread: str | None = None
    occurred_at: datetime | None = None
    """Only a time the caller gave; the write time is not rendered."""


_MONTHS = (
    "January February March April May June July August September October November December"
).split()


def date_words(moment: datetime) -> str:
    """`8 May 2023`: locale-independent, in the words people ask with."""
    return f"{moment.day} {_MONTHS[moment.month - 1]} {moment.year}"


def _group(source: IndexSource, key: str | None) -> object:
    if source.thread is not None:
        return ("thread", source.thread)
    if key is None:
        return _NO_GROUP
    value = source.metadata.get(key)
    if value is None:
        return _NO_GROUP
    # JSON text makes any metadata value (lists, numbers) comparable and hashable.
    return ("metadata", json.dumps(value, sort_keys=True, ensure_ascii=False))


def neighbourhoods(
    sources: Sequence[IndexSource], config: IndexTextConfig
) -> list[tuple[list[int], list[int]]]:
    """For each source, the positions of the neighbours before and after it in its group."""
    groups: dict[object, list[int]] = {}
    for position, source in enumerate(sources):
        groups.setdefault(_group(source, config.context_group_key), []).append(position)
    result: list[tuple[list[int], list[int]]] = [([], []) for _ in sources]
    if not config.contextual:
        return result
    for group, members in groups.items():
        if group is _NO_GROUP:
            continue
        for index, position in enumerate(members):
            before = members[max(0, index - config.context_before) : index]
            after = members[index + 1 : index + 1 + config.context_after]
            result[position] = (before, after)
    return result


def _cut(text: str, config: IndexTextConfig) -> str:
    return text[: config.context_neighbour_chars]


def rendered_text(source: IndexSource, config: IndexTextConfig) -> str:
    text = render(config.template, source.text, source.kind, source.metadata)
    if config.event_date and source.occurred_at is not None:
        text = f"{text}\n{date_words(source.occurred_at)}"
    return text


def rendered_texts(sources: Sequence[IndexSource], config: IndexTextConfig) -> list[str]:
    return [rendered_text(source, config) for source in sources]


def fts_tokens(
    sources: Sequence[IndexSource], config: IndexTextConfig, analyzer: AnalyzerConfig
) -> list[str]:
    """Space-joined FTS tokens per source: its rendered text, its speaker (`@word`), then its
    neighbours' words (`_word`); see search.fields.

    Each text is analyzed once, so a window of w neighbours costs a join, not w analyses.
    """
    own = [
        analyze(text, analyzer) + _speaker(source, config, analyzer)
        for text, source in zip(rendered_texts(sources, config), sources, strict=True)
    ]
    if not (config.contextual and config.context_fts):
        return [" ".join(tokens) for tokens in own]
    plain = [context_tokens(analyze(_cut(s.text, config), analyzer)) for s in sources]
    joined = []
    for position, (before, after) in enumerate(neighbourhoods(sources, config)):
        tokens = list(own[position])
        for other in (*before, *after):
            tokens.extend(plain[other])
        joined.append(" ".join(tokens))
    return joined


def _speaker(source: IndexSource, config: IndexTextConfig, analyzer: AnalyzerConfig) -> list[str]:
    if config.speaker_key is None:
        return []
    value = source.metadata.get(config.speaker_key)
    if not isinstance(value, str) or not value.strip():
        return []
    return speaker_tokens(dict.fromkeys(analyze(value, analyzer)))


def embedding_inputs(
    sources: Sequence[IndexSource], config: IndexTextConfig
) -> list[tuple[str, ...]]:
    """The texts embedded per source; its vector is the unit mean of their unit vectors.

    Without context that is the rendered entry alone. With context it is the rendered entry
    and its neighbourhood (neighbours before, the entry, neighbours after, one per line, in
    batch order). Mixing the two vectors keeps the entry's own meaning in front: a
    neighbourhood vector alone ranks all of a passage's entries alike, which floods the top of
    the pool with the neighbours of every match.
    """
    own = rendered_texts(sources, config)
    if not (config.contextual and config.context_vector):
        return [(text,) for text in own]
    inputs: list[tuple[str, ...]] = []
    for position, (before, after) in enumerate(neighbourhoods(sources, config)):
        if not before and not after:
            inputs.append((own[position],))
            continue
        lines = [_cut(sources[i].text, config) for i in before]
        lines.append(own[position])
        lines.extend(_cut(sources[i].text, config) for i in after)
        inputs.append((own[position], "\n".join(lines)))
    return inputs
