"""The LangGraph store: the behaviour LangMem relies on, on both backends."""

from __future__ import annotations

import asyncio
import threading
from typing import NoReturn

import pytest
from langgraph.store.base import InvalidNamespaceError

import wire
from memlineage import ArtifactStatus, Memory
from memlineage.errors import BadInput, DuplicateEventId
from memlineage.interfaces.langgraph import MemlineageStore
from memlineage.model import NewEvent
from memlineage.store.protocol import KeyWrite

NS = ("memories", "user-7")


@pytest.fixture
def store(db_url: str) -> MemlineageStore:
    lg = MemlineageStore(db_url, tenant="acme")
    yield lg  # type: ignore[misc]
    lg.close()


def test_put_get_replace_keeps_history(store: MemlineageStore, db_url: str) -> None:
    store.put(NS, "food", {"content": "I'm vegan."})
    item = store.get(NS, "food")
    assert item is not None and item.value == {"content": "I'm vegan."}
    store.put(NS, "food", {"content": "I eat fish again."})
    store.put(NS, "food", {"content": "I eat fish again."})  # the same value: a no-op
    item = store.get(NS, "food")
    assert item is not None and item.value == {"content": "I eat fish again."}
    assert item.created_at <= item.updated_at
    with Memory(db_url, tenant="acme") as memory:  # append-only: the first value is still there
        texts = [e.text for e in memory.events("memories/user-7")]
        valid = [e.text for e in memory.events("memories/user-7", valid_only=True)]
    assert texts == ["I'm vegan.", "I eat fish again."]
    assert valid == ["I eat fish again."]


def test_structured_values_round_trip(store: MemlineageStore) -> None:
    value = {"kind": "Memory", "content": {"content": "Never deploy on Fridays."}, "n": 3}
    store.put(NS, "rule", value)
    item = store.get(NS, "rule")
    assert item is not None and item.value == value
    store.put(NS, "json-ish", {"content": '{"a": 1}'})
    item = store.get(NS, "json-ish")
    assert item is not None and item.value == {"content": '{"a": 1}'}


def test_delete_revokes_and_get_returns_none(store: MemlineageStore, db_url: str) -> None:
    store.put(NS, "music", {"content": "I love jazz."})
    store.delete(NS, "music")
    assert store.get(NS, "music") is None
    assert store.get(NS, "never-written") is None
    assert store.get(("nobody",), "x") is None
    store.put(NS, "music", {"content": "I love opera."})  # a key can come back after delete
    item = store.get(NS, "music")
    assert item is not None and item.value == {"content": "I love opera."}
    with Memory(db_url, tenant="acme") as memory:
        assert "I love jazz." not in [
            e.text for e in memory.events(NS[0] + "/" + NS[1], valid_only=True)
        ]


def test_a_key_is_read_apart_from_the_keys_that_extend_it(store: MemlineageStore) -> None:
    """A key is read on its own (by its id prefix): "a" never sees the versions of "a:1"."""
    store.put(NS, "a:1", {"content": "I live in Lyon."})
    store.put(NS, "a:1", {"content": "I live in Paris."})
    assert store.get(NS, "a") is None
    store.put(NS, "a", {"content": "Tea, no sugar."})
    store.put(NS, "a", {"content": "Coffee, black."})
    first, second = store.get(NS, "a"), store.get(NS, "a:1")
    assert first is not None and first.value == {"content": "Coffee, black."}
    assert second is not None and second.value == {"content": "I live in Paris."}
    store.delete(NS, "a")
    assert store.get(NS, "a") is None
    assert store.get(NS, "a:1") is not None
    assert [i.key for i in store.search(NS)] == ["a:1"]


def test_a_key_whose_latest_value_is_quarantined_has_no_value(
    store: MemlineageStore, db_url: str
) -> None:
    store.put(NS, "tool", {"content": "Use the staging key."})
    store.put(NS, "tool", {"content": "Use the production key."})
    with Memory(db_url, tenant="acme") as memory:
        latest = memory.events("memories/user-7")[-1].id
        memory.set_trust_policy(block=["injection"])
        memory.trust(latest, taint=["injection"])
    assert store.get(NS, "tool") is None
    assert store.search(NS) == []


