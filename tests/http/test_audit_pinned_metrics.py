"""The `/metrics` names dashboards key on: docs/http.md's table against a running server.

#4 asks for request counts and latencies per route, the search mode used, rerank calls,
fallbacks and latency; #9 for a count of each `rerank_status`; #19 for the vectors still
pending. A renamed metric or label breaks every alert on it silently, so the table in the docs
and the served families must stay one list.
"""

from __future__ import annotations

import re
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from tests.http.conftest import Served

DOC = Path(__file__).resolve().parents[2] / "docs" / "http.md"
ROW = re.compile(r"^\| `(powercontext_[a-z_]+)` \| (counter|histogram|gauge) \|([^|]*)\|")


def _documented() -> dict[str, tuple[str, frozenset[str]]]:
    rows = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        match = ROW.match(line)
        if match:
            name, kind, labels = match.groups()
            rows[name] = (kind, frozenset(re.findall(r"`([a-z_]+)`", labels)))
    return rows


def _exposed_name(name: str, kind: str) -> str:
    return f"{name}_total" if kind == "counter" else name


def test_the_documented_metrics_are_the_served_ones(open_server: Served, fresh_scope: str) -> None:
    with open_server.client() as client:
        written = {"scope_id": fresh_scope, "text": "we deploy on fridays"}
        assert client.post("/v1/memory/remember", json=written).status_code == 200
        search = {"scope_id": fresh_scope, "query": "deploy", "mode": "fts"}
        assert client.post("/v1/memory/search", json=search).status_code == 200
        scraped = client.get("/metrics")
    assert scraped.status_code == 200
    served: dict[str, tuple[str, frozenset[str]]] = {}
    samples: dict[str, list[dict[str, str]]] = {}
    for family in text_string_to_metric_families(scraped.text):
        # The classic text format also shows each counter's and histogram's `_created` series
        # as a family of its own: a timestamp, not a metric anyone queries.
        if not family.name.startswith("powercontext_") or family.name.endswith("_created"):
            continue
        name = _exposed_name(family.name, family.type)
        labels = {k for s in family.samples for k in s.labels if k not in {"le"}}
        served[name] = (family.type, frozenset(labels))
        samples[name] = [s.labels for s in family.samples if s.name.endswith(("_total", "_count"))]
    documented = _documented()
    assert set(documented) == set(served), "docs/http.md's metrics table and /metrics differ"
    for name, (kind, labels) in documented.items():
        assert served[name][0] == kind, name
        # A labelled family shows its labels once it has a sample; these have one by now.
        if samples[name]:
            assert served[name][1] == labels, name
    requests = samples["powercontext_http_requests_total"]
    assert {"route": "/v1/memory/search", "method": "POST", "status": "200"} in requests
    assert {"mode": "fts"} in samples["powercontext_memory_searches_total"]
    assert {"status": "applied"} in samples["powercontext_memory_rerank_status_total"]
