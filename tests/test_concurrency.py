"""Concurrency and crashes with real processes and real connections, on both backends."""

from __future__ import annotations

import multiprocessing
import time

import pytest

import workers
from memlineage import ArtifactStatus, Memory
from memlineage.consolidation.consolidate import prepare

SPAWN = multiprocessing.get_context("spawn")
pytestmark = pytest.mark.slow


def run_all(procs: list[multiprocessing.process.BaseProcess], timeout: float = 300) -> None:
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout)
        assert proc.exitcode == 0, f"{proc.name} exited with {proc.exitcode}"


def test_concurrent_appenders_get_gapless_unique_seqs(db_url: str) -> None:
    writers, per_writer = 4, 1000
    Memory(db_url, tenant="acme").close()  # migrate once, before the race
    barrier = SPAWN.Barrier(writers)
    run_all(
        [
            SPAWN.Process(
                target=workers.append_one_by_one,
                args=(db_url, "acme", "user-7", f"w{w}", per_writer, barrier),
            )
            for w in range(writers)
        ]
    )
    with Memory(db_url, tenant="acme") as memory, memory.store.reader("acme") as reader:
        events = reader.events("user-7")
        head = reader.head("user-7")
    assert [e.seq for e in events] == list(range(1, writers * per_writer + 1))
    assert len({e.id for e in events}) == writers * per_writer
    assert head is not None and head.clock.high_water == writers * per_writer
    for w in range(writers):  # each writer's own events keep their order
        mine = [int(e.id.split("-")[1]) for e in events if e.id.startswith(f"w{w}-")]
        assert mine == list(range(per_writer))


def test_concurrent_adds_of_one_event_store_it_once(db_url: str) -> None:
    """No check-then-insert race: racing retries of one event leave one row."""
    racers = 6
    Memory(db_url, tenant="acme").close()
    barrier = SPAWN.Barrier(racers)
    results = SPAWN.SimpleQueue()
    run_all(
        [
            SPAWN.Process(target=workers.append_same_event, args=(db_url, "acme", barrier, results))
            for _ in range(racers)
        ]
    )
    created = [results.get() for _ in range(racers)]
    assert created.count(True) == 1
    with Memory(db_url, tenant="acme") as memory, memory.store.reader("acme") as reader:
        assert [e.id for e in reader.events("user-7")] == ["dup-1"]


@pytest.mark.parametrize("over_a_parent", [False, True], ids=["first", "over-a-parent"])
def test_revocation_racing_a_switch_never_leaves_a_revoked_source_recallable(
    db_url: str, over_a_parent: bool
) -> None:
    """Whichever commits first, a published artifact never outlives its revoked input.

    ``over-a-parent``: the candidate is built on a published summary that read the
    revoked event, and its switch re-validates only the events it added (issue #26):
    the revocation must still refuse it or stale it."""
    rounds = 8
    for round_no in range(rounds):
        subject = f"user-{round_no}"
        with Memory(db_url, tenant="acme") as memory:
            memory.add(
                [
                    {"id": f"{subject}-m{i}", "subject": subject, "text": f"fact {i}"}
                    for i in range(5)
                ]
            )
            if over_a_parent:
                parent = memory.consolidate(subject).artifact.id
                memory.add([{"id": f"{subject}-m5", "subject": subject, "text": "fact 5"}])
            candidate = prepare(memory.store, "acme", subject)
            if over_a_parent:
                assert candidate.manifest.derived_from_artifact == parent
        barrier = SPAWN.Barrier(2)
        results = SPAWN.SimpleQueue()
        run_all(
            [
                SPAWN.Process(
                    target=workers.switch_at_barrier,
                    args=(db_url, "acme", candidate.id, barrier, results),
                ),
                SPAWN.Process(
                    target=workers.revoke_at_barrier,
                    args=(db_url, "acme", f"{subject}-m2", barrier, results),
                ),
            ]
        )
        outcome = dict(results.get() for _ in range(2))
        assert outcome["revoke"] is True
        with Memory(db_url, tenant="acme") as memory:
            recalled = memory.recall(subject)
            statuses = {a.id: a.status for a in memory.artifacts(subject)}
        assert recalled.mode == "raw"
        assert f"{subject}-m2" not in [e.id for e in recalled.events]
        # Switched first: the revocation staled it. Revoked first: the candidate went
        # stale with it and the switch was refused. Never published and fresh.
        assert statuses[candidate.id] is ArtifactStatus.STALE
        assert set(statuses.values()) == {ArtifactStatus.STALE}
        assert recalled.artifact_id is None