def test_search_by_query_ranks_the_matching_memory_first(store: MemlineageStore) -> None:
    store.put(NS, "a", {"content": "My office is in Madrid."})
    store.put(NS, "b", {"content": "I am allergic to peanuts."})
    store.put(NS, "c", {"content": "The deploy window closes at 17:00."})
    store.put(("memories", "user-8"), "a", {"content": "I am allergic to cats."})
    results = store.search(NS, query="allergic peanuts", limit=2)
    assert results[0].key == "b" and results[0].namespace == NS
    everything = store.search(("memories",), limit=10)
    assert {(r.namespace, r.key) for r in everything} == {
        (NS, "a"),
        (NS, "b"),
        (NS, "c"),
        (("memories", "user-8"), "a"),
    }
    assert store.search(NS, filter={"content": "My office is in Madrid."})[0].key == "a"


def test_list_namespaces_and_async(store: MemlineageStore) -> None:
    store.put(NS, "a", {"content": "x"})
    store.put(("memories", "user-8"), "a", {"content": "y"})
    store.put(("projects", "apollo"), "a", {"content": "z"})
    assert store.list_namespaces(prefix=("memories",)) == [NS, ("memories", "user-8")]
    assert store.list_namespaces(max_depth=1) == [("memories",), ("projects",)]

    async def roundtrip() -> object:
        await store.aput(("async",), "k", {"content": "async value"})
        return await store.aget(("async",), "k")

    item = asyncio.run(roundtrip())
    assert item is not None and item.value == {"content": "async value"}  # type: ignore[attr-defined]
    with pytest.raises(InvalidNamespaceError):
        store.put(("a.b",), "k", {"content": "x"})  # as LangGraph's own stores refuse it


def test_a_slash_inside_a_namespace_label_is_part_of_the_label(store: MemlineageStore) -> None:
    # as in InMemoryStore: ("users", "a/b") is two labels, not three
    store.put(("users", "a/b"), "k", {"content": "slashed"})
    store.put(("users", "a", "b"), "k", {"content": "nested"})
    item = store.get(("users", "a/b"), "k")
    assert item is not None and item.value == {"content": "slashed"}
    assert item.namespace == ("users", "a/b")
    assert store.list_namespaces(prefix=("users",)) == [("users", "a", "b"), ("users", "a/b")]
    assert [r.value["content"] for r in store.search(("users", "a/b"))] == ["slashed"]
    assert [r.value["content"] for r in store.search(("users", "a"))] == ["nested"]


def test_a_put_after_a_delete_starts_a_new_item(store: MemlineageStore) -> None:
    store.put(NS, "music", {"content": "I love jazz."})
    first = store.get(NS, "music")
    store.delete(NS, "music")
    store.put(NS, "music", {"content": "I love opera."})
    again = store.get(NS, "music")
    assert first is not None and again is not None
    assert again.created_at > first.created_at  # a new item, as in LangGraph's own stores
    store.put(NS, "music", {"content": "I love fado."})
    replaced = store.get(NS, "music")
    assert replaced is not None and replaced.created_at == again.created_at


def test_a_query_ranks_by_the_text_of_a_value_not_by_its_field_names(
    store: MemlineageStore,
) -> None:
    store.put(NS, "a", {"content": "The printer jammed.", "category": "office", "source": "chat"})
    store.put(NS, "b", {"content": "Category theory is my hobby."})
    assert store.search(NS, query="category")[0].key == "b"
    found = store.search(NS, query="category")
    assert [r.key for r in found if (r.score or 0) > 0] == ["b"]


CONCEPTS = {"diet": ("vegan", "eat", "food", "meat"), "pastime": ("pottery", "fun", "hobby")}


def concept_vectors(texts: list[str]) -> list[list[float]]:
    """A stand-in for an embeddings model: one dimension per concept, by keyword."""
    rows = []
    for text in texts:
        words = text.lower()
        row = [float(any(k in words for k in keys)) for keys in CONCEPTS.values()]
        rows.append([*row, 0.1])
    return rows


def test_the_langgraph_index_configuration_gives_search_by_meaning(db_url: str) -> None:
    index = {"dims": 3, "embed": concept_vectors, "fields": ["text"]}
    lg = MemlineageStore(db_url, tenant="acme", index=index)  # type: ignore[arg-type]
    try:
        lg.put(NS, "diet", {"text": "I'm vegan.", "tags": ["pottery"]})
        lg.put(NS, "hobby", {"text": "Melanie throws pots on weekends: pottery."})
        lg.put(NS, "other", {"text": "The office moved to Lyon."})
        found = lg.search(NS, query="what does the user eat", limit=3)
        assert found[0].key == "diet"  # no word in common; the tags are not indexed
        assert lg.search(NS, query="any fun plans", limit=1)[0].key == "hobby"
    finally:
        lg.close()


