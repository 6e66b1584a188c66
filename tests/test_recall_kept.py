"""A long-lived process's recall keeps what it read (recall/kept.py) and still sees,
on its next call, everything another process recorded since: operations, a new
summary, an erasure. The other process is a real one, on its own connection."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from memlineage import Memory
from memlineage.recall.prompt import render

SUBJECT = "user-1"


def in_another_process(db_url: str, code: str) -> None:
    """Run ``code`` with ``memory`` open on the same database, in a new process."""
    script = "from memlineage import Memory\n"
    script += f"with Memory({db_url!r}, tenant='acme') as memory:\n"
    script += textwrap.indent(textwrap.dedent(code), "    ")
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)


def summarised(memory: Memory) -> None:
    memory.add(
        [
            {"id": "e1", "subject": SUBJECT, "text": "I live in Lisbon."},
            {"id": "e2", "subject": SUBJECT, "text": "Never call me before 9am.",
             "kind": "constraint"},
            {"id": "e3", "subject": SUBJECT, "text": "My locker code is 4471."},
        ]
    )  # fmt: skip
    assert memory.consolidate(SUBJECT).switched
    memory.add([{"id": "e4", "subject": SUBJECT, "text": "I bought a red kayak."}])
    memory.work()


def shown(memory: Memory, query: str | None = None) -> str:
    """The markdown a reader gets, with a query and a budget when ``query`` is given."""
    if query is None:
        return render(memory.recall(SUBJECT), "markdown")
    return render(memory.recall(SUBJECT, query=query, budget=300), "markdown")


def test_a_kept_recall_sees_a_revocation_and_a_quarantine_made_elsewhere(db_url: str) -> None:
    with Memory(db_url, tenant="acme") as memory:
        summarised(memory)
        for query in (None, "kayak locker"):
            assert "red kayak" in shown(memory, query)
        assert memory.recall(SUBJECT).mode == "summary"
        in_another_process(db_url, 'memory.revoke("e4", reason="said in jest")\n')
        for query in (None, "kayak locker"):
            assert "red kayak" not in shown(memory, query)
        assert "My locker code is 4471." in shown(memory, "kayak locker")
        assert "I live in Lisbon." in shown(memory)
        memory.add([{"id": "e5", "subject": SUBJECT, "text": "I sold the kayak."}])
        assert "I sold the kayak." in shown(memory, "kayak")
        in_another_process(db_url, 'memory.trust("e5", taint=["prompt-injection"])\n')
        assert "I sold the kayak." not in shown(memory, "kayak")
        assert "I sold the kayak." not in shown(memory)


def test_a_kept_summary_gives_way_to_one_published_elsewhere(db_url: str) -> None:
    with Memory(db_url, tenant="acme") as memory:
        summarised(memory)
        first = memory.recall(SUBJECT, query="kayak", budget=300)
        in_another_process(
            db_url,
            """
            memory.add([{"id": "e6", "subject": "user-1", "text": "Ship it to Porto."}])
            assert memory.consolidate("user-1").switched
            """,
        )
        again = memory.recall(SUBJECT, query="Porto", budget=300)
        assert again.mode == "summary" and again.artifact_id != first.artifact_id
        assert [e.id for e in first.tail] == ["e4"] and again.tail == ()
        text = render(again, "markdown")
        assert text.count("Ship it to Porto.") == 1 and text.count("red kayak") == 1


def test_a_raw_subject_summarised_elsewhere_is_read_from_its_summary(db_url: str) -> None:
    with Memory(db_url, tenant="acme") as memory:
        memory.add([{"id": "r1", "subject": SUBJECT, "text": "I live in Lisbon."}])
        memory.work()
        assert memory.recall(SUBJECT, query="Lisbon", budget=300).mode == "raw"
        in_another_process(
            db_url,
            """
            memory.add([{"id": "r2", "subject": "user-1", "text": "I moved to Porto."}])
            assert memory.consolidate("user-1").switched
            """,
        )
        again = memory.recall(SUBJECT, query="Lisbon Porto", budget=300)
        assert again.mode == "summary" and again.tail == ()
        text = render(again, "markdown")
        assert text.count("I live in Lisbon.") == 1 and text.count("I moved to Porto.") == 1


def test_an_erasure_in_another_process_leaves_nothing_in_a_kept_recall(db_url: str) -> None:
    with Memory(db_url, tenant="acme") as memory:
        summarised(memory)
        for query in (None, "locker code"):
            assert "4471" in shown(memory, query)
        in_another_process(db_url, 'memory.erase("e3", reason="asked to", by="dpo")\n')
        for query in (None, "locker code"):
            text = shown(memory, query)
            assert "4471" not in text and "locker" not in text
            assert "Never call me before 9am." in text


def test_a_conflict_recorded_elsewhere_is_shown_by_a_kept_recall(db_url: str) -> None:
    with Memory(db_url, tenant="acme") as memory:
        summarised(memory)
        assert memory.recall(SUBJECT).conflicts == ()
        in_another_process(
            db_url,
            """
            memory.add([{"id": "e7", "subject": "user-1", "text": "I live in Porto."}])
            memory.conflict("e1", "e7", key="home")
            """,
        )
        recalled = memory.recall(SUBJECT, query="live", budget=300)
        assert [(c.a, c.b) for c in recalled.conflicts] == [("e1", "e7")]
        text = render(recalled, "markdown")
        assert "I live in Lisbon." in text and "I live in Porto." in text
