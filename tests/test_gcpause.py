"""The cyclic collector paused during a consolidation, and always given back as it was."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from memlineage import Memory
from memlineage.consolidation import generation
from memlineage.consolidation.gcpause import collector_paused, pauses_collector


@pytest.fixture(autouse=True)
def collector_enabled() -> Iterator[None]:
    gc.enable()
    yield
    gc.enable()


def test_a_consolidation_pauses_the_collector_and_gives_it_back(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory.add(
        [{"id": f"m-{i}", "subject": "u", "text": f"Keep ticket T-{i} open"} for i in range(5)]
    )
    seen: list[bool] = []
    generate = generation.generate

    def observed(*args: Any, **kwargs: Any) -> Any:
        seen.append(gc.isenabled())
        return generate(*args, **kwargs)

    monkeypatch.setattr(generation, "generate", observed)
    assert memory.consolidate("u").switched
    assert seen == [False]  # paused while the summary was built
    assert gc.isenabled()


def test_a_collector_disabled_before_stays_disabled() -> None:
    gc.disable()
    with collector_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_overlapping_pauses_in_threads_enable_the_collector_once_all_left() -> None:
    inside = threading.Barrier(2)
    first_left = threading.Event()
    states: dict[str, bool] = {}

    def first() -> None:
        with collector_paused():
            inside.wait()
        first_left.set()

    def second() -> None:
        with collector_paused():
            inside.wait()
            first_left.wait(5)
            states["after the first left"] = gc.isenabled()
        states["after both left"] = gc.isenabled()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert states == {"after the first left": False, "after both left": True}


def test_an_exception_inside_gives_the_collector_back() -> None:
    @pauses_collector
    def fails() -> None:
        raise ValueError("boom")

    with pytest.raises(ValueError):
        fails()
    assert gc.isenabled()
