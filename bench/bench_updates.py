"""What is current: how often a recall shows the newest word on a matter, and never the
outdated one alone (docs/updates.md).

Two parts, in one run, on the backend asked:

1. **Update streams.** Each stream is an older event, the later event that updates
   it (nobody wrote ``supersedes``), and a question; between them, chatter: real
   LoCoMo dialogue turns of one speaker. ``tuned`` streams are the ones the rules
   were written on (tests/test_updates.py holds the same pairs); ``held-out``
   streams were written after the rules and never tuned on. For each stream,
   budget (200, 500), mode (raw, then consolidated) and form of recall (the
   question as query; the older event's own words as query, which match the
   outdated text best; no query) the rendered markdown is read:
   ``current`` counts answers that show the newer event's text, ``outdated alone``
   those that show the older event's text without the newer one's. Plain BM25
   over the events (the 30-line baseline) is read the same way, same budget and
   line format, for the two queries.
2. **LoCoMo category 2** (the temporal questions, whose answers move with
   time): evidence recall of memlineage and of plain BM25 at 500 and 1,000 tokens,
   both speakers recalled together, on the dialogue turns.

    python bench/bench_updates.py [--backend sqlite|postgres] [--conversations N]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from bench_recall_locomo import Score, bm25_baseline, populate
from common import LOCOMO, open_memory
from memlineage import Memory, render
from memlineage.operations.locomo import Conversation, load
from memlineage.recall.context import pack
from memlineage.recall.prompt import layout, passage_line
from memlineage.recall.read import finish, gather

BUDGETS = (200, 500)
CHATTER = 40  # LoCoMo turns between the older event and its update


@dataclass(frozen=True)
class Stream:
    older: str
    newer: str
    question: str
    split: str


TUNED = [
    Stream("I live in Porto, in a flat near the Ribeira.",
           "We moved to Lisbon this weekend; the Porto flat is handed back.",
           "Where do I live?", "tuned"),
    Stream("I can't do flights before 9am.", "Update: I can do the 7am flight after all.",
           "Which flights can I take in the morning?", "tuned"),
    Stream("I'm vegetarian.", "I've started eating fish again, pescatarian now.",
           "What do I eat?", "tuned"),
    Stream("Never email me after 9 pm.", "You can email me any time now, I changed jobs.",
           "When can you email me?", "tuned"),
    Stream("Book a table for 6.", "Make that 8 people.", "How many people is the table for?",
           "tuned"),
    Stream("My number is 555-0100.", "My new number is 555-0199.", "What is my phone number?",
           "tuned"),
    Stream("I work at Acme as a data engineer.", "I work at Globex now.", "Where do I work?",
           "tuned"),
]  # fmt: skip

# Written after the rules, never tuned on: the figures below are what they are.
HELD_OUT = [
    Stream("My office is in Building 4.", "We switched offices, I'm in Building 9 now.",
           "Which building is my office in?", "held-out"),
    Stream("I'm based in Berlin.", "I relocated to Munich last month.", "Where am I based?",
           "held-out"),
    Stream("My email is ana@old-mail.example.", "My new email is ana@new-mail.example.",
           "What is my email address?", "held-out"),
    Stream("I don't drink coffee.", "I drink coffee again these days.", "Do I drink coffee?",
           "held-out"),
    Stream("Please call me Tom.", "Actually, call me Thomas from now on.",
           "What should you call me?", "held-out"),
    Stream("The budget for the trip is 2,000 EUR.", "Update: the trip budget is now 2,500 EUR.",
           "What is the trip budget?", "held-out"),
    Stream("I go to the gym on Mondays.", "I moved my gym day to Wednesdays.",
           "Which day do I go to the gym?", "held-out"),
    Stream("Don't book aisle seats for me.", "Aisle seats are fine now, my knee healed.",
           "Can you book me an aisle seat?", "held-out"),
    Stream("I'm allergic to penicillin.", "Turns out I'm not allergic to penicillin after all.",
           "Am I allergic to penicillin?", "held-out"),
    Stream("Our daughter is in 3rd grade.", "Our daughter started 4th grade this week.",
           "Which grade is our daughter in?", "held-out"),
]  # fmt: skip


@dataclass
class Tally:
    answers: int = 0
    current: int = 0
    outdated_alone: int = 0

    def add(self, text: str, stream: Stream) -> None:
        self.answers += 1
        self.current += stream.newer in text
        self.outdated_alone += stream.older in text and stream.newer not in text

    def row(self, name: str) -> str:
        n = max(self.answers, 1)
        return (
            f"| {name} | {self.answers} | {self.current / n:.3f} | {self.outdated_alone}"
            f" ({self.outdated_alone / n:.3f}) |"
        )


def chatter(conversations: Sequence[Conversation]) -> list[str]:
    turns = [e.text for e in conversations[0].events("turns")]
    return turns[:CHATTER]


def run_streams(memory: Memory, filler: list[str], streams: list[Stream]) -> dict[str, Tally]:
    tallies = {name: Tally() for name in ("memlineage", "bm25 raw")}
    for n, stream in enumerate(streams):
        subject = f"ku-{stream.split}-{n}"
        said = [stream.older, *filler, stream.newer]
        memory.add(
            [{"id": f"{subject}-{k}", "subject": subject, "text": t} for k, t in enumerate(said)]
        )
        for consolidated in (False, True):
            if consolidated:
                memory.consolidate(subject)
            for budget in BUDGETS:
                for query in (stream.question, stream.older, None):
                    text = render(memory.recall(subject, query, budget))
                    tallies["memlineage"].add(text, stream)
        by_id: dict[str, Any] = {
            f"{subject}-{k}": SimpleNamespace(id=f"{subject}-{k}", text=t, at=None)
            for k, t in enumerate(said)
        }
        for budget in BUDGETS:
            for query in (stream.question, stream.older):
                ranked = bm25_baseline(memory, [subject], query, by_id)
                text = "\n".join(passage_line(p) for p in pack(ranked, budget, layout(budget)).kept)
                tallies["bm25 raw"].add(text, stream)
    return tallies


def locomo_temporal(memory: Memory, conversations: Sequence[Conversation]) -> dict[str, Score]:
    """Evidence recall on LoCoMo's category-2 questions, memlineage and plain BM25."""
    scores = {f"{m} @{b}": Score() for m in ("memlineage", "bm25 raw") for b in (500, 1000)}
    costs = layout()
    policy = memory.store.policy
    for conv in conversations:
        dia = {e.id: e.dia_ids for e in conv.events("turns")}
        by_id = {e.id: e for e in conv.events("turns")}
        for question in conv.qa:
            if question.category != 2:
                continue
            with memory.store.reader(memory.tenant) as reader:
                found = [
                    gather(reader, s, policy, question.question, with_items=True)
                    for s in conv.subjects
                ]
            rag = bm25_baseline(memory, conv.subjects, question.question, by_id)
            for budget in (500, 1000):
                mine = finish(found, question.question, budget)
                scores[f"memlineage @{budget}"].add(mine.context, mine.tokens or 0, question, dia)
                packed = pack(rag, budget, costs)
                scores[f"bm25 raw @{budget}"].add(packed.kept, packed.tokens, question, dia)
    return scores


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--conversations", type=int, default=10)
    args = parser.parse_args()
    conversations = load(LOCOMO)[: args.conversations]
    with open_memory(args.backend) as memory:
        filler = chatter(conversations)
        print(f"{args.backend}: update streams, {CHATTER} LoCoMo turns between the two events,")
        print(f"budgets {BUDGETS}, raw and consolidated, with and without the question\n")
        print("| streams, reader | answers | current shown | outdated alone |")
        print("| --- | --- | --- | --- |")
        outdated = 0
        for name, streams in (("tuned", TUNED), ("held-out", HELD_OUT)):
            for reader, tally in run_streams(memory, filler, streams).items():
                print(tally.row(f"{name} ({len(streams)}), {reader}"))
                outdated += tally.outdated_alone if reader == "memlineage" else 0
    with open_memory(args.backend) as memory:
        populate(memory, conversations, "turns")
        print(f"\nLoCoMo category 2 (temporal), turns, {len(conversations)} conversations")
        print("| reader | evidence (all) | evidence (any) | answer string | median tokens |")
        print("| --- | --- | --- | --- | --- |")
        for name, score in locomo_temporal(memory, conversations).items():
            cells = score.row().split()
            print(f"| {name} ({score.items} questions) | {' | '.join(cells)} |")
    return 1 if outdated else 0


if __name__ == "__main__":
    sys.exit(main())
