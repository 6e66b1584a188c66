"""Shadow release with review, and forward recovery after a failed release (both backends)."""

from __future__ import annotations

import pytest

from memlineage import BadInput, Memory, NotFound
from memlineage.errors import MemlineageError

EVENTS = [
    {"id": "r-1", "subject": "user-7", "text": "Never deploy on Fridays.", "kind": "constraint"},
    {"id": "r-2", "subject": "user-7", "text": "My daily run is 5 km, not 5 mi."},
]


@pytest.fixture
def shadow(memory: Memory) -> Memory:
    memory.add(EVENTS)
    assert memory.release_mode("shadow") == "shadow"
    return memory


def test_shadow_candidates_wait_for_review_and_approval_switches(shadow: Memory) -> None:
    result = shadow.consolidate("user-7")
    assert result.switched is False and result.awaiting_review
    assert shadow.recall("user-7").mode == "raw"  # nothing is readable before approval
    pending = shadow.reviews()
    assert [r["artifact_id"] for r in pending] == [result.artifact.id]
    sheet = shadow.review(result.artifact.id)
    assert "Never deploy on Fridays." in sheet["candidate_summary"]
    assert sheet["published_summary"] is None and sheet["gate"]["passed"] is True
    assert sheet["must_preserve"] and all(i["kept"] for i in sheet["must_preserve"])
    decision = shadow.approve(result.artifact.id, "ana", "checked")
    assert decision.state == "approved" and decision.switch and decision.switch.switched
    recalled = shadow.recall("user-7")
    assert recalled.mode == "summary" and recalled.artifact_id == result.artifact.id
    assert shadow.reviews() == []
    decided = shadow.reviews(None)
    assert decided[0]["state"] == "approved" and decided[0]["reviewer"] == "ana"


def test_approval_after_the_epoch_moved_is_refused_not_forced(shadow: Memory) -> None:
    candidate = shadow.consolidate("user-7").artifact
    shadow.revoke("r-2")  # the epoch moves while the candidate waits
    decision = shadow.approve(candidate.id, "ana")
    assert decision.state == "refused" and decision.rebuild_due
    assert shadow.recall("user-7").mode == "raw"
    assert shadow.artifact(candidate.id).status != "published"
    assert shadow.reviews(None)[0]["state"] == "refused"


def test_approval_after_the_alias_moved_is_refused(shadow: Memory) -> None:
    first = shadow.consolidate("user-7").artifact
    second = shadow.consolidate("user-7", force=True).artifact
    assert shadow.approve(second.id, "ana").state == "approved"
    decision = shadow.approve(first.id, "ana")
    assert decision.state == "refused"
    assert decision.switch is not None and str(decision.switch.reason) == "alias_moved"
    assert shadow.recall("user-7").artifact_id == second.id


def test_a_rejection_is_kept_with_its_reviewer_and_reason(shadow: Memory) -> None:
    candidate = shadow.consolidate("user-7").artifact
    decision = shadow.reject(candidate.id, "bo", "lost the unit")
    assert decision.state == "rejected"
    kept = shadow.artifact(candidate.id)
    assert kept.status == "rejected" and "bo" in (kept.reason or "")
    assert "lost the unit" in (kept.reason or "")
    with pytest.raises(NotFound):
        shadow.approve(candidate.id, "bo")  # decided: no longer pending
    # a rejected artifact is never a parent: the next build reads no parent
    shadow.release_mode("auto")
    rebuilt = shadow.consolidate("user-7").artifact
    assert rebuilt.manifest.derived_from_artifact is None


def test_forward_recovery_after_a_failed_release(memory: Memory) -> None:
    memory.add(EVENTS)
    v1 = memory.rollout({"generator": "deterministic"})
    assert memory.consolidate("user-7").switched
    memory.add([{"id": "r-3", "subject": "user-7", "text": "I love jazz."}])
    v2 = memory.rollout({"generator": "deterministic", "prompt": "v2-experiment"})
    published = memory.consolidate("user-7")
    assert published.switched and published.artifact.manifest.config_version == v2
    before = memory.recall("user-7").covers_through
    outcome = memory.release_fail()
    assert outcome["failed_config"] == v2 and outcome["recovered_with"] == v1
    [subject] = outcome["subjects"]
    assert subject["bypassed"] is True and subject["switched"] is True
    recalled = memory.recall("user-7")
    assert recalled.mode == "summary" and recalled.covers_through >= before
    recovery = memory.artifact(recalled.artifact_id or "")
    assert recovery.manifest.config_version == v1  # the previous configuration built it
    assert "I love jazz." in (recalled.summary or "")
    statuses = {a.id: a.status for a in memory.artifacts("user-7")}
    assert len(statuses) == 3  # nothing was deleted


def test_a_failed_release_bypasses_recall_until_recovery(memory: Memory) -> None:
    memory.add(EVENTS)
    assert memory.consolidate("user-7").switched
    memory.store.bypass("acme", "user-7")
    recalled = memory.recall("user-7")
    assert recalled.mode == "raw" and recalled.reason == "summary bypassed"
    assert [e.id for e in recalled.events] == ["r-1", "r-2"]


def test_bad_release_input_is_refused(memory: Memory) -> None:
    with pytest.raises(BadInput):
        memory.release_mode("yolo")
    with pytest.raises(BadInput):
        memory.rollout({"generator": "magic"})
    with pytest.raises(MemlineageError):
        memory.approve("summary:nothing", "ana")