def test_crash_between_artifact_write_and_switch_leaves_nothing_half_done(db_url: str) -> None:
    with Memory(db_url, tenant="acme") as memory:
        memory.add(
            [
                {"id": f"m-{i}", "subject": "user-7", "text": f"Budget line {i}: 12 EUR"}
                for i in range(1, 6)
            ]
        )
    results = SPAWN.SimpleQueue()
    proc = SPAWN.Process(
        target=workers.write_artifact_then_die, args=(db_url, "acme", "user-7", results)
    )
    proc.start()
    proc.join(60)
    assert proc.exitcode == -9  # SIGKILL
    orphan = results.get()
    with Memory(db_url, tenant="acme") as memory:  # the store opens after the crash
        assert {a.id: a.status for a in memory.artifacts()}[orphan] is ArtifactStatus.CANDIDATE
        recalled = memory.recall("user-7")
        assert recalled.mode == "raw" and recalled.artifact_id is None
        assert [e.id for e in recalled.events] == [f"m-{i}" for i in range(1, 6)]
        assert memory.consolidate("user-7").switched  # and consolidation goes on
        assert memory.recall("user-7").mode == "summary"


def test_a_revocation_waits_for_a_switch_holding_the_lock_then_stales_it(db_url: str) -> None:
    """I7 across processes: the revoke queues on the clock lock, then sees the switch."""
    with Memory(db_url, tenant="acme") as memory:
        memory.add([{"id": f"m-{i}", "subject": "user-7", "text": f"fact {i}"} for i in range(5)])
        candidate = prepare(memory.store, "acme", "user-7")
    holding, release, starting = SPAWN.Event(), SPAWN.Event(), SPAWN.Event()
    results = SPAWN.SimpleQueue()
    switcher = SPAWN.Process(
        target=workers.switch_holding_the_lock,
        args=(db_url, "acme", candidate.id, holding, release, results),
    )
    switcher.start()
    assert holding.wait(60), "the switch never reached its CAS"
    revoker = SPAWN.Process(
        target=workers.revoke_when_told, args=(db_url, "acme", "m-2", starting, results)
    )
    revoker.start()
    assert starting.wait(60)
    time.sleep(1.0)  # ample time for an unblocked revoke to finish
    assert results.empty(), "the revoke did not wait for the other process's lock"
    release.set()
    for proc in (switcher, revoker):
        proc.join(60)
        assert proc.exitcode == 0
    assert [results.get(), results.get()] == [("switch", True), ("revoke", True)]
    with Memory(db_url, tenant="acme") as memory:
        status = {a.id: a.status for a in memory.artifacts("user-7")}[candidate.id]
        recalled = memory.recall("user-7")
    assert status is ArtifactStatus.STALE
    assert recalled.mode == "raw" and "m-2" not in [e.id for e in recalled.events]


def test_concurrent_langgraph_puts_of_one_key_all_land_and_the_last_wins(db_url: str) -> None:
    """As LangGraph's own stores: racing puts of one key never fail; each is a version,
    and get returns the value of the last one."""
    from memlineage.interfaces.langgraph import MemlineageStore, decode

    writers, times = 3, 30
    Memory(db_url, tenant="acme").close()
    barrier = SPAWN.Barrier(writers)
    run_all(
        [
            SPAWN.Process(
                target=workers.put_one_key, args=(db_url, "acme", f"w{w}", times, barrier)
            )
            for w in range(writers)
        ]
    )
    with Memory(db_url, tenant="acme") as memory:
        states = memory.events("memories/user-7")
    assert len(states) == writers * times  # every put is a version, none lost
    valid = [s for s in states if s.state == "valid"]
    assert [s.id for s in valid] == [states[-1].id]  # each replaced the one before it
    store = MemlineageStore(db_url, tenant="acme")
    item = store.get(("memories", "user-7"), "diet")
    store.close()
    assert item is not None and item.value == decode(states[-1].text)
