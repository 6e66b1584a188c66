"""Fan-out: one event feeding 1,000 artifacts through parents. Every invalidating
operation (revoke, replacement, a trust policy upgrade, erasure) stales exactly its
descendants, recall goes raw, and a rebuild publishes again."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memlineage import Memory
from memlineage.canonical import input_root
from memlineage.model import Alias, Artifact, ArtifactStatus, GateReport, Manifest

FAN_OUT = 1_000


def synthetic(
    subject: str, artifact_id: str, inputs: tuple[str, ...], parent: str | None
) -> Artifact:
    manifest = Manifest(
        artifact_id=artifact_id,
        subject=subject,
        new_covers_through=0,
        input_epoch=0,
        expected_alias=Alias(),
        input_ids=inputs,
        input_root=input_root(()),
        expected_conflicts=(),
        selector_version="v1",
        prompt_version="test",
        model_snapshot="test",
        derived_from_artifact=parent,
    )
    return Artifact(
        artifact_id, subject, ArtifactStatus.SUPERSEDED, manifest, None, GateReport(True)
    )


def grow(memory: Memory, root_event: str, prefix: str, count: int) -> set[str]:
    """A tree of ``count`` artifacts under one event: node k's parent is node (k-1)//3."""
    ids = [f"{prefix}{k:04d}" for k in range(count)]
    for k, artifact_id in enumerate(ids):
        parent = ids[(k - 1) // 3] if k else None
        inputs = (root_event,) if k == 0 else ()
        memory.store.write_artifact(memory.tenant, synthetic("user-7", artifact_id, inputs, parent))
    return set(ids)


def statuses(memory: Memory) -> dict[str, str]:
    return {a.id: str(a.status) for a in memory.artifacts("user-7")}


def revoke(memory: Memory) -> set[str]:
    return set(memory.revoke("e-1").stale)


def replace(memory: Memory) -> set[str]:
    memory.add(
        [{"id": "e-1b", "subject": "user-7", "text": "Deploy on Mondays.", "supersedes": "e-1"}]
    )
    return {a for a, s in statuses(memory).items() if s == "stale"}


def taint_upgrade(memory: Memory) -> set[str]:
    _, rounds = memory.set_trust_policy(block=["injection", "rumour"], batch=1)
    return {s for r in rounds for a in r.affected for s in a.stale}


def erase(memory: Memory) -> set[str]:
    return set(memory.erase("e-1", reason="data-protection request", by="dpo").stale)


@pytest.mark.parametrize("invalidate", [revoke, replace, taint_upgrade, erase])
def test_an_invalidated_source_stales_exactly_its_descendants(
    memory: Memory, invalidate: Callable[[Memory], set[str]]
) -> None:
    memory.set_trust_policy(block=["injection"])  # a rumour is admitted, for now
    memory.add(
        [
            {"id": "e-1", "subject": "user-7", "text": "Deploy on Fridays.", "taint": ["rumour"]},
            {"id": "e-2", "subject": "user-7", "text": "The office is in Lyon."},
        ]
    )
    first = memory.consolidate("user-7")
    assert first.switched, first.reason
    below = grow(memory, "e-1", "fan-", FAN_OUT)
    apart = grow(memory, "e-2", "other-", 50)
    before = statuses(memory)
    stale = invalidate(memory)
    after = statuses(memory)
    expected = below | {first.artifact.id}  # the published summary read e-1 too
    assert stale == expected
    assert {a for a, s in after.items() if s == "stale"} == expected
    assert {a: after[a] for a in apart} == {a: before[a] for a in apart}
    assert memory.recall("user-7").mode == "raw"
    (job,) = [j for j in memory.jobs() if j.subject == "user-7" and j.state == "queued"]
    assert "stale" in job.reason  # the rebuild was queued in the invalidating transaction
    memory.work()  # a worker runs it
    recalled = memory.recall("user-7")
    assert recalled.mode == "summary"
    assert recalled.artifact_id is not None
    assert "e-1" not in [e for a in memory.artifacts("user-7") if a.id == recalled.artifact_id
                         for e in a.manifest.input_ids]  # fmt: skip


def _edges_into(memory: Memory, artifact_id: str) -> list[str]:
    with memory.store._read() as tx:  # type: ignore[attr-defined]
        rows = tx.all("SELECT parent FROM derivation WHERE child = ?", (artifact_id,))
    return sorted(r[0] for r in rows)


def test_revoking_an_event_the_first_of_three_runs_read_stales_all_three(
    memory: Memory,
) -> None:
    """Each run builds on the published summary (a derivation edge to it, one from each
    input): revoking an event the first run read stales the third run's summary too,
    recall stops serving it, its lineage still names the event, the rebuild drops it."""
    first_words = ["Lyon", "Porto", "Gent", "Turku", "Split", "Brno", "Graz", "Pula"]
    memory.add(
        [{"id": f"e-{k}", "subject": "user-7", "text": f"We once had lunch in {city}."}
         for k, city in enumerate(first_words)]
    )  # fmt: skip
    runs = [memory.consolidate("user-7").artifact]
    for k in (8, 10):
        memory.add(
            [{"id": f"e-{k + i}", "subject": "user-7", "text": f"Invoice INV-{k + i} is paid."}
             for i in range(2)]
        )  # fmt: skip
        result = memory.consolidate("user-7")
        assert result.switched, result.to_json()
        assert result.artifact.manifest.derived_from_artifact == runs[-1].id
        runs.append(result.artifact)
    assert len(runs[-1].manifest.input_ids) == 12
    assert _edges_into(memory, runs[-1].id) == sorted([f"e-{k}" for k in range(12)] + [runs[1].id])
    stale = set(memory.revoke("e-3").stale)
    assert stale == {a.id for a in runs}
    assert memory.recall("user-7").mode == "raw"
    doc = memory.lineage(runs[-1].id)
    assert isinstance(doc, dict)
    assert doc["entity"]["ml:event/e-3"]["ml:text"] == "We once had lunch in Turku."
    assert doc["entity"]["ml:event/e-3"]["ml:validity"] != "valid"
    memory.work()
    rebuilt = memory.recall("user-7")
    assert rebuilt.mode == "summary"
    assert "Turku" not in (rebuilt.summary or "")