def test_async_methods_on_postgres_await_the_server_without_threads(pg_url: str) -> None:
    """Many concurrent aput/aget/asearch on PostgreSQL start no thread: they await
    psycopg's async pool on the event loop (sync and async calls see the same data)."""
    store = MemlineageStore(pg_url, tenant="acme")
    store.put(NS, "seed", {"content": "I'm vegan."})

    async def many() -> list[object]:
        before = set(threading.enumerate())
        puts = [store.aput(("agents", f"a-{n}"), "k", {"content": f"value {n}"}) for n in range(20)]
        await asyncio.gather(*puts)
        got = await asyncio.gather(*(store.aget(("agents", f"a-{n}"), "k") for n in range(20)))
        found = await store.asearch(NS, query="diet")
        assert set(threading.enumerate()) <= before  # no thread was started for any of it
        await store.aclose()
        return [*got, *found]

    results = asyncio.run(many())
    assert [r.value["content"] for r in results[:20]] == [f"value {n}" for n in range(20)]  # type: ignore[attr-defined]
    assert results[20].key == "seed"  # type: ignore[attr-defined]
    assert store.get(("agents", "a-3"), "k").value == {"content": "value 3"}  # type: ignore[union-attr]
    store.close()


def test_a_keyed_write_appends_replaces_and_revokes_under_one_lock(memory: Memory) -> None:
    """The store's write of a keyed value: the next version supersedes the current one, the
    same text changes nothing, a revoke ends the value and a later write starts anew."""
    store, first = memory.store, NewEvent(id="k:0", subject="s", text="one")

    def write(value: NewEvent | None) -> KeyWrite:
        return store.write_key("acme", "s", "k:", value, "gone")

    assert write(first) == KeyWrite("appended", "k:1")  # the store numbers the versions
    assert write(first) == KeyWrite("unchanged", "k:1")
    assert write(NewEvent(id="k:0", subject="s", text="two")) == KeyWrite("appended", "k:2")
    assert write(None) == KeyWrite("revoked", "k:2")
    assert write(None) == KeyWrite("unchanged", None)
    assert write(NewEvent(id="k:0", subject="s", text="three")) == KeyWrite("appended", "k:3")
    events = {e.id: e for e in memory.events("s")}
    assert events["k:2"].supersedes == "k:1" and events["k:3"].supersedes is None
    assert [e.id for e in memory.events("s", valid_only=True)] == ["k:3"]
    current = store.key_versions("acme", "s", "k:").current
    assert current is not None and current.id == "k:3"


def test_a_refused_put_changes_nothing_and_the_store_goes_on(
    store: MemlineageStore, db_url: str
) -> None:
    """A refusal inside the put's transaction (a version id past 200 characters, the next
    version's id held by another subject) rolls it back; the next put works."""
    store.put(NS, "k", {"content": "first"})
    with pytest.raises(BadInput):
        store.put(NS, "x" * 190, {"content": "too long an id"})
    with Memory(db_url, tenant="acme") as memory:
        memory.add([{"id": "lg:memories/user-7:taken:1", "subject": "other", "text": "mine"}])
    with pytest.raises(DuplicateEventId):
        store.put(NS, "taken", {"content": "the id is another subject's"})
    store.put(NS, "k", {"content": "second"})
    item = store.get(NS, "k")
    assert item is not None and item.value == {"content": "second"}
    assert [i.key for i in store.search(NS)] == ["k"]


def test_a_delete_in_a_namespace_never_written_leaves_no_namespace(store: MemlineageStore) -> None:
    store.delete(("ghost",), "x")
    assert store.list_namespaces() == []


