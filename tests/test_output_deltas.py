"""A summary's output may be stored as its base's output plus what changed (schema 18).

A reader never sees the difference: every artifact reads back as the output its run
built, in the writing process and in one that never read the subject; an erasure
leaves no delta on a rewritten base; and a delta is written only on a base stored
whole and unchanged since its epoch.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from memlineage import Memory
from memlineage.consolidation.consolidate import build
from memlineage.meaning.extract import clear_caches
from memlineage.model import Claim, Output
from memlineage.recall.prompt import render
from memlineage.store import deltas
from memlineage.store.rows import stored_output
from test_stored_items import said


def stored_rows(memory: Memory) -> dict[str, tuple[str | None, int]]:
    """Each artifact's base (None: stored whole) and the size of its stored output."""
    with memory.store._read() as tx:  # type: ignore[attr-defined]
        rows = tx.all("SELECT id, base, output FROM artifacts WHERE tenant = ?", (memory.tenant,))
    return {str(i): (b, len(o or "")) for i, b, o in rows}


def grow(memory: Memory, runs: int, start: int = 200, each: int = 3) -> list[str]:
    """``runs`` warm consolidations of ``each`` new events; the ids they published."""
    published = []
    for run in range(runs):
        memory.add(said(start + each * run, each))
        result = memory.consolidate("user-7")
        assert result.switched, result
        published.append(result.artifact.id)
    return published


def test_a_warm_run_stores_a_small_delta_that_reads_back_as_its_output(
    memory: Memory, db_url: str
) -> None:
    memory.add(said(0, 200))
    first = memory.consolidate("user-7").artifact.id
    (second,) = grow(memory, 1)
    rows = stored_rows(memory)
    assert rows[first][0] is None
    assert rows[second][0] == first
    assert rows[second][1] * 10 < rows[first][1]
    written = memory.artifact(second).output
    assert written is not None
    clear_caches()  # what a process that never read the subject starts with
    again = Memory(db_url, tenant=memory.tenant)
    try:
        read = again.artifact(second).output
        assert read == written
        assert [a.output for a in again.artifacts("user-7")] == [
            a.output for a in memory.artifacts("user-7")
        ]
    finally:
        again.close()


def test_a_reader_in_another_process_sees_the_summary_the_writer_saw(
    memory: Memory, db_url: str
) -> None:
    memory.add(said(0, 200))
    memory.consolidate("user-7")
    grow(memory, 2)
    seen = render(memory.recall("user-7", query="the budget for Lisbon", budget=300))
    summary = render(memory.recall("user-7", budget=300))
    newest = render(memory.recall("user-7", query="note 205", budget=300))
    assert "Lisbon" in seen and "(note 205)" in newest  # the last run's events are read
    # 110 binding events do not fit 300 tokens: the most relevant do, the rest are named
    assert "of them binding)" in summary
    clear_caches()
    again = Memory(db_url, tenant=memory.tenant)
    try:
        assert render(again.recall("user-7", query="the budget for Lisbon", budget=300)) == seen
        assert render(again.recall("user-7", budget=300)) == summary
        assert render(again.recall("user-7", query="note 205", budget=300)) == newest
    finally:
        again.close()


def test_every_delta_is_on_a_base_stored_whole_and_the_chain_is_compacted(
    memory: Memory,
) -> None:
    memory.add(said(0, 200))
    memory.consolidate("user-7")
    published = grow(memory, 8, each=25)
    rows = stored_rows(memory)
    on_bases = [rows[a][0] for a in published if rows[a][0] is not None]
    assert on_bases, "no run stored a delta"
    assert all(rows[base][0] is None for base in on_bases)
    assert any(rows[a][0] is None for a in published), "the deltas were never compacted"


def test_an_erasure_leaves_every_output_whole_and_without_the_event(memory: Memory) -> None:
    memory.add(said(0, 200))
    memory.consolidate("user-7")
    published = grow(memory, 3)
    before = {a: memory.artifact(a).output for a in published}
    assert any(stored_rows(memory)[a][0] is not None for a in published)
    memory.erase("m-4", reason="asked to forget", by="test")
    rows = stored_rows(memory)
    assert all(base is None for base, _ in rows.values())
    clear_caches()
    for artifact_id, old in before.items():
        output = memory.artifact(artifact_id).output
        assert output is not None and old is not None
        assert "m-4" not in output.cold
        assert not any("m-4" in c.derived_from for c in output.claims)
        assert not any("m-4" in s.derived_from for s in output.statements)
        # what did not derive from the erased event is still there
        assert set(output.cold) == set(old.cold) - {"m-4"}
        assert len(output.claims) == sum("m-4" not in c.derived_from for c in old.claims)


