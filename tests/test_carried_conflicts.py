"""What a run derives from the unresolved conflicts, found again by identity (pure).

A run after a quiet tail is handed the last run's very tuple of conflicts, and after a
tail with conflicts among its events the same conflicts and the new ones after them
(consolidation/select.py). Each view derived from them (the conflicts' items, the
generator's sides, the gate's index, the manifest's ids) is then taken as remembered or
extended by the new conflicts alone; either way it must be what deriving it from the
whole tuple gives.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlineage.consolidation import consolidate, gate_delta
from memlineage.consolidation.generators import deterministic
from memlineage.meaning import caches
from memlineage.meaning.extract import items
from memlineage.model import Conflict

VIEWS: dict[str, tuple[caches.ByIdentity[Conflict, Any], Callable[[Sequence[Conflict]], Any]]] = {
    "the conflicts' items": (items.conflict_items, items._conflict_items),
    "the generator's sides": (deterministic._conflict_views, deterministic._views_of),
    "the gate's index": (gate_delta._unresolved, gate_delta._unresolved_of),
    "the manifest's ids": (consolidate._sorted_ids, consolidate._ids_sorted),
}


@st.composite
def conflicts(draw: st.DrawFn) -> tuple[Conflict, ...]:
    """Conflicts with distinct ids (in no order), sides among a few events, some resolved."""
    ids = draw(st.lists(st.integers(0, 99), unique=True, max_size=12))
    events = st.sampled_from([f"e{n}" for n in range(6)])
    return tuple(
        Conflict(
            id=f"c-{n}",
            a=draw(events),
            b=draw(events),
            key=draw(st.sampled_from((None, "budget"))),
            winner=draw(st.sampled_from((None, None, "e0"))),
        )
        for n in ids
    )


@pytest.mark.parametrize("view", VIEWS.values(), ids=VIEWS.keys())
@settings(max_examples=200, deadline=None)
@given(every=conflicts(), cut=st.integers(0, 12))
def test_a_view_extended_by_new_conflicts_is_the_view_of_them_all(
    view: tuple[caches.ByIdentity[Conflict, Any], Callable[[Sequence[Conflict]], Any]],
    every: tuple[Conflict, ...],
    cut: int,
) -> None:
    remembered, derive = view
    caches.clear_all()
    first = every[:cut]
    assert remembered(first) == derive(first)
    assert remembered(first) is remembered(first)  # the same tuple: found, not derived
    grown = first + every[cut:]  # the same conflicts first: extended by the others
    assert remembered(grown) == derive(grown)


def test_a_list_is_never_remembered() -> None:
    """A list may change under its id: it is derived every time."""
    caches.clear_all()
    listed = [Conflict(id="c-1", a="e1", b="e2")]
    first = consolidate._sorted_ids(listed)
    listed.append(Conflict(id="c-0", a="e3", b="e4"))
    assert consolidate._sorted_ids(listed) == ("c-0", "c-1") != first
