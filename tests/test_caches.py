"""Per-process caches bounded by what they hold (meaning/caches.py): a worker cycling
many subjects keeps as many as fit, whatever their number, and never more."""

from __future__ import annotations

from collections import OrderedDict

from hypothesis import given
from hypothesis import strategies as st

from memlineage.meaning import caches

# keep, take or get a key (one of five), with a value of 0 to 9 units
steps = st.lists(
    st.tuples(st.sampled_from(["keep", "take", "get"]), st.integers(0, 4), st.integers(0, 9)),
    max_size=60,
)


@given(steps, st.integers(1, 20))
def test_the_last_kept_stay_while_their_sizes_fit(
    ops: list[tuple[str, int, int]], limit: int
) -> None:
    kept: caches.LastPerKey[int, int] = caches.LastPerKey(len_of, limit, registered=False)
    model: OrderedDict[int, int] = OrderedDict()
    for op, key, value in ops:
        if op == "keep":
            kept.keep(key, value)
            model.pop(key, None)
            model[key] = value
            while len(model) > 1 and sum(max(1, v) for v in model.values()) > limit:
                model.popitem(last=False)
        elif op == "take":
            assert kept.take(key) == model.pop(key, None)
        else:
            assert kept.get(key) == model.get(key)
    assert [kept.get(k) for k in range(5)] == [model.get(k) for k in range(5)]


def test_empty_values_are_bounded_in_number_too() -> None:
    kept: caches.LastPerKey[int, int] = caches.LastPerKey(len_of, 3, registered=False)
    for key in range(10):
        kept.keep(key, 0)
    assert [k for k in range(10) if kept.get(k) is not None] == [7, 8, 9]


def len_of(value: int) -> int:
    return value