def test_a_new_value_or_a_delete_stales_the_summary_of_the_old_one_and_queues_a_rebuild(
    store: MemlineageStore, db_url: str
) -> None:
    store.put(NS, "diet", {"content": "I'm vegan."})
    store.put(NS, "city", {"content": "I live in Lyon."})
    with Memory(db_url, tenant="acme") as memory:
        first = memory.consolidate("memories/user-7").artifact
    store.put(NS, "diet", {"content": "I eat fish again."})
    with Memory(db_url, tenant="acme") as memory:
        assert {a.id: a.status for a in memory.artifacts()}[first.id] is ArtifactStatus.STALE
        assert [(j.subject, j.reason) for j in memory.jobs()] == [("memories/user-7", "stale")]
        second = memory.consolidate("memories/user-7").artifact
    store.delete(NS, "city")
    with Memory(db_url, tenant="acme") as memory:
        assert {a.id: a.status for a in memory.artifacts()}[second.id] is ArtifactStatus.STALE


def test_puts_past_the_tail_threshold_queue_a_consolidation(
    store: MemlineageStore, db_url: str
) -> None:
    with Memory(db_url, tenant="acme") as memory:
        memory.set_tail_threshold(2)
    for n in range(3):
        store.put(NS, f"k{n}", {"content": f"value {n}"})
    with Memory(db_url, tenant="acme") as memory:
        assert [(j.subject, j.reason) for j in memory.jobs()] == [("memories/user-7", "tail")]


def test_puts_past_the_tail_threshold_queue_one_job_that_names_the_tail(
    store: MemlineageStore, db_url: str
) -> None:
    """The tail trigger of a put, whichever path it takes (PostgreSQL puts a new key in
    one server function), queues as the append's trigger does."""
    with Memory(db_url, tenant="acme") as memory:
        memory.set_tail_threshold(2)
    for n in range(4):
        store.put(NS, f"k{n}", {"content": f"value {n}"})
    with Memory(db_url, tenant="acme") as memory:
        jobs = [(j.subject, j.state, j.reason, j.detail, j.attempts) for j in memory.jobs()]
    assert jobs == [("memories/user-7", "queued", "tail", "tail of 4 events > 2", 0)]


def test_a_put_of_a_key_another_store_wrote_replaces_its_value(db_url: str) -> None:
    """A store that has not seen a key yet puts it as a new key only if the subject has no
    event in the key's range: another store's version is superseded, and a key that
    extends this one is left alone."""
    first = MemlineageStore(db_url, tenant="acme")
    first.put(NS, "diet", {"content": "I'm vegan."})
    first.put(NS, "food:1", {"content": "a key that extends food"})
    first.close()
    second = MemlineageStore(db_url, tenant="acme")
    try:
        second.put(NS, "diet", {"content": "Fish too."})
        second.put(NS, "food", {"content": "Lentils."})
        assert (second.get(NS, "diet") or fail()).value == {"content": "Fish too."}
        assert (second.get(NS, "food") or fail()).value == {"content": "Lentils."}
        assert (second.get(NS, "food:1") or fail()).value == {"content": "a key that extends food"}
    finally:
        second.close()
    with Memory(db_url, tenant="acme") as memory:
        events = memory.events("memories/user-7")
        states = {s.id: s.state for s in events}
    assert [e.seq for e in events] == [1, 2, 3, 4]  # a put that was not new took no seq
    assert states == {
        "lg:memories/user-7:diet:1": "superseded",
        "lg:memories/user-7:food:1:1": "valid",
        "lg:memories/user-7:diet:2": "valid",
        "lg:memories/user-7:food:1": "valid",
    }


def fail() -> NoReturn:
    raise AssertionError("no item")


def test_a_put_on_postgres_costs_two_round_trips_and_a_get_one(pg_url: str) -> None:
    """A put is one transaction: its lock and every read it decides by go out together,
    then its writes with COMMIT; a new key's put is one statement (a server function),
    and a get one statement (tests/wire.py)."""
    relay = wire.Relay(pg_url)
    store = MemlineageStore(relay.url_through(pg_url), tenant="acme")
    try:
        store.put(NS, "warm", {"content": "a first put starts the namespace"})
        trips = {
            "put new": relay.count(lambda: store.put(NS, "diet", {"content": "I'm vegan."})),
            "put replace": relay.count(lambda: store.put(NS, "diet", {"content": "Fish too."})),
            "put same": relay.count(lambda: store.put(NS, "diet", {"content": "Fish too."})),
            "get": relay.count(lambda: store.get(NS, "diet")),
            "delete": relay.count(lambda: store.delete(NS, "diet")),
        }
    finally:
        store.close()
        relay.close()
    assert trips == {"put new": 1, "put replace": 2, "put same": 2, "get": 1, "delete": 2}
