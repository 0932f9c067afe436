"""server.direct and the request around the body: the Content-Type (case, parameters,
duplicates), chunked bodies, `Expect: 100-continue`, paths with a slash or a query, other
methods, and what the access log and /metrics record. Each request is sent with the direct
layer on and off (see test_direct_calls_support) and must be answered and counted alike.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.http.conftest import KEY_A, Served
from tests.http.test_direct_calls_differential import JSON_POSTS
from tests.http.test_direct_calls_support import Answer, Switch, answer, raw_exchange

SEARCH = "/v1/memory/search"
BODY = json.dumps({"scope_id": "scope-a", "query": "wire tea", "mode": "fts"}).encode()
AUTH = ("Authorization", f"Bearer {KEY_A}")

CONTENT_TYPES: dict[str, list[tuple[str, str]]] = {
    "exact": [("Content-Type", "application/json")],
    "case": [("Content-Type", "Application/JSON")],
    "charset": [("Content-Type", "application/json; charset=utf-8")],
    "charset, no space": [("Content-Type", "application/json;charset=UTF-8")],
    "+json": [("Content-Type", "application/vnd.api+json")],
    "text/plain": [("Content-Type", "text/plain")],
    "form": [("Content-Type", "application/x-www-form-urlencoded")],
    "none": [],
    "empty": [("Content-Type", "")],
    "json then text": [("Content-Type", "application/json"), ("Content-Type", "text/plain")],
    "text then json": [("Content-Type", "text/plain"), ("Content-Type", "application/json")],
    "json twice": [("Content-Type", "application/json"), ("Content-Type", "application/json")],
}


@pytest.fixture
def switch(monkeypatch: pytest.MonkeyPatch) -> Switch:
    return Switch(monkeypatch)


@pytest.mark.parametrize("case", list(CONTENT_TYPES))
def test_content_types_are_answered_alike(auth_server: Served, switch: Switch, case: str) -> None:
    headers = [AUTH, *CONTENT_TYPES[case]]
    with auth_server.client() as client:
        on, off, went_direct = switch.both(
            lambda: answer(client.post(SEARCH, content=BODY, headers=headers))
        )
    assert on == off
    # Only the exact media type is taken directly; the rest is the router's to judge.
    assert went_direct == (case in ("exact", "json twice", "json then text"))


def _chunks() -> Iterator[bytes]:
    yield BODY[:10]
    yield BODY[10:]


def test_a_chunked_body_is_answered_alike(auth_server: Served, switch: Switch) -> None:
    headers = [AUTH, ("Content-Type", "application/json")]
    with auth_server.client() as client:

        def send() -> Answer:
            request = client.build_request("POST", SEARCH, content=_chunks(), headers=headers)
            assert request.headers["transfer-encoding"] == "chunked"
            return answer(client.send(request))

        on, off, went_direct = switch.both(send)
    assert on == off and on[0] == 200 and went_direct


@pytest.mark.parametrize("body", [BODY, b"{"], ids=["valid", "malformed"])
def test_expect_100_continue_is_answered_alike(
    auth_server: Served, switch: Switch, body: bytes
) -> None:
    host = auth_server.url.removeprefix("http://")
    head = (
        f"POST {SEARCH} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {KEY_A}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        "Expect: 100-continue\r\nConnection: close\r\n\r\n"
    ).encode()
    on, off, _ = switch.both(
        lambda: raw_exchange(auth_server.url, head, body, expect_continue=True)
    )
    assert on == off


@pytest.mark.parametrize(
    "target",
    [
        f"{SEARCH}/",
        f"{SEARCH}?limit=1",
        f"{SEARCH}?scope_id=scope-b",
        f"/{SEARCH}",
        "/v1/memory/%73earch",
        SEARCH.upper(),
        f"{SEARCH}/batch/",
    ],
)
def test_other_paths_are_answered_alike(auth_server: Served, switch: Switch, target: str) -> None:
    headers = [AUTH, ("Content-Type", "application/json")]
    with auth_server.client() as client:
        on, off, _ = switch.both(lambda: answer(client.post(target, content=BODY, headers=headers)))
    assert on == off


@pytest.mark.parametrize("method", ["HEAD", "GET", "PUT", "PATCH", "DELETE", "OPTIONS"])
def test_other_methods_are_answered_alike(auth_server: Served, switch: Switch, method: str) -> None:
    headers = [AUTH, ("Content-Type", "application/json")]
    with auth_server.client() as client:
        for path in sorted(JSON_POSTS):

            def send(path: str = path) -> Answer:
                return answer(client.request(method, path, content=BODY, headers=headers))

            on, off, went_direct = switch.both(send)
            assert on == off, path
            assert not went_direct


def _access_record(caplog: pytest.LogCaptureFixture, request_id: str) -> logging.LogRecord:
    # The server thread logs (and counts) after the answer is sent: wait for its line.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        for record in caplog.records:
            if record.name == "powercontext.http.access" and (
                record.__dict__.get("request_id") == request_id
            ):
                return record
        time.sleep(0.01)
    raise AssertionError(f"no access line for {request_id}")


def _counters(served: Served) -> dict[str, float]:
    with served.client() as client:
        text = client.get("/metrics").text
    samples: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        series, _, value = line.rpartition(" ")
        if series.split("{")[0].endswith(("_total", "_count")):
            samples[series] = float(value)
    return samples


@pytest.mark.parametrize(
    ("key", "body"),
    [
        (KEY_A, BODY),  # 200, direct when on
        (KEY_A, json.dumps({"scope_id": "scope-b", "query": "tea"}).encode()),  # 403 in perform
        (KEY_A, b"[]"),  # 422
        ("not-a-key-0000", BODY),  # 401 at the gate
    ],
    ids=["ok", "forbidden", "invalid", "unauthorized"],
)
def test_metrics_and_access_log_count_a_direct_call_as_a_routed_one(
    auth_server: Served, switch: Switch, caplog: pytest.LogCaptureFixture, key: str, body: bytes
) -> None:
    seen: list[tuple[Any, ...]] = []
    deltas: list[dict[str, float]] = []

    def send() -> Answer:
        request_id = f"dc-{uuid.uuid4().hex}"
        before = _counters(auth_server)
        headers = {
            "Authorization": f"Bearer {key}",
            "Content-Type": "application/json",
            "X-Request-Id": request_id,
        }
        with auth_server.client() as client:
            sent = answer(client.post(SEARCH, content=body, headers=headers))
        record = _access_record(caplog, request_id)
        seen.append(
            (record.__dict__["method"], record.__dict__["route"], record.__dict__["status"])
        )
        after = _counters(auth_server)
        deltas.append({k: v - before.get(k, 0.0) for k, v in after.items() if v != before.get(k)})
        return sent

    with caplog.at_level(logging.INFO, logger="powercontext.http.access"):
        on, off, went_direct = switch.both(send)
    assert on == off
    assert went_direct == (on[0] in (200, 403))  # a valid call, refused in `perform` or not
    route = SEARCH  # a 401 is refused before routing, and still labelled by its route
    assert seen == [("POST", route, on[0])] * 2
    assert deltas[0] == deltas[1]


@pytest.mark.parametrize(
    "query", ["tea", "raise-timeout", "raise-unavailable", "raise-invalid", "raise-crash"]
)
def test_endpoint_failures_are_answered_alike(
    open_server: Served, switch: Switch, fresh_scope: str, query: str
) -> None:
    """Without auth (no key at all) and with the endpoint's own errors: the rerank stage fails
    as the query says, and the app's exception handlers must answer both ways alike."""
    with open_server.client() as client:
        written = client.post(
            "/v1/memory/remember",
            json={"scope_id": fresh_scope, "entries": [{"text": "tea one"}, {"text": "tea two"}]},
        )
        assert written.status_code == 200
        body = {"scope_id": fresh_scope, "query": f"tea {query}", "include_rerank": "redacted"}
        on, off, went_direct = switch.both(lambda: answer(client.post(SEARCH, json=body)))
    assert went_direct
    # The rerank trace times the call: it (and so the length) may differ by a digit.
    assert (on[0], on[1] | {"content-length": None}, _timeless(on[2])) == (
        off[0],
        off[1] | {"content-length": None},
        _timeless(off[2]),
    )


def _timeless(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _timeless(v) for k, v in value.items() if "latency" not in k}
    if isinstance(value, list):
        return [_timeless(v) for v in value]
    return value
