"""The derived layer: candidates, the switch transaction (step 8), recall (I4–I6)."""

from __future__ import annotations

import gc
import multiprocessing
from typing import Any

import pytest

import workers
from memlineage import ArtifactStatus, Memory, SwitchFailure, SwitchResult
from memlineage.consolidation.consolidate import Consolidation, prepare, publish
from memlineage.consolidation.generators.base import GenerationRequest
from memlineage.store import rows

SPAWN = multiprocessing.get_context("spawn")


def add_range(memory: Memory, start: int, stop: int, subject: str = "user-7") -> None:
    memory.add(
        [
            {"id": f"m-{i}", "subject": subject, "text": f"Note {i}: keep ticket ORION-{i} open"}
            for i in range(start, stop + 1)
        ]
    )


def status_of(memory: Memory, artifact_id: str) -> ArtifactStatus:
    return {a.id: a.status for a in memory.artifacts()}[artifact_id]


def run_in_process(target: Any, *args: Any) -> Any:
    results = SPAWN.SimpleQueue()
    proc = SPAWN.Process(target=target, args=(*args, results))
    proc.start()
    proc.join(60)
    assert proc.exitcode == 0
    return results.get()


def test_consolidation_publishes_and_recall_returns_summary_plus_tail(memory: Memory) -> None:
    add_range(memory, 1, 5)
    result = memory.consolidate("user-7")
    assert result.switched, result.to_json()
    add_range(memory, 6, 7)
    recalled = memory.recall("user-7")
    assert recalled.mode == "summary"
    assert recalled.artifact_id == result.artifact.id
    assert recalled.covers_through == 5
    assert [e.id for e in recalled.tail] == ["m-6", "m-7"]
    assert recalled.claims
    # "which message produced this memory?": every claim names raw event ids.
    assert all(
        c.derived_from and set(c.derived_from) <= {f"m-{i}" for i in range(1, 6)}
        for c in recalled.claims
    )


def test_generation_finishing_does_not_make_an_artifact_readable(memory: Memory) -> None:
    add_range(memory, 1, 3)
    candidate = prepare(memory.store, memory.tenant, "user-7")
    assert candidate.status is ArtifactStatus.CANDIDATE
    assert memory.recall("user-7").mode == "raw"
    assert publish(memory.store, memory.tenant, candidate).switched  # type: ignore[union-attr]
    assert memory.recall("user-7").mode == "summary"


def test_the_older_task_cannot_switch_after_the_newer_one(db_url: str) -> None:
    """The seed's race: H=220 and H=184 share parent ...000090; 220 switches first."""
    with Memory(db_url, tenant="acme") as memory:
        add_range(memory, 1, 90)
        parent = memory.consolidate("user-7")
        assert parent.switched and parent.artifact.id.startswith("summary:user-7:000090")
        add_range(memory, 91, 184)
        old_task = prepare(memory.store, "acme", "user-7")
        add_range(memory, 185, 220)
        new_task = prepare(memory.store, "acme", "user-7")
    assert old_task.manifest.expected_alias.artifact_id == parent.artifact.id
    assert new_task.manifest.expected_alias.artifact_id == parent.artifact.id

    first = run_in_process(workers.switch, db_url, "acme", new_task.id)
    second = run_in_process(workers.switch, db_url, "acme", old_task.id)

    assert first["switched"] is True
    assert second["switched"] is False
    assert second["reason"] == SwitchFailure.ALIAS_MOVED
    with Memory(db_url, tenant="acme") as memory:
        recalled = memory.recall("user-7")
        assert recalled.artifact_id == new_task.id
        assert recalled.covers_through == 220
        assert status_of(memory, old_task.id) is ArtifactStatus.FAILED


def test_revocation_between_gate_and_switch_blocks_the_switch(memory: Memory) -> None:
    add_range(memory, 1, 10)
    candidate = prepare(memory.store, memory.tenant, "user-7")
    assert candidate.gate.passed
    memory.revoke("m-4")
    result = memory.store.switch(memory.tenant, candidate.id)
    assert not result.switched
    assert result.reason is SwitchFailure.EPOCH_CHANGED
    assert result.alias.artifact_id == ""  # the alias is untouched
    recalled = memory.recall("user-7")
    assert recalled.mode == "raw"
    assert "m-4" not in [e.id for e in recalled.events]


