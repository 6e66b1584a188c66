"""Trust and taint policies as versioned data per tenant; the policy and erase commands."""

from __future__ import annotations

import io
import json
from typing import Any

from memlineage import Memory
from memlineage.interfaces.cli import main


def clock(memory: Memory, subject: str) -> tuple[int, int]:
    doc = memory.audit(subject).doc["clock"]
    return doc["high_water"], doc["epoch"]


def valid(memory: Memory, subject: str) -> list[str]:
    return [e.id for e in memory.recall(subject).events]


def test_a_trust_upgrade_advances_only_affected_subjects_in_bounded_batches(
    memory: Memory,
) -> None:
    memory.set_trust_policy(block=["injection"])
    for n in range(5):
        memory.add([{"id": f"u{n}-1", "subject": f"user-{n}", "text": "hello",
                     "taint": ["scraped"] if n % 2 else []}])  # fmt: skip
    assert valid(memory, "user-1") == ["u1-1"]  # 'scraped' is admitted under v2
    epochs = {n: clock(memory, f"user-{n}")[1] for n in range(5)}
    stored, rounds = memory.set_trust_policy(block=["injection", "scraped"], batch=2)
    assert stored.version == 3
    assert [len(r.applied) for r in rounds] == [2, 2, 1]
    assert [r.remaining for r in rounds] == [3, 1, 0]
    assert sorted(a.subject for r in rounds for a in r.affected) == ["user-1", "user-3"]
    for n in range(5):
        bumped = clock(memory, f"user-{n}")[1] - epochs[n]
        assert bumped == (1 if n % 2 else 0)
    assert valid(memory, "user-1") == [] and valid(memory, "user-2") == ["u2-1"]


def test_a_new_subject_starts_under_the_current_trust_policy(memory: Memory) -> None:
    memory.set_trust_policy(admit=["user"], block=[])
    memory.add([{"id": "a", "subject": "user-9", "text": "x", "taint": ["web"]},
                {"id": "b", "subject": "user-9", "text": "y", "trust": "tool"}])  # fmt: skip
    assert valid(memory, "user-9") == ["a"]  # no label blocks; only 'user' is admitted
    assert clock(memory, "user-9") == (2, 0)
    assert memory.policy()["trust"] == {
        "version": 2, "admittedTrust": ["user"], "blockedTaints": [],
    }  # fmt: skip


def test_relaxing_a_policy_advances_the_epoch_and_readmits(memory: Memory) -> None:
    memory.add([{"id": "a", "subject": "user-7", "text": "x", "taint": ["web"]}])
    assert valid(memory, "user-7") == []
    _, rounds = memory.set_trust_policy(block=["injection"])
    assert [a.subject for r in rounds for a in r.affected] == ["user-7"]
    assert valid(memory, "user-7") == ["a"] and clock(memory, "user-7")[1] == 1


def cli(db: str, *argv: str) -> tuple[int, Any]:
    out = io.StringIO()
    code = main([*argv, "--db", db, "--tenant", "acme", "--json"], stdout=out)
    return code, json.loads(out.getvalue()) if out.getvalue() else None


def test_policy_commands_show_change_and_keep_history(db_url: str) -> None:
    code, doc = cli(db_url, "policy", "show")
    assert code == 0 and doc["temporal"] == {
        "version": 1, "rules": {"preference": "latest-wins"}, "default": "keep",
    }  # fmt: skip
    code, doc = cli(db_url, "policy", "temporal", "fact=latest-wins", "--reason", "ops asked")
    assert code == 0 and doc["version"] == 2 and doc["rules"]["fact"] == "latest-wins"
    code, doc = cli(db_url, "policy", "trust", "--block", "injection", "--batch", "10")
    assert code == 0 and doc["version"] == 2 and doc["blockedTaints"] == ["injection"]
    code, doc = cli(db_url, "policy", "history")
    assert [(v["name"], v["version"], v["reason"]) for v in doc] == [
        ("temporal", 2, "ops asked"), ("trust", 2, None),
    ]  # fmt: skip
    code, _ = cli(db_url, "policy", "temporal", "fact=whatever")
    assert code == 2


def test_erase_dismiss_and_detect_commands(db_url: str, tmp_path: Any) -> None:
    path = tmp_path / "e.jsonl"
    rows = [
        {"id": "p-1", "subject": "user-7", "text": "I love jazz.", "at": "2026-01-01T00:00:00Z"},
        {"id": "p-2", "subject": "user-7", "text": "I hate jazz.", "at": "2026-05-01T00:00:00Z"},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    assert cli(db_url, "add", str(path))[0] == 0
    code, doc = cli(db_url, "detect", "user-7")
    assert code == 0 and doc == {"subject": "user-7", "detected_through": 2, "conflicts": []}
    code, doc = cli(db_url, "recall", "user-7")
    assert [e["id"] for e in doc["events"]] == ["p-2"]
    code, audit = cli(db_url, "audit", "user-7")
    conflict = next(o["conflict_id"] for o in audit["operations"] if o["kind"] == "conflict")
    code, doc = cli(db_url, "dismiss", conflict)
    assert code == 0 and doc["changed"] is True
    code, doc = cli(db_url, "erase", "p-1", "--reason", "request #1", "--by", "dpo")
    assert code == 0 and doc["changed"] is True
    code, doc = cli(db_url, "recall", "user-7")
    assert [e["id"] for e in doc["events"]] == ["p-2"]
    code, _ = cli(db_url, "erase", "p-1")
    assert code == 2  # --reason is required
