"""The LRU map behind the SQLite backend's per-scope postings and vector matrices."""

from __future__ import annotations

from powercontext.storage.sqlite.lru import LruCache


def test_a_value_is_made_once_and_then_reused() -> None:
    made: list[str] = []
    cache: LruCache[str, list[str]] = LruCache(2)

    def make(key: str) -> list[str]:
        made.append(key)
        return [key]

    first = cache.get("a", lambda: make("a"))
    assert cache.get("a", lambda: make("a")) is first
    assert made == ["a"]


def test_the_least_recently_used_is_evicted_beyond_the_bound() -> None:
    cache: LruCache[str, str] = LruCache(2)
    cache.get("a", lambda: "a1")
    cache.get("b", lambda: "b1")
    cache.get("a", lambda: "a2")  # a is now the most recent
    cache.get("c", lambda: "c1")  # evicts b
    assert cache.get("a", lambda: "a3") == "a1"
    assert cache.get("b", lambda: "b2") == "b2"


def test_drop_forgets_the_matching_keys_and_clear_all() -> None:
    cache: LruCache[tuple[str, str], str] = LruCache(8)
    for key in [("s1", "p1"), ("s1", "p2"), ("s2", "p1")]:
        cache.get(key, lambda key=key: "-".join(key))
    cache.drop(lambda key: key[0] == "s1")
    assert cache.get(("s1", "p1"), lambda: "new") == "new"
    assert cache.get(("s2", "p1"), lambda: "new") == "s2-p1"
    cache.clear()
    assert cache.get(("s2", "p1"), lambda: "newer") == "newer"