def test_a_delta_is_not_written_on_a_base_an_erasure_may_have_rewritten(
    memory: Memory, db_url: str
) -> None:
    memory.add(said(0, 200))
    memory.consolidate("user-7")
    grow(memory, 1)
    memory.add(said(300, 3))
    built = build(memory.store, memory.tenant, "user-7", budget=memory.default_budget)
    erase = ["erase", "m-4", "--db", db_url, "--tenant", memory.tenant, "--reason", "asked"]
    erased = subprocess.run([sys.executable, "-m", "memlineage", *erase], capture_output=True)
    assert erased.returncode == 0, erased.stderr  # another process: this one remembers
    built.write(memory.store, memory.tenant)
    rows = stored_rows(memory)
    assert rows[built.artifact.id][0] is None
    clear_caches()
    assert memory.artifact(built.artifact.id).output == built.artifact.output


entries = st.lists(st.sampled_from([f"e{n}" for n in range(12)]), max_size=30)


@settings(max_examples=300, deadline=None)
@given(base=entries, child=entries)
def test_a_list_encoded_on_a_base_applies_back_to_itself(base: list[str], child: list[str]) -> None:
    index: dict[str, int] = {}
    for position, key in enumerate(base):
        index.setdefault(key, position)
    encoded = deltas.encode_keys(child, index, lambda i: f'"{child[i]}"')
    assert deltas.apply(json.loads(encoded.text), base, str) == child
    assert encoded.cost <= len(child)


def _ids_output(cold: list[str], open_items: list[str], conflicts: list[str]) -> Output:
    return Output(claims=(), open_items=tuple(open_items), unresolved_conflicts=tuple(conflicts),
                  cold=tuple(cold))  # fmt: skip


def test_a_delta_document_materialises_as_the_output_it_encodes() -> None:
    cold, tasks, conflicts = ([f"{p}{n}" for n in range(40)] for p in ("e", "t-", "c-"))
    base = deltas.StoredBase("summary:s:1", 3, _ids_output(cold, tasks, conflicts))
    child = _ids_output([*cold, "e99", "e0"], [*tasks, "t-99"], [*conflicts, "c-99"])
    text, on = stored_output(child, base)
    assert on is base and deltas.is_delta(text) and deltas.base_of(text) == "summary:s:1"
    document: dict[str, Any] = json.loads(text)
    assert document["cold"] == [[0, 40], "e99", [0, 1]]
    assert document["openItems"] == [[0, 40], "t-99"]  # the base's, then one written out
    assert document["unresolvedConflicts"] == [[0, 40], "c-99"]
    assert deltas.materialise(document, base.output) == child
    assert deltas.materialise_json(document, base.output.to_json()) == child.to_json()


def test_a_delta_with_its_short_lists_written_whole_still_reads() -> None:
    """A delta stored before open items and conflicts were encoded on the base's."""
    base = deltas.StoredBase("summary:s:1", 3, _ids_output(["a", "b"], ["t-1"], ["c-1"]))
    child = _ids_output(["a", "b", "d"], ["t-1", "t-2"], ["c-1", "c-2"])
    document = {
        "base": "summary:s:1",
        "baseEpoch": 3,
        "claims": [],
        "openItems": ["t-1", "t-2"],
        "unresolvedConflicts": ["c-1", "c-2"],
        "cold": [[0, 2], "d"],
        "statements": [],
    }
    assert deltas.materialise(document, base.output) == child
    assert deltas.materialise_json(document, base.output.to_json()) == child.to_json()


def edges_into(memory: Memory, artifact_id: str) -> set[str]:
    with memory.store._read() as tx:  # type: ignore[attr-defined]
        rows = tx.all(
            "SELECT parent FROM derivation WHERE tenant = ? AND child = ?",
            (memory.tenant, artifact_id),
        )
    return {str(r[0]) for r in rows}


