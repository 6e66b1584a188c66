"""Lineage (PROV-JSON, dot, mermaid), why, audit and the sweep, on both backends."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from prov.model import ProvDocument

from memlineage import Memory
from memlineage.consolidation.consolidate import prepare
from memlineage.interfaces.cli import main

EVENTS = [
    {"id": "m-1", "subject": "user-7", "text": "Never deploy on Fridays.", "kind": "constraint"},
    {"id": "m-2", "subject": "user-7", "text": "The budget is at most 4,500 EUR."},
    {"id": "m-3", "subject": "user-7", "text": "We met at the harbour café."},
]


def published(memory: Memory) -> str:
    memory.add(EVENTS)
    result = memory.consolidate("user-7")
    assert result.switched, result.reason
    return result.artifact.id


def parse(doc: dict[str, Any]) -> ProvDocument:
    return ProvDocument.deserialize(content=json.dumps(doc), format="json")


def test_prov_json_parses_with_prov_and_round_trips(memory: Memory) -> None:
    first = published(memory)
    memory.add([{"id": "m-4", "subject": "user-7", "text": "Ship ORION-12 by 2026-12-18."}])
    second = memory.consolidate("user-7").artifact.id
    memory.add(
        [{"id": "m-5", "subject": "user-7", "text": "Budget is 5,000 EUR.", "supersedes": "m-2"}]
    )
    doc = memory.lineage(second)
    assert isinstance(doc, dict)
    parsed = parse(doc)
    again = ProvDocument.deserialize(content=parsed.serialize(format="json"), format="json")
    assert again == parsed
    entities = doc["entity"]
    assert entities["ml:event/m-2"]["ml:text"] == "The budget is at most 4,500 EUR."
    assert entities["ml:event/m-2"]["ml:validity"] == "superseded by m-5"
    kinds = {v["prov:type"] for v in entities.values()}
    assert {"ml:Event", "ml:Artifact", "ml:Claim"} <= kinds
    runs = {r["prov:activity"] for r in doc["used"].values()}
    assert runs == {f"ml:consolidation/{_q(first)}", f"ml:consolidation/{_q(second)}"}
    revisions = [r for r in doc["wasDerivedFrom"].values() if r.get("prov:type") == "prov:Revision"]
    assert {(r["prov:generatedEntity"], r["prov:usedEntity"]) for r in revisions} == {
        (f"ml:artifact/{_q(second)}", f"ml:artifact/{_q(first)}")
    }
    invalidated = {r["prov:entity"] for r in doc["wasInvalidatedBy"].values()}
    assert {f"ml:artifact/{_q(second)}", f"ml:artifact/{_q(first)}", "ml:event/m-2"} <= invalidated
    assert len(list(parsed.get_records())) > 10


def _q(artifact_id: str) -> str:
    return artifact_id.replace(":", "%3A")


def test_dot_and_mermaid_pictures_name_the_events(memory: Memory) -> None:
    artifact = published(memory)
    dot = memory.lineage(artifact, "dot")
    mermaid = memory.lineage(artifact, "mermaid")
    assert isinstance(dot, str) and dot.startswith("digraph lineage {") and dot.endswith("}")
    assert "m-2: The budget is at most 4,500 EUR." in dot and "wasDerivedFrom" in dot
    assert isinstance(mermaid, str) and mermaid.startswith("flowchart BT")
    assert "Never deploy on Fridays." in mermaid and "-->|used|" in mermaid


def test_why_follows_a_claim_down_to_its_raw_event_with_validity(memory: Memory) -> None:
    published(memory)
    result = memory.why("user-7", "4,500")
    assert result.found
    chains = [link for match in result.matches for link in match["chain"]]
    assert {(c["event_id"], c["text"], c["validity"]) for c in chains} == {
        ("m-2", "The budget is at most 4,500 EUR.", "valid")
    }
    memory.revoke("m-2")
    after = memory.why("user-7", "4,500")
    assert {c["validity"] for m in after.matches for c in m["chain"]} == {"revoked"}
    assert not memory.why("user-7", "nothing like this").found


def test_audit_lists_status_history_alias_history_and_operations(memory: Memory) -> None:
    first = published(memory)
    memory.revoke("m-3", reason="user withdrew it")
    second = memory.consolidate("user-7").artifact.id
    report = memory.audit("user-7")
    assert report.ok
    doc = report.to_json()
    history = {a["artifact_id"]: [h["status"] for h in a["history"]] for a in doc["artifacts"]}
    assert history[first] == ["candidate", "published", "stale"]
    assert history[second] == ["candidate", "published"]
    stale_reason = next(a for a in doc["artifacts"] if a["artifact_id"] == first)["history"][-1]
    assert stale_reason["reason"] == "revoke of m-3"
    assert [s["artifact_id"] for s in doc["alias_history"]] == [first, second]
    assert [(o["kind"], o["target"], o["reason"]) for o in doc["operations"]] == [
        ("revoke", "m-3", "user withdrew it")
    ]
    assert all(m["ok"] for m in doc["manifests"])


def test_audit_exits_1_when_a_manifest_no_longer_verifies(db_url: str) -> None:
    with Memory(db_url, tenant="acme") as memory:
        artifact = published(memory)
        with memory.store._write() as tx:  # type: ignore[attr-defined]
            tx.execute(
                "UPDATE events SET hash = ? WHERE tenant = ? AND id = ?", ("0" * 64, "acme", "m-2")
            )
        report = memory.audit("user-7")
    assert not report.ok
    (bad,) = [c for c in report.checks if not c.ok]
    assert bad.artifact_id == artifact and "inputRoot" in bad.detail
    out = io.StringIO()
    assert main(["audit", "user-7", "--db", db_url, "--tenant", "acme", "--json"], stdout=out) == 1
    assert json.loads(out.getvalue())["ok"] is False


def test_sweep_fails_orphaned_candidates_and_is_safe_to_repeat(memory: Memory) -> None:
    memory.add(EVENTS)
    orphan = prepare(memory.store, "acme", "user-7")  # a run that crashed before its switch
    memory.conflict("m-2", "m-3")  # the epoch moves on: the orphan can never switch
    swept = memory.sweep()
    assert [(s.artifact_id, s.reason) for s in swept] == [
        (orphan.id, "orphaned: epoch is 1, inputs were read at 0")
    ]
    assert memory.sweep() == []
    assert {a.id: str(a.status) for a in memory.artifacts("user-7")} == {orphan.id: "failed"}
    live = memory.consolidate("user-7")
    assert live.switched, live.reason
    assert memory.recall("user-7").mode == "summary"


def test_sweep_leaves_a_fresh_candidate_unless_it_is_older_than_asked(memory: Memory) -> None:
    memory.add(EVENTS)
    candidate = prepare(memory.store, "acme", "user-7")
    assert memory.sweep() == []
    assert [s.artifact_id for s in memory.sweep(older_than=0)] == [candidate.id]


def cli(db: str, *argv: str) -> tuple[int, Any]:
    out = io.StringIO()
    code = main([*argv, "--db", db, "--tenant", "acme", "--json"], stdout=out)
    return code, json.loads(out.getvalue()) if out.getvalue() else None


def test_cli_lineage_why_audit_sweep(db_url: str) -> None:
    with Memory(db_url, tenant="acme") as memory:
        artifact = published(memory)
    code, doc = cli(db_url, "lineage", artifact)
    assert code == 0 and parse(doc) is not None
    code, doc = cli(db_url, "lineage", artifact, "--format", "mermaid")
    assert code == 0 and doc["text"].startswith("flowchart")
    code, doc = cli(db_url, "why", "user-7", "harbour café")
    assert code == 0 and doc["matches"][0]["chain"][0]["event_id"] == "m-3"
    code, doc = cli(db_url, "why", "user-7", "no such thing")
    assert code == 1 and doc["matches"] == []
    code, doc = cli(db_url, "audit", "user-7")
    assert code == 0 and doc["ok"] is True
    code, doc = cli(db_url, "sweep")
    assert code == 0 and doc == {"failed": []}


def test_lineage_of_an_unknown_artifact_exits_2(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _ = cli(db_url, "lineage", "summary:nobody:000001-deadbeef")
    assert code == 2 and "summary:nobody" in capsys.readouterr().err
