"""The bounded LRU map behind every cache of pure results (core and adapters alike)."""

from __future__ import annotations

import threading

from templiqx_contracts import LRU, digest_key

MEGABYTE = 1_000_000


def test_entries_are_bounded() -> None:
    cache: LRU[str, int] = LRU(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # now the most recently used
    cache.put("c", 3)
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (1, None, 3)
    assert len(cache) == 2


def test_total_weight_is_bounded() -> None:
    cache: LRU[str, str] = LRU(100, max_weight=10, weigh=len)
    cache.put("a", "xxxx")
    cache.put("b", "yyyy")
    cache.put("c", "zzzz")  # 12 > 10: the least recently used goes
    assert cache.get("a") is None
    assert cache.weight == 8
    cache.put("b", "y")  # replacing a value replaces its weight
    assert cache.weight == 5
    cache.put("huge", "w" * 11)  # heavier than the whole budget: never kept
    assert cache.get("huge") is None
    assert cache.weight == 5
    cache.clear()
    assert (len(cache), cache.weight) == (0, 0)


def test_digest_keys_are_short_and_distinct() -> None:
    assert len(digest_key(b"x" * MEGABYTE)) == 32
    assert digest_key(b"a") != digest_key(b"b")


def test_cached_builds_once_and_keeps_within_the_bounds() -> None:
    built: list[str] = []

    def build(value: str) -> str:
        built.append(value)
        return value

    cache: LRU[str, str] = LRU(10, max_weight=5, weigh=len)
    assert cache.cached("a", lambda: build("aaa")) == "aaa"
    assert cache.cached("a", lambda: build("other")) == "aaa"  # kept: not built again
    assert built == ["aaa"]
    assert cache.cached("big", lambda: build("bbbbbb")) == "bbbbbb"  # heavier than the bound
    assert "big" not in cache
    assert cache.cached("big", lambda: build("bbbbbb")) == "bbbbbb"
    assert built == ["aaa", "bbbbbb", "bbbbbb"]


def test_membership_does_not_refresh_an_entry() -> None:
    cache: LRU[str, int] = LRU(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert "a" in cache
    cache.put("c", 3)  # "a" is still the least recently used
    assert "a" not in cache
    assert "b" in cache
    assert "c" in cache


def test_concurrent_use_keeps_the_bounds() -> None:
    cache: LRU[int, int] = LRU(8, max_weight=100, weigh=lambda value: value % 20)

    def work(offset: int) -> None:
        for key in range(offset, offset + 500):
            cache.cached(key % 37, lambda key=key: key)

    threads = [threading.Thread(target=work, args=(n * 1000,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(cache) <= 8
    assert cache.weight <= 100


def test_every_cache_of_the_process_shares_one_ceiling() -> None:
    import gc

    from templiqx_contracts.lru import _BUDGET, cache_ceiling, cached_bytes, set_cache_ceiling

    gc.collect()  # the caches of earlier tests, and the modules' caches: emptied, so that the
    for cache in list(_BUDGET.caches):  # two below are the only ones holding anything
        cache.clear()
    first: LRU[str, str] = LRU(100, weigh=len)
    second: LRU[str, str] = LRU(100, weigh=len)
    baseline = cached_bytes()
    try:
        set_cache_ceiling(baseline + 1000)
        assert cache_ceiling() == baseline + 1000
        first.put("a", "x" * 700)
        second.put("b", "y" * 200)
        assert cached_bytes() == baseline + 900
        second.put("c", "z" * 200)  # 1,100 > 1,000: the heaviest cache gives up its oldest
        assert "a" not in first
        assert ("b" in second, "c" in second) == (True, True)
        assert cached_bytes() == baseline + 400
        second.put("d", "w" * 2000)  # heavier than the whole ceiling: never kept
        assert "d" not in second
        set_cache_ceiling(0)  # caching off: everything goes
        assert (len(first), len(second)) == (0, 0)
        first.put("e", "v")
        assert "e" not in first
    finally:
        set_cache_ceiling(None)
    assert cached_bytes() == baseline


def test_value_shape_counts_values_and_text() -> None:
    from templiqx_contracts.lru import validator_weight, value_shape

    assert value_shape({"a": [1, "xyz"]}) == (5, 4)  # the map, its key, the list, 1, "xyz"
    assert value_shape("") == (1, 0)
    # an enum of objects weighs far more than its encoded size (jsonschema-rs holds ~150x)
    schema = {"enum": [{"k": index} for index in range(100)]}
    assert validator_weight(schema) > 100 * len(str(schema))