def test_revocation_after_the_switch_stales_the_artifact_at_once(memory: Memory) -> None:
    add_range(memory, 1, 10)
    published = memory.consolidate("user-7")
    assert memory.recall("user-7").mode == "summary"
    op = memory.revoke("m-4")
    assert op.stale == (published.artifact.id,)
    assert status_of(memory, published.artifact.id) is ArtifactStatus.STALE
    recalled = memory.recall("user-7")
    assert recalled.mode == "raw"
    assert "m-4" not in [e.id for e in recalled.events]
    assert all("m-4" not in c.derived_from for c in recalled.claims)


def test_staleness_follows_parent_artifacts(memory: Memory) -> None:
    add_range(memory, 1, 3)
    first = memory.consolidate("user-7").artifact
    add_range(memory, 4, 6)
    second = memory.consolidate("user-7").artifact
    memory.revoke("m-2")
    assert status_of(memory, first.id) is ArtifactStatus.STALE
    assert status_of(memory, second.id) is ArtifactStatus.STALE


def test_unrelated_revocation_in_another_subject_changes_nothing(memory: Memory) -> None:
    add_range(memory, 1, 3)
    add_range(memory, 100, 102, subject="user-8")
    memory.consolidate("user-7")
    memory.revoke("m-101")
    assert memory.recall("user-7").mode == "summary"


def test_replacement_and_new_conflict_take_the_summary_out_of_recall(memory: Memory) -> None:
    add_range(memory, 1, 3)
    memory.consolidate("user-7")
    memory.conflict("m-1", "m-2", key="plan")
    assert memory.recall("user-7").mode == "raw"
    assert memory.consolidate("user-7").switched
    recalled = memory.recall("user-7")
    assert recalled.mode == "summary" and len(recalled.conflicts) == 1
    memory.add([{"id": "m-9", "subject": "user-7", "text": "Note 9", "supersedes": "m-3"}])
    assert memory.recall("user-7").mode == "raw"


def test_a_new_conflict_after_the_gate_blocks_the_switch(memory: Memory) -> None:
    add_range(memory, 1, 3)
    candidate = prepare(memory.store, memory.tenant, "user-7")
    memory.conflict("m-1", "m-2")
    result = memory.store.switch(memory.tenant, candidate.id)
    assert not result.switched
    assert result.reason in (SwitchFailure.EPOCH_CHANGED, SwitchFailure.NEW_CONFLICT)


def test_coverage_never_moves_backward(memory: Memory) -> None:
    add_range(memory, 1, 5)
    early = prepare(memory.store, memory.tenant, "user-7")
    add_range(memory, 6, 8)
    assert memory.consolidate("user-7").switched
    result = memory.store.switch(memory.tenant, early.id)
    assert not result.switched
    assert memory.recall("user-7").covers_through == 8


def test_a_switch_is_attempted_once(memory: Memory) -> None:
    add_range(memory, 1, 2)
    done = memory.consolidate("user-7")
    again = memory.store.switch(memory.tenant, done.artifact.id)
    assert not again.switched and again.reason is SwitchFailure.NOT_A_CANDIDATE


class BrokenGenerator:
    name = "broken"
    prompt_version = "test"
    model_snapshot = "test"

    def __init__(self, output: Any):
        self.output = output

    def generate(self, request: GenerationRequest) -> Any:
        if isinstance(self.output, Exception):
            raise self.output
        return self.output


NO_ITEMS = {"claims": [], "openItems": [], "unresolvedConflicts": [], "cold": [], "statements": []}


@pytest.mark.parametrize(
    ("output", "status"),
    [
        (TimeoutError("generation timed out"), ArtifactStatus.FAILED),
        ({"claims": [], "openItems": [], "cold": [], "statements": []}, ArtifactStatus.REJECTED),
        (NO_ITEMS, ArtifactStatus.REJECTED),  # drops every must-preserve item
    ],
    ids=["timeout", "missing-field", "drops-items"],
)
def test_rejected_or_failed_outputs_are_kept_and_never_recalled(
    memory: Memory, output: Any, status: ArtifactStatus
) -> None:
    add_range(memory, 1, 3)
    result = memory.consolidate("user-7", BrokenGenerator(output))
    assert not result.switched
    assert result.status is status
    assert not result.artifact.gate.passed and result.artifact.gate.failures
    assert memory.recall("user-7").mode == "raw"
    assert status_of(memory, result.artifact.id) is status


def test_consolidating_an_up_to_date_subject_builds_nothing(memory: Memory) -> None:
    add_range(memory, 1, 3)
    first = memory.consolidate("user-7")
    again = memory.consolidate("user-7")
    assert again.up_to_date and not again.switched
    assert again.artifact.id == first.artifact.id
    assert len(memory.artifacts("user-7")) == 1
    forced = memory.consolidate("user-7", force=True)
    assert forced.switched and forced.artifact.id != first.artifact.id


