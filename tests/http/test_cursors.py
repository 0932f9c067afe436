"""List cursors are scope-local and opaque, on both backends (issue 19, item 7).

The old cursor carried the database-wide row key, so a tenant could read off how much other
tenants wrote between two of its own writes.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.http.live import backend_server


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def client(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[httpx.Client]:
    workdir = tmp_path_factory.mktemp(f"cursors-{request.param}")
    with (
        backend_server(request.param, workdir) as server,
        httpx.Client(base_url=server.url) as http,
    ):
        yield http


def _remember(client: httpx.Client, scope: str, texts: list[str]) -> None:
    body = {"scope_id": scope, "entries": [{"text": t} for t in texts]}
    assert client.post("/v1/memory/remember", json=body).status_code == 200


def _list(client: httpx.Client, scope: str, **extra: Any) -> httpx.Response:
    return client.post("/v1/memory/entries/list", json={"scope_id": scope, **extra})


def _decoded(cursor: str) -> str:
    assert cursor.startswith("c1.")
    body = cursor[3:]
    return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode()


def test_a_cursor_names_no_row_key_shared_with_other_scopes(client: httpx.Client) -> None:
    _remember(client, "tenant-b", ["b one", "b two"])
    _remember(client, "tenant-a", [f"a {i}" for i in range(40)])  # another tenant's volume
    _remember(client, "tenant-b", ["b three", "b four"])
    page = _list(client, "tenant-b", limit=3).json()
    cursor = page["next_cursor"]
    # Only this scope's revision and the last listed version's (random) id: nothing counts
    # the 40 entries tenant-a wrote in between.
    assert _decoded(cursor) == f"2:{page['entries'][-1]['entry_version_id']}"
    rest = _list(client, "tenant-b", limit=3, cursor=cursor).json()
    assert [e["text"] for e in page["entries"] + rest["entries"]] == [
        "b one",
        "b two",
        "b three",
        "b four",
    ]
    assert rest["next_cursor"] is None


def _cursor_of(revision: str, version_id: str) -> str:
    return "c1." + base64.urlsafe_b64encode(f"{revision}:{version_id}".encode()).decode()


def test_a_foreign_stale_or_tampered_cursor_is_invalid_cursor(client: httpx.Client) -> None:
    _remember(client, "tenant-c", ["c one", "c two", "c three"])
    _remember(client, "tenant-d", ["d one", "d two", "d three"])
    cursor = _list(client, "tenant-c", limit=1).json()["next_cursor"]
    assert _list(client, "tenant-c", limit=1, cursor=cursor).status_code == 200
    _, version_id = _decoded(cursor).split(":")
    forged_revision = "c1." + base64.urlsafe_b64encode(f"9:{version_id}".encode()).decode()
    bad = {
        "another scope": ("tenant-d", cursor),
        "another revision": ("tenant-c", forged_revision),
        "old format": ("tenant-c", "1:1"),
        "not base64": ("tenant-c", "c1.!!!"),
        "truncated": ("tenant-c", cursor[:-6]),
        **{
            f"revision {at!r}": ("tenant-c", _cursor_of(at, version_id))
            for at in ("-1", "0", str(2**63), "4_0", "\u0661", " 1")
        },
    }
    said = {
        "another scope": "names no entry version of scope 'tenant-d'",
        "another revision": "at revision 9, not 1: pass revision 9",
        "truncated": "names no entry version of scope 'tenant-c'",
    }
    for case, (scope, sent) in bad.items():
        response = _list(client, scope, limit=1, cursor=sent)
        assert response.status_code == 422, case
        assert response.json()["error"]["code"] == "invalid_cursor", case
        message = response.json()["error"]["message"]
        assert said.get(case, "") in message, case
        assert case != "another revision" or "pass revision" in message
        assert case == "another revision" or "pass revision" not in message, (case, message)


def test_a_scope_never_written_has_no_revision_or_cursor(client: httpx.Client) -> None:
    # Like search and the entry routes: a revision the scope never reached is not found.
    assert _list(client, "tenant-never").json()["memory_ref"] is None
    response = client.post(
        "/v1/memory/entries/list", json={"scope_id": "tenant-never", "revision": 1}
    )
    assert response.status_code == 404
    _remember(client, "tenant-e", ["e one", "e two"])
    cursor = _list(client, "tenant-e", limit=1).json()["next_cursor"]
    response = _list(client, "tenant-never", limit=1, cursor=cursor)
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "invalid_cursor"
