"""Differential check of server.direct on every JSON POST operation: valid bodies, wrong
types, extra and missing fields, huge numbers, NUL, non-UTF-8, duplicated keys, top-level
non-objects, empty and blank bodies, and every kind of key, each sent with the direct layer
on and off (see test_direct_calls_support). Status, JSON body and client-visible headers must
match, and the valid calls must really take the direct way, or the comparison proves nothing.

Reads send both to one scope. Writes send to two scopes prepared identically, the same calls
in the same order; their answers are compared with the scope name, ids and times blanked.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from powercontext.server.operations import OPERATIONS
from tests.http.conftest import KEY_A, KEY_ALL, KEY_B, KEY_FROM_FILE, Served
from tests.http.test_direct_calls_support import Answer, Switch, answer

JSON_POSTS = {
    op.http.path: op
    for op in OPERATIONS
    if op.http is not None and op.http.method == "POST" and op.http.raw is None
}
_BLANKED = frozenset({"entry_id", "entry_version_id", "created_at", "occurred_at", "changed_at"})
_JSON = "application/json"


@dataclass
class Prepared:
    scope: str
    citations: list[dict[str, Any]]

    @property
    def entry_ids(self) -> list[str]:
        return [str(c["entry_id"]) for c in self.citations]


def _prepare(served: Served, scope: str, retire_second: bool) -> Prepared:
    with served.client(KEY_ALL) as client:
        written = client.post(
            "/v1/memory/remember",
            json={
                "scope_id": scope,
                "entries": [{"kind": "fact", "text": "alpha tea"}, {"text": "beta coffee"}],
            },
        )
        assert written.status_code == 200, written.text
        citations = [entry["citation"] for entry in written.json()["entries"]]
        if retire_second:
            retired = client.post(
                "/v1/memory/entries/retire", json={"scope_id": scope, "citation": citations[1]}
            )
            assert retired.status_code == 200, retired.text
    return Prepared(scope, citations)


def _valid(path: str, p: Prepared) -> dict[str, Any]:
    s, c, e = p.scope, p.citations, p.entry_ids
    bodies: dict[str, dict[str, Any]] = {
        "/v1/memory/remember": {"scope_id": s, "kind": "fact", "text": "gamma tea"},
        "/v1/memory/search": {"scope_id": s, "query": "tea", "mode": "fts", "limit": 5},
        "/v1/memory/search/batch": {"scope_id": s, "searches": [{"query": "tea", "mode": "fts"}]},
        "/v1/memory/entries/list": {"scope_id": s, "limit": 10},
        "/v1/memory/entries/get": {"scope_id": s, "citation": c[0]},
        "/v1/memory/entries/revise": {"scope_id": s, "citation": c[0], "text": "alpha tea 2"},
        "/v1/memory/entries/retire": {"scope_id": s, "citation": c[0]},
        "/v1/memory/entries/reactivate": {"scope_id": s, "citation": c[1]},
        "/v1/memory/changes": {"scope_id": s, "since_revision": 0, "limit": 10},
        "/v1/memory/head": {"scope_id": s},
        "/v1/memory/entries/by-id": {"scope_id": s, "entry_id": e[0]},
        "/v1/memory/entries/history": {"scope_id": s, "entry_id": e[0]},
        "/v1/memory/forget": {"scope_id": s, "entry_ids": [e[0]]},
        "/v1/scopes/forget": {"scope_id": s},
    }
    return bodies[path]


Case = tuple[str, str | None, bytes]
"""(name, the Authorization header or None, the body sent)."""


def _dump(value: Any) -> bytes:
    return json.dumps(value).encode()


def _cases(valid: dict[str, Any]) -> list[Case]:
    ok = f"Bearer {KEY_ALL}"
    text = _dump(valid).decode()
    scope = valid["scope_id"]
    cases: list[Case] = [
        ("valid", ok, _dump(valid)),
        ("valid, lower-case scheme", f"bearer {KEY_ALL}", _dump(valid)),
        ("valid, two spaces", f"Bearer  {KEY_ALL}", _dump(valid)),
        ("valid, UTF-16", ok, text.encode("utf-16")),
        ("valid, UTF-8 BOM", ok, b"\xef\xbb\xbf" + _dump(valid)),
        ("valid, trailing newline", ok, _dump(valid) + b"\n"),
        ("no key", None, _dump(valid)),
        ("unknown key", "Bearer not-a-configured-key-999", _dump(valid)),
        ("basic scheme", f"Basic {KEY_ALL}", _dump(valid)),
        ("scheme only", "Bearer", _dump(valid)),
        ("key of another scope", f"Bearer {KEY_B}", _dump(valid)),
        ("file key of another scope", f"Bearer {KEY_FROM_FILE}", _dump(valid)),
        ("scope the key may not use", f"Bearer {KEY_A}", _dump(valid)),
        ("extra field", ok, _dump({**valid, "unexpected": 1})),
        ("no fields", ok, b"{}"),
        ("blank scope", ok, _dump({**valid, "scope_id": "  "})),
        ("NUL in scope", ok, _dump({**valid, "scope_id": scope + "\x00"})),
        ("raw NUL byte in a string", ok, text.replace(scope, scope + "\x00", 1).encode()),
        ("NUL byte after the body", ok, _dump(valid) + b"\x00"),
        ("non-UTF-8 byte", ok, text.replace(scope, scope + "\xff", 1).encode("latin-1")),
        ("lone surrogate", ok, text.replace(scope, scope + "\\ud800", 1).encode()),
        ("duplicated key, valid last", ok, f'{{"scope_id": "{scope}-o", {text[1:]}'.encode()),
        ("duplicated key, valid first", ok, f'{text[:-1]}, "scope_id": "{scope}-o"}}'.encode()),
        ("a 5000-digit number", ok, f'{text[:-1]}, "n": 1{"0" * 5000}}}'.encode()),
        ("NaN", ok, f'{text[:-1]}, "n": NaN}}'.encode()),
        ("deeply nested", ok, b"[" * 50_000 + b"]" * 50_000),
        ("trailing garbage", ok, _dump(valid) + b" x"),
        ("truncated", ok, _dump(valid)[:-1]),
        ("top-level array", ok, _dump([valid])),
        ("top-level string", ok, b'"scope"'),
        ("top-level number", ok, b"42"),
        ("top-level null", ok, b"null"),
        ("top-level true", ok, b"true"),
        ("empty body", ok, b""),
        ("empty body, no key", None, b""),
        ("whitespace body", ok, b" \n\t "),
    ]
    for name, value in valid.items():
        wrong: Any = 7 if isinstance(value, str) else "seven"
        rest = {k: v for k, v in valid.items() if k != name}
        cases += [
            (f"wrong type: {name}", ok, _dump({**valid, name: wrong})),
            (f"list for {name}", ok, _dump({**valid, name: [None]})),
            (f"huge number for {name}", ok, _dump({**valid, name: 10**30})),
            (f"infinite number for {name}", ok, f'{text[:-1]}, "{name}": 1e999}}'.encode()),
            (f"missing {name}", ok, _dump(rest)),
        ]
    return cases


def _normalized(answer: Answer, scopes: tuple[str, ...], ids: dict[str, str]) -> Answer:
    status, headers, body = answer
    text = json.dumps(body)
    for scope in scopes:
        text = text.replace(scope, "<scope>")
    for entry_id, name in ids.items():
        text = text.replace(entry_id, name)
    return status, headers, _blank(json.loads(text))


def _blank(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: "<x>" if k in _BLANKED else _blank(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_blank(v) for v in value]
    return value


@pytest.mark.parametrize("path", sorted(JSON_POSTS))
def test_every_request_is_answered_as_the_router_answers_it(
    auth_server: Served, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    writes = JSON_POSTS[path].writes
    tag = uuid.uuid4().hex[:10]
    reactivating = path.endswith("/reactivate")
    first = _prepare(auth_server, f"dc-d-{tag}", reactivating)
    second = _prepare(auth_server, f"dc-r-{tag}", reactivating) if writes else first
    ids = {
        **{e: f"<e{i}>" for i, e in enumerate(first.entry_ids)},
        **{e: f"<e{i}>" for i, e in enumerate(second.entry_ids)},
    }
    switch = Switch(monkeypatch)
    mismatches: list[str] = []
    with auth_server.client() as client:
        pairs = zip(_cases(_valid(path, first)), _cases(_valid(path, second)), strict=True)
        for (name, key, body_d), (_, _, body_r) in pairs:
            headers = {"Content-Type": _JSON}
            if key is not None:
                headers["Authorization"] = key
            sends = iter((body_d, body_r))

            def send(headers: dict[str, str] = headers, sends: Iterator[bytes] = sends) -> Answer:
                return answer(client.post(path, content=next(sends), headers=headers))

            on, off, went_direct = switch.both(send)
            if writes:
                on = _normalized(on, (first.scope, second.scope), ids)
                off = _normalized(off, (first.scope, second.scope), ids)
            if on != off:
                mismatches.append(f"{name}:\n  direct {on}\n  router {off}")
            if name == "valid" and not (went_direct and on[0] == 200):
                mismatches.append(f"{name}: went direct {went_direct}, status {on[0]}")
    assert not mismatches, "\n".join(mismatches)