def test_a_delta_links_what_it_added_and_a_revoke_the_base_read_still_stales_it(
    memory: Memory,
) -> None:
    memory.add(said(0, 200))
    base = memory.consolidate("user-7").artifact.id
    first, second = grow(memory, 2)
    assert stored_rows(memory)[second][0] == base
    since_base = {f"m-{n}" for n in range(200, 206)}  # every delta is on the base
    assert edges_into(memory, second) == since_base | {base, first}
    # staling walks the base's edge (two steps, whatever the history) and the parent's
    stale = set(memory.revoke("m-17").stale)
    assert {base, first, second} <= stale
    recalled = memory.recall("user-7", budget=300)
    assert recalled.mode == "raw"
    memory.work()
    rebuilt = memory.recall("user-7", budget=300)
    assert rebuilt.mode == "summary" and rebuilt.artifact_id not in stale
    assert "(note 17)" not in render(rebuilt)


def test_entries_equal_to_the_base_but_parsed_again_are_still_runs_of_it(
    memory: Memory,
) -> None:
    memory.add(said(0, 200))
    output = memory.consolidate("user-7").artifact.output
    assert output is not None and output.claims and output.statements
    again = Output.from_json(json.loads(json.dumps(output.to_json())))  # new objects
    assert again.claims[0] is not output.claims[0]
    base = deltas.StoredBase("summary:user-7:000200-x", 1, output)
    text, on = stored_output(again, base)
    document = json.loads(text)
    assert on is base
    assert document["claims"] == [[0, len(output.claims)]]  # one run, nothing written out
    assert document["statements"] == [[0, len(output.statements)]]
    assert deltas.materialise(document, output) == again


def test_a_process_that_never_wrote_the_subject_stores_a_delta_on_what_it_read(
    memory: Memory, db_url: str
) -> None:
    memory.add(said(0, 200))
    base = memory.consolidate("user-7").artifact.id
    for runs in (0, 1):  # the published summary read whole, then read as a delta
        grow(memory, runs, start=300)
        clear_caches()  # a restarted worker, or the command line
        again = Memory(db_url, tenant=memory.tenant)
        try:
            again.add(said(400 + 10 * runs, 3))
            result = again.consolidate("user-7")
            assert result.switched
            written = result.artifact
        finally:
            again.close()
        assert stored_rows(memory)[written.id][0] == base
        assert "m-0" not in edges_into(memory, written.id)  # linked through the base
        clear_caches()
        assert memory.artifact(written.id).output == written.output
        memory.consolidate("user-7")  # the next round starts from a base again
        base = max(
            (a for a in memory.artifacts("user-7") if stored_rows(memory)[a.id][0] is None),
            key=lambda a: a.manifest.new_covers_through,
        ).id


def test_a_claim_equal_but_not_the_same_in_json_is_written_out() -> None:
    """True equals 1 and -0.0 equals 0.0 in Python, not in the stored JSON: a child's claim
    that differs so from the base's is written out, and reads back as the child's."""

    def claim(n: int, value: bool | int | float) -> Claim:
        return Claim(f"k{n}", value, None, True, "fact", (f"e{n}",))

    base_claims = (claim(0, 1), claim(1, 0.0), *(claim(n, n) for n in range(2, 40)))
    base = deltas.StoredBase("summary:s:1", 3, Output(claims=base_claims, open_items=(),
                             unresolved_conflicts=(), cold=()))  # fmt: skip
    parsed = tuple(Claim.from_json(c.to_json()) for c in base_claims[2:])  # equal, not the same
    child = Output(claims=(claim(0, True), claim(1, -0.0), *parsed), open_items=(),
                   unresolved_conflicts=(), cold=())  # fmt: skip
    text, on = stored_output(child, base)
    assert on is base
    document: dict[str, Any] = json.loads(text)
    assert document["claims"][2:] == [[2, 40]]  # the equal ones found on the base
    read = deltas.materialise(document, base.output)
    assert read == child
    assert [type(c.value) for c in read.claims[:2]] == [bool, float]
    assert repr(read.claims[1].value) == "-0.0"
