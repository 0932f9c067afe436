"""A well-formed JSON call goes straight to its endpoint (server.direct: no router, no
dependency solving; server CPU per request); every answer must stay the one FastAPI's own
handler gives, errors and their order included.

`Content-Type: application/json` takes the shortcut; `application/json; charset=utf-8` is
the same body through FastAPI's handler, so each case is sent both ways and compared.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from powercontext.server import direct
from powercontext.server.app import create_app
from powercontext.server.operations import OPERATIONS
from tests.http.conftest import KEY_A, KEY_B, Served

SHORTCUT = "application/json"
FASTAPI = "application/json; charset=utf-8"

CASES: dict[str, tuple[str | None, Any]] = {
    "valid": (KEY_A, {"scope_id": "scope-a", "query": "shortcut tea", "mode": "fts"}),
    "no key": (None, {"scope_id": "scope-a", "query": "tea"}),
    "unknown key": ("not-a-configured-key-999", {"scope_id": "scope-a", "query": "tea"}),
    "other scope": (KEY_B, {"scope_id": "scope-a", "query": "tea"}),
    "invalid body": (KEY_A, {"scope_id": "scope-a", "query": "tea", "limit": 0}),
    "extra field": (KEY_A, {"scope_id": "scope-a", "query": "tea", "nope": 1}),
    "not an object": (KEY_A, ["scope-a"]),
    "malformed JSON": (KEY_A, '{"scope_id": "scope-a", "query": '),
    "malformed JSON, no key": (None, '{"scope_id": '),
    "empty body": (KEY_A, ""),
}


def _send(served: Served, key: str | None, body: Any, content_type: str) -> tuple[int, Any]:
    raw = body if isinstance(body, str) else json.dumps(body)
    headers = {"Content-Type": content_type}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    with served.client() as client:
        response = client.post("/v1/memory/search", content=raw, headers=headers)
    return response.status_code, response.json()


@pytest.fixture(scope="module")
def seeded(auth_server: Served) -> Served:
    with auth_server.client(KEY_A) as client:
        for text in ("shortcut tea notes", "shortcut coffee notes", "tea again"):
            written = client.post(
                "/v1/memory/remember", json={"scope_id": "scope-a", "kind": "fact", "text": text}
            )
            assert written.status_code == 200
    return auth_server


@pytest.mark.parametrize("case", list(CASES))
def test_the_shortcut_answers_as_fastapi_does(seeded: Served, case: str) -> None:
    key, body = CASES[case]
    shortcut = _send(seeded, key, body, SHORTCUT)
    fastapi = _send(seeded, key, body, FASTAPI)
    assert shortcut == fastapi
    assert (shortcut[0] == 200) == (case == "valid")


def test_only_well_formed_calls_take_the_shortcut(
    seeded: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    taken: list[bool] = []
    original = direct._well_formed

    async def counted(*args: Any) -> Any:
        ready = await original(*args)
        taken.append(ready is not None)
        return ready

    monkeypatch.setattr(direct, "_well_formed", counted)
    for case, (key, body) in CASES.items():
        taken.clear()
        _send(seeded, key, body, SHORTCUT)
        # A key and a body that validate take it (the scope rule then refuses in `perform`,
        # on either path); a call without a key may be refused by the header gate first.
        if case in ("valid", "other scope"):
            assert taken == [True], case
        else:
            assert True not in taken, case


def test_every_json_operation_has_a_direct_target() -> None:
    app = create_app()
    targets = direct.direct_targets(app, OPERATIONS)
    json_posts = {
        op.http.path
        for op in OPERATIONS
        if op.http is not None and op.http.method == "POST" and op.http.raw is None
    }
    assert set(targets) == json_posts
    for path, target in targets.items():
        assert target.route.path == path


def test_a_direct_call_is_counted_under_its_route(seeded: Served) -> None:
    status, _ = _send(seeded, KEY_A, CASES["valid"][1], SHORTCUT)
    assert status == 200
    with seeded.client(KEY_A) as client:
        metrics = client.get("/metrics").text
    assert 'method="POST",route="/v1/memory/search",status="200"' in metrics
    assert 'method="POST",route="unmatched",status="200"' not in metrics