def test_an_up_to_date_consolidation_returns_the_published_summary_whole(
    memory: Memory,
) -> None:
    add_range(memory, 1, 3)
    first = memory.consolidate("user-7")
    again = memory.consolidate("user-7")
    assert again.up_to_date
    assert again.artifact.output is not None
    assert again.artifact.output == first.artifact.output
    assert "ORION-2" in " ".join(s.text for s in again.artifact.output.statements)


def test_an_artifact_read_in_the_writing_process_equals_one_parsed_from_its_row(
    memory: Memory,
) -> None:
    memory.add(
        [
            {"id": "n-1", "subject": "user-7", "text": "Budget is 12.5 EUR per seat, never above"},
            {"id": "n-2", "subject": "user-7", "text": "I don't eat peanuts; deadline 2025-03-01"},
            {"id": "n-3", "subject": "user-7", "text": "Latency must stay under 200 ms (ORION-9)"},
            {"id": "n-4", "subject": "user-7", "text": 'Café «ünïcode» "quoted" line\twith tab'},
        ]
    )
    written = memory.consolidate("user-7").artifact
    in_process = memory.artifact(written.id)
    rows.output_from_json.cache_clear()
    rows.manifest_from_json.cache_clear()
    parsed = memory.artifact(written.id)
    assert in_process.output is not None and parsed.output is not None
    assert in_process.output == parsed.output
    assert in_process.output.to_json() == parsed.output.to_json()
    assert in_process.manifest == parsed.manifest


def test_a_refused_switch_reports_the_artifact_as_failed(memory: Memory) -> None:
    add_range(memory, 1, 3)
    stale_task = prepare(memory.store, memory.tenant, "user-7")
    add_range(memory, 4, 5)
    memory.consolidate("user-7")
    result = Consolidation(stale_task, memory.store.switch(memory.tenant, stale_task.id))
    assert result.to_json()["status"] == "failed"
    assert result.to_json()["reason"].startswith("alias_moved")


def test_a_revoked_fact_does_not_live_on_in_the_rebuilt_summary(memory: Memory) -> None:
    memory.add(
        [
            {"id": "m-1", "subject": "user-7", "text": "My budget is at most 4,500 EUR."},
            {"id": "m-2", "subject": "user-7", "text": "My locker code is 7319."},
            {"id": "m-3", "subject": "user-7", "text": "Never call me before 9:00."},
        ]
    )
    memory.consolidate("user-7")
    assert "7319" in (memory.recall("user-7").summary or "")
    memory.revoke("m-2")
    rebuilt = memory.consolidate("user-7")
    assert rebuilt.switched
    recalled = memory.recall("user-7")
    assert recalled.mode == "summary"
    assert "7319" not in (recalled.summary or "")
    assert all("m-2" not in c.derived_from for c in recalled.claims)
    assert all("7319" not in str(c.value) for c in recalled.claims)
    assert rebuilt.artifact.manifest.input_ids == ("m-1", "m-3")


def test_a_summary_rebuilt_without_a_source_is_not_staled_by_it(memory: Memory) -> None:
    add_range(memory, 1, 3)
    first = memory.consolidate("user-7").artifact
    memory.revoke("m-2")
    rebuilt = memory.consolidate("user-7").artifact  # its stale parent was not read
    op = memory.add([{"id": "m-9", "subject": "user-7", "text": "Note 9", "supersedes": "m-2"}])
    assert op[0].created
    assert status_of(memory, first.id) is ArtifactStatus.STALE
    assert status_of(memory, rebuilt.id) is ArtifactStatus.PUBLISHED


