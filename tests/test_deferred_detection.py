"""Detection off the append path: ``add`` returns after the append, and no summary is ever
switched over events whose contradiction detection has not run (both backends)."""

from __future__ import annotations

import io
import json
import multiprocessing
from pathlib import Path
from typing import Any

import pytest

import workers
from memlineage import Memory, render
from memlineage.consolidation import consolidate as consolidation
from memlineage.interfaces.cli import main
from memlineage.model import SwitchFailure
from memlineage.operations.worker import WorkerOptions, run_process

SPAWN = multiprocessing.get_context("spawn")
LOVE = {"id": "p-1", "subject": "user-7", "text": "I love jazz.", "at": "2026-01-10T09:00:00Z"}
HATE = {"id": "p-2", "subject": "user-7", "text": "I hate jazz.", "at": "2026-06-02T18:30:00Z"}


def conflicts(memory: Memory, subject: str = "user-7") -> list[dict[str, Any]]:
    return [o for o in memory.audit(subject).to_json()["operations"] if o["kind"] == "conflict"]


def detected_through(memory: Memory, subject: str = "user-7") -> int:
    with memory.store.reader(memory.tenant) as reader:
        row = reader.tx.one(
            "SELECT detected_through FROM clocks WHERE tenant = ? AND subject = ?",
            (memory.tenant, subject),
        )
    return int(row[0])


def test_add_returns_before_detection_and_raw_recall_shows_both_sides(memory: Memory) -> None:
    memory.add([LOVE])
    memory.add([HATE])
    assert detected_through(memory) == 0 and conflicts(memory) == []
    assert [e.id for e in memory.recall("user-7").events] == ["p-1", "p-2"]  # nothing lost


def test_a_consolidation_detects_the_deferred_conflict_before_it_switches(
    memory: Memory,
) -> None:
    memory.add([LOVE])
    memory.add([HATE])
    result = memory.consolidate("user-7")
    assert result.switched
    recalled = memory.recall("user-7")
    assert recalled.mode == "summary"
    text = render(recalled, "markdown")
    assert "hate jazz" in text and "love jazz" not in text  # the newer one won
    assert [c["target"] for c in conflicts(memory)] == ["p-1"]


def test_a_switch_whose_inputs_include_an_unchecked_event_catches_up_and_is_refused(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A candidate built over events detection had not checked (an append landed between
    the build's catch-up and its snapshot): the switch runs the job under its lock first,
    and the conflict it records refuses the switch."""
    memory.add([LOVE, HATE])
    with monkeypatch.context() as patched:
        patched.setattr(consolidation, "_detect_first", lambda *_: None)
        candidate = consolidation.prepare(memory.store, "acme", "user-7")
    assert set(candidate.manifest.input_ids) == {"p-1", "p-2"}
    assert detected_through(memory) == 0
    switch = memory.store.switch("acme", candidate.id)
    assert not switch.switched and switch.reason is SwitchFailure.EPOCH_CHANGED
    assert detected_through(memory) == 2 and len(conflicts(memory)) == 1
    assert memory.recall("user-7").mode == "raw"
    assert [e.id for e in memory.recall("user-7").events] == ["p-2"]
    assert memory.consolidate("user-7").switched
    assert "love jazz" not in render(memory.recall("user-7"), "markdown")


def test_a_switch_over_unchecked_events_without_conflicts_goes_through(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory.add([LOVE, {"id": "d-1", "subject": "user-7", "text": "Never deploy on Fridays."}])
    with monkeypatch.context() as patched:
        patched.setattr(consolidation, "_detect_first", lambda *_: None)
        candidate = consolidation.prepare(memory.store, "acme", "user-7")
    assert memory.store.switch("acme", candidate.id).switched
    assert detected_through(memory) == 2


def test_synchronous_detection_is_an_opt_in(db_url: str) -> None:
    with Memory(db_url, tenant="acme", detect_after_add=True) as memory:
        memory.add([LOVE])
        memory.add([HATE])
        assert detected_through(memory) == 2 and len(conflicts(memory)) == 1
        assert [e.id for e in memory.recall("user-7").events] == ["p-2"]


def test_a_worker_process_runs_the_detection_job(db_url: str) -> None:
    with Memory(db_url, tenant="acme") as memory:
        memory.add([LOVE, HATE, {**LOVE, "id": "o-1", "subject": "user-8"}])
    options = WorkerOptions(url=db_url, tenant="acme", once=True)
    proc = SPAWN.Process(target=run_process, args=(options,))
    proc.start()
    proc.join(120)
    assert proc.exitcode == 0
    with Memory(db_url, tenant="acme") as memory:
        assert detected_through(memory) == 2 and detected_through(memory, "user-8") == 1
        assert [e.id for e in memory.recall("user-7").events] == ["p-2"]
        assert memory.jobs() == []  # the job's queue is the watermark, not a jobs row


def test_memory_work_runs_the_detection_jobs_first(memory: Memory) -> None:
    memory.add([LOVE, HATE])
    assert memory.work() == []  # no consolidation is due
    assert detected_through(memory) == 2 and len(conflicts(memory)) == 1


def cli(db: str, *argv: str) -> tuple[int, Any]:
    out = io.StringIO()
    code = main([*argv, "--db", db, "--tenant", "acme", "--json"], stdout=out)
    return code, json.loads(out.getvalue())


def test_the_cli_add_detects_unless_told_to_defer(db_url: str, tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    path.write_text(json.dumps(LOVE) + "\n" + json.dumps(HATE) + "\n")
    other = tmp_path / "o.jsonl"
    other.write_text(json.dumps({**LOVE, "id": "o-1", "subject": "user-8"}) + "\n")
    assert cli(db_url, "add", str(path))[0] == 0
    assert cli(db_url, "add", "--defer-detection", str(other))[0] == 0
    with Memory(db_url, tenant="acme") as memory:
        assert detected_through(memory) == 2 and len(conflicts(memory)) == 1
        assert detected_through(memory, "user-8") == 0


@pytest.mark.slow
def test_racing_appends_and_consolidations_never_switch_over_unchecked_events(
    db_url: str,
) -> None:
    """Real processes: one appends contradicting events with detection deferred, one
    consolidates in a loop. Afterwards every conflict among a published summary's inputs
    was recorded at or before the epoch the summary was built at."""
    Memory(db_url, tenant="acme").close()
    rounds = 40
    procs = [
        SPAWN.Process(target=workers.append_flip_flops, args=(db_url, "acme", "user-7", rounds)),
        SPAWN.Process(target=workers.consolidate_until, args=(db_url, "acme", "user-7", rounds)),
    ]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(300)
        assert proc.exitcode == 0
    with Memory(db_url, tenant="acme") as memory:
        memory.detect("user-7")
        recorded = [(c["target"], c["other"], c["epoch"]) for c in conflicts(memory)]
        published = [a for a in memory.artifacts("user-7") if a.id in switched_ids(memory)]
    assert recorded and published
    for artifact in published:
        inputs = set(artifact.manifest.input_ids)
        for a, b, epoch in recorded:
            if a in inputs and b in inputs:
                assert epoch <= artifact.manifest.input_epoch, (artifact.id, a, b)


def switched_ids(memory: Memory) -> set[str]:
    return {row["artifact_id"] for row in memory.audit("user-7").to_json()["alias_history"]}
