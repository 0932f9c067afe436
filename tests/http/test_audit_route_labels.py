"""A request refused before routing (401 from the gate, 413 over the body limit) is counted
and logged under the route its path names, so a dashboard sees refusals per route; a path no
route has stays `unmatched` (a raw path would make a series per id)."""

from __future__ import annotations

import httpx

from tests.http.conftest import BODY_LIMIT, Served

SEARCH = "/v1/memory/search"
REMEMBER = "/v1/memory/remember"


def _count(served: Served, route: str, method: str, status: int) -> float:
    with served.client() as client:
        text = client.get("/metrics").text
    series = (
        f'powercontext_http_requests_total{{method="{method}",route="{route}",status="{status}"}}'
    )
    for line in text.splitlines():
        if line.startswith(series + " "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_a_refusal_before_routing_is_labelled_by_its_route(
    auth_server: Served, bare_server: Served
) -> None:
    before = _count(auth_server, SEARCH, "POST", 401)
    with httpx.Client(base_url=auth_server.url) as client:
        refused = client.post(SEARCH, json={"scope_id": "scope-a", "query": "x"})
    assert refused.status_code == 401
    assert _count(auth_server, SEARCH, "POST", 401) == before + 1

    before = _count(bare_server, REMEMBER, "POST", 413)
    with httpx.Client(base_url=bare_server.url) as client:
        big = client.post(REMEMBER, json={"scope_id": "s", "text": "x" * (BODY_LIMIT + 10)})
    assert big.status_code == 413
    assert _count(bare_server, REMEMBER, "POST", 413) == before + 1


def test_a_path_no_route_has_stays_unmatched(auth_server: Served) -> None:
    before = _count(auth_server, "unmatched", "GET", 401)
    with httpx.Client(base_url=auth_server.url) as client:
        assert client.get("/v1/memory/no-such-thing-123").status_code == 401
    assert _count(auth_server, "unmatched", "GET", 401) == before + 1
    with auth_server.client() as client:
        assert "no-such-thing-123" not in client.get("/metrics").text