def test_a_consolidation_pauses_the_collector_while_it_switches_and_gives_it_back(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_range(memory, 1, 3)
    seen: list[bool] = []
    switch = memory.store.switch

    def observed(*args: Any, **kwargs: Any) -> Any:
        seen.append(gc.isenabled())
        return switch(*args, **kwargs)

    monkeypatch.setattr(memory.store, "switch", observed)
    assert gc.isenabled()
    assert memory.consolidate("user-7").switched
    assert seen == [False]  # the re-validation walks every input: no collector meanwhile
    assert gc.isenabled()


def _tamper(memory: Memory, event_id: str) -> None:
    """Change a stored event's hash behind the store's back (no API does)."""
    with memory.store._write() as tx:  # type: ignore[attr-defined]
        tx.execute(
            "UPDATE events SET hash = ? WHERE tenant = ? AND id = ?",
            ("0" * 64, memory.tenant, event_id),
        )


def refused_for_a_hash(result: SwitchResult | None) -> bool:
    """The switch refused: an input's stored hash is not the one the run read."""
    assert result is not None and not result.switched
    return result.reason is SwitchFailure.INPUT_INVALIDATED and "hash" in result.detail


def test_a_switch_over_the_published_summary_re_reads_only_the_new_inputs(
    memory: Memory,
) -> None:
    """Issue #26: a run built on the published summary, with nothing invalidated since
    it was switched, re-validates only the events it adds (the parent's switch
    re-validated the rest, and only an operation, which moves the epoch, can change
    them). A new input whose hash changed after the run read it is refused; a changed
    older input is what ``audit`` finds, not the switch."""
    add_range(memory, 1, 5)
    first = memory.consolidate("user-7")
    assert first.switched
    add_range(memory, 6, 7)
    refused = prepare(memory.store, memory.tenant, "user-7")
    assert refused.manifest.derived_from_artifact == first.artifact.id
    _tamper(memory, "m-7")
    assert refused_for_a_hash(publish(memory.store, memory.tenant, refused))
    add_range(memory, 8, 8)
    later = prepare(memory.store, memory.tenant, "user-7")  # reads m-7 as it now is
    _tamper(memory, "m-2")  # an input the published summary's switch re-validated
    second = publish(memory.store, memory.tenant, later)
    assert second is not None and second.switched, second
    report = memory.audit("user-7")
    assert {c.artifact_id for c in report.checks if not c.ok} == {
        first.artifact.id,
        refused.id,
        later.id,
    }


def test_an_operation_that_left_the_epoch_alone_makes_the_switch_re_validate_everything(
    memory: Memory,
) -> None:
    """The switch of a run built on the published summary trusts the parent's inputs
    because every operation but a quiet policy moves the epoch. An operation row that
    did not (written behind the store's back here) must send it back to re-validating
    every input under every operation: the revoked new input is refused."""
    add_range(memory, 1, 5)
    assert memory.consolidate("user-7").switched
    add_range(memory, 6, 7)
    candidate = prepare(memory.store, memory.tenant, "user-7")
    assert candidate.manifest.derived_from_artifact is not None
    epoch = memory.audit("user-7").doc["clock"]["epoch"]
    with memory.store._write() as tx:  # type: ignore[attr-defined]
        tx.execute(
            "INSERT INTO operations (tenant, subject, op_seq, kind, target, other, conflict_id,"
            " key, trust, taint, reason, epoch, recorded_at)"
            " VALUES (?, 'user-7', 999, 'revoke', 'm-7', NULL, NULL, NULL, NULL, NULL,"
            " 'written by hand', ?, '2026-12-05T00:00:00Z')",
            (memory.tenant, epoch),
        )
    result = publish(memory.store, memory.tenant, candidate)
    assert result is not None and not result.switched
    assert result.reason is SwitchFailure.INPUT_INVALIDATED
    assert "m-7 is revoked" in result.detail


def _conflicting_pair(memory: Memory, first: int) -> None:
    """Two new events whose budgets differ: detection keeps the conflict unresolved."""
    memory.add([
        {"id": f"m-{first}", "subject": "user-7", "text": "The budget is 4,500 EUR."},
        {"id": f"m-{first + 1}", "subject": "user-7", "text": "The budget is 5,000 EUR."},
    ])  # fmt: skip


def test_a_conflict_among_the_new_inputs_is_re_validated_with_them_alone(
    memory: Memory,
) -> None:
    """Operations since the published summary that name only events after its coverage
    (a conflict detected among them) leave its inputs as its switch re-validated them:
    only the new inputs are read again, with the conflict expected among them."""
    add_range(memory, 1, 5)
    first = memory.consolidate("user-7")
    _conflicting_pair(memory, 6)
    later = prepare(memory.store, memory.tenant, "user-7")
    assert later.manifest.derived_from_artifact == first.artifact.id
    assert len(later.manifest.expected_conflicts) == 1
    _tamper(memory, "m-2")  # an input the published summary's switch re-validated
    result = publish(memory.store, memory.tenant, later)
    assert result is not None and result.switched, result
    assert len(memory.recall("user-7").conflicts) == 1


def test_an_operation_naming_an_older_input_makes_the_switch_re_validate_everything(
    memory: Memory,
) -> None:
    add_range(memory, 1, 5)
    first = memory.consolidate("user-7")
    _conflicting_pair(memory, 6)
    assert memory.trust("m-2", "agent").changed  # still valid: nothing it says changed
    later = prepare(memory.store, memory.tenant, "user-7")
    assert later.manifest.derived_from_artifact == first.artifact.id
    _tamper(memory, "m-2")
    assert refused_for_a_hash(publish(memory.store, memory.tenant, later))
