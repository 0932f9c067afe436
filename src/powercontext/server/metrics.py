"""Prometheus metrics of one app, in its own registry (two apps in a process never collide).

Under `server run --workers N` the processes share one port, so a scrape reaches any one of
them: each then writes its values to files in the directory named by PROMETHEUS_MULTIPROC_DIR
(prometheus_client's multiprocess mode, chosen when the package is first imported; the runner
sets it before the workers start), and a scrape adds up every worker's files.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.multiprocess import MultiProcessCollector

from powercontext.memory.service import SearchObservation
from powercontext.memory.values import RerankStatus

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_RERANK_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
_Labelled = TypeVar("_Labelled", bound=MetricWrapperBase)
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
"""Method labels kept as sent; any other (h11 passes any token through) is `other`."""


RERANK_FAILURES = frozenset(
    {"inference_timeout", "inference_unavailable", "inference_invalid_output"}
)
"""The codes only a search's rerank stage raises (a query embedding that fails is a 422)."""

MULTIPROCESS_DIRECTORY = "PROMETHEUS_MULTIPROC_DIR"


class ServerMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._shared = os.environ.get(MULTIPROCESS_DIRECTORY) or None
        self._read_pending: Callable[[], int] | None = None
        self._children: dict[tuple[int, tuple[str, ...]], MetricWrapperBase] = {}
        self.requests = Counter(
            "powercontext_http_requests",
            "HTTP requests by route template, method and status.",
            ("route", "method", "status"),
            registry=self.registry,
        )
        self.latency = Histogram(
            "powercontext_http_request_duration_seconds",
            "HTTP request latency by route template.",
            ("route", "method"),
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.searches = Counter(
            "powercontext_memory_searches",
            "Searches by the mode actually used.",
            ("mode",),
            registry=self.registry,
        )
        self.reranks = Counter(
            "powercontext_memory_rerank_calls",
            "Searches whose coarse pool went through the memory reranker and came back with "
            "a page (a failed one is counted in powercontext_memory_rerank_failures).",
            registry=self.registry,
        )
        self.rerank_failures = Counter(
            "powercontext_memory_rerank_failures",
            "Reranks that failed the search (fail_closed, or a deadline): inference_timeout, "
            "inference_unavailable or inference_invalid_output.",
            ("code",),
            registry=self.registry,
        )
        self.fallbacks = Counter(
            "powercontext_memory_rerank_fallbacks",
            "Reranks that returned no valid rank and fell back to the coarse order.",
            registry=self.registry,
        )
        self.rerank_status = Counter(
            "powercontext_memory_rerank_status",
            "HTTP searches by rerank status: applied, fallback_no_valid_rank, "
            "degraded_provider_error or degraded_invalid_output (fail-open served the coarse "
            "order) or disabled.",
            ("status",),
            registry=self.registry,
        )
        self.rerank_latency = Histogram(
            "powercontext_memory_rerank_duration_seconds",
            "Latency of the memory reranker call.",
            buckets=_RERANK_BUCKETS,
            registry=self.registry,
        )

        self.vectors_pending = Gauge(
            "powercontext_memory_vectors_pending",
            "Active entries without a vector of the current embedding profile, as last counted "
            "by the background backfill, or by /v1/ready when it is off (auto search serves "
            "fts for their scopes meanwhile).",
            registry=self.registry,
            # Every worker counts the same database: the scraping worker's fresh count.
            multiprocess_mode="mostrecent",
        )

    def track_vectors_pending(self, read: Callable[[], int]) -> None:
        self._read_pending = read
        self.vectors_pending.set_function(read)

    def observe_request(self, route: str, method: str, status: int, seconds: float) -> None:
        method = method if method in _METHODS else "other"
        self._child(self.requests, route, method, str(status)).inc()
        self._child(self.latency, route, method).observe(seconds)

    def observe_search(self, observation: SearchObservation) -> None:
        self._child(self.searches, observation.mode).inc()
        if observation.reranked:
            self.reranks.inc()
            self.rerank_latency.observe(observation.rerank_latency_ms / 1000.0)
            if observation.used_fallback:
                self.fallbacks.inc()

    def observe_failure(self, code: str) -> None:
        """A call (HTTP or MCP) that failed with `code`; counted when its rerank failed it."""
        if code in RERANK_FAILURES:
            self._child(self.rerank_failures, code).inc()

    def observe_rerank_status(self, status: RerankStatus) -> None:
        self._child(self.rerank_status, status).inc()

    def _child(self, metric: _Labelled, *labels: str) -> _Labelled:
        """`metric.labels(*labels)`, kept: `labels` takes a lock and builds its key on every
        call, a few microseconds of every request. Labels are route templates, methods,
        statuses and modes: a bounded set."""
        key = (id(metric), labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child  # type: ignore[return-value]  # the child of `metric` is its type

    def render(self) -> bytes:
        if self._shared is None:
            return generate_latest(self.registry)
        # A function gauge is not written to the shared files: write its value now.
        if self._read_pending is not None:
            self.vectors_pending.set(self._read_pending())
        every_worker = CollectorRegistry()
        MultiProcessCollector(every_worker, path=self._shared)  # type: ignore[no-untyped-call]
        return generate_latest(every_worker)
