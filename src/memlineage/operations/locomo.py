"""LoCoMo (Maharana et al., 2024): long conversations, two views of them as events, and QA.

Each speaker of a conversation becomes a subject (``<sample_id>/<speaker>``).
A conversation reads as events in two views, both dated by their session:

- ``observations``: one event per generated observation ``[text, dia_id(s)]``,
  id ``<n>-<k>`` (``n`` the sample number, ``k`` its place in the conversation);
- ``turns``: one event per dialogue turn, text ``Speaker: words``, subject the
  speaker, id ``<n>-<dia_id>`` (``26-D1:3``): what a chat agent stores.

Ids are short because a recall shows them on every line it returns. A QA
item's ``evidence`` names dialogue ids; its evidence events in a view are the
events that stand for those turns. Read the file from where it is kept
(``locomo10.json``); never copy it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

View = Literal["observations", "turns"]
VIEWS: tuple[View, ...] = ("observations", "turns")
SESSION_TIME = "%I:%M %p on %d %B, %Y"
ANSWERED = (1, 2, 3, 4)  # categories with an answer in the conversation (5 is adversarial)


@dataclass(frozen=True)
class Event:
    id: str
    subject: str
    text: str
    at: str | None
    dia_ids: tuple[str, ...]  # the dialogue turns it stands for (a turn: itself)

    def as_added(self) -> dict[str, str]:
        """The event as ``Memory.add`` takes it."""
        added = {"id": self.id, "subject": self.subject, "text": self.text}
        if self.at:
            added["at"] = self.at
        return added


@dataclass(frozen=True)
class QAItem:
    sample_id: str
    question: str
    answer: str
    category: int
    evidence: tuple[str, ...]  # dialogue ids

    def evidence_events(
        self, conversation: Conversation, view: View = "observations"
    ) -> tuple[Event, ...]:
        """The events of ``view`` that stand for this item's evidence turns."""
        index = conversation.by_dia_id(view)
        return tuple(e for d in self.evidence for e in index.get(d, ()))


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    speakers: tuple[str, ...]  # names, as the turns give them
    observations: tuple[Event, ...]
    turns: tuple[Event, ...]
    qa: tuple[QAItem, ...]

    def subject(self, speaker: str) -> str:
        return f"{self.sample_id}/{speaker}"

    @property
    def subjects(self) -> list[str]:
        return [self.subject(s) for s in self.speakers]

    def events(self, view: View) -> tuple[Event, ...]:
        return self.observations if view == "observations" else self.turns

    def by_dia_id(self, view: View) -> Mapping[str, tuple[Event, ...]]:
        return self._indexes[view]

    @cached_property
    def _indexes(self) -> dict[View, dict[str, tuple[Event, ...]]]:
        indexes: dict[View, dict[str, tuple[Event, ...]]] = {}
        for view in VIEWS:
            index: dict[str, list[Event]] = {}
            for event in self.events(view):
                for dia_id in event.dia_ids:
                    index.setdefault(dia_id, []).append(event)
            indexes[view] = {d: tuple(es) for d, es in index.items()}
        return indexes


def load(path: str | Path) -> list[Conversation]:
    """Every conversation of a LoCoMo file, in both views, with its QA items."""
    with open(path, encoding="utf-8") as handle:
        samples = json.load(handle)
    return [_conversation(sample) for sample in samples]


def owed_evidence(
    conversations: Sequence[Conversation], view: View = "observations"
) -> dict[str, list[str]]:
    """The evidence event ids of every answerable QA item (categories 1–4), by subject."""
    owed: dict[str, list[str]] = {}
    for conversation in conversations:
        for item in conversation.qa:
            if item.category in ANSWERED:
                for event in item.evidence_events(conversation, view):
                    owed.setdefault(event.subject, []).append(event.id)
    return {s: list(dict.fromkeys(ids)) for s, ids in owed.items()}


def _conversation(sample: dict[str, Any]) -> Conversation:
    talk = sample["conversation"]
    sample_id = str(sample["sample_id"])
    speakers = (talk["speaker_a"], talk["speaker_b"])
    qa = tuple(_qa_item(sample_id, raw) for raw in sample["qa"])
    return Conversation(
        sample_id, speakers, tuple(_observations(sample)), tuple(_turns(sample)), qa
    )


def _short(sample_id: str) -> str:
    # Short ids: a recall pays for them on every line it returns.
    return sample_id.removeprefix("conv-")


def _observations(sample: dict[str, Any]) -> Iterator[Event]:
    sample_id = str(sample["sample_id"])
    count = 0
    for number in _sessions(sample["observation"], r"session_(\d+)_observation"):
        at = _session_time(sample["conversation"].get(f"session_{number}_date_time"))
        observed = sample["observation"][f"session_{number}_observation"]
        for speaker, rows in observed.items():
            for text, dia_ids in _rows(rows):
                event_id = f"{_short(sample_id)}-{count}"
                yield Event(event_id, f"{sample_id}/{speaker}", text, at, dia_ids)
                count += 1


def _turns(sample: dict[str, Any]) -> Iterator[Event]:
    sample_id = str(sample["sample_id"])
    talk = sample["conversation"]
    for number in _sessions(talk, r"session_(\d+)"):
        at = _session_time(talk.get(f"session_{number}_date_time"))
        for turn in talk[f"session_{number}"]:
            dia_id, speaker = str(turn["dia_id"]), str(turn["speaker"])
            event_id = f"{_short(sample_id)}-{dia_id}"
            text = f"{speaker}: {turn['text']}"
            yield Event(event_id, f"{sample_id}/{speaker}", text, at, (dia_id,))


def _qa_item(sample_id: str, raw: dict[str, Any]) -> QAItem:
    return QAItem(
        sample_id,
        str(raw.get("question", "")),
        str(raw.get("answer", raw.get("adversarial_answer", ""))),
        int(raw.get("category", 0)),
        tuple(_evidence(raw.get("evidence", []))),
    )


def _session_time(raw: str | None) -> str | None:
    if not raw:
        return None
    try:
        when = datetime.strptime(raw.strip(), SESSION_TIME)
    except ValueError:
        return None
    # The dataset gives no time zone; its times are read as UTC.
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _sessions(keyed: Mapping[str, Any], pattern: str) -> list[int]:
    """The session numbers of the keys matching ``pattern``, in order."""
    return sorted(int(m.group(1)) for k in keyed if (m := re.fullmatch(pattern, k)))


def _rows(rows: Sequence[Any]) -> Iterator[tuple[str, tuple[str, ...]]]:
    # An observation names one dialogue id, or several (as a list or "D1:2, D1:4").
    for row in rows:
        if isinstance(row, list) and len(row) == 2 and isinstance(row[0], str):
            parts = row[1] if isinstance(row[1], list) else [row[1]]
            ids = tuple(d.strip() for p in parts for d in str(p).split(",") if d.strip())
            yield row[0], ids


def _evidence(raw: Sequence[Any]) -> Iterator[str]:
    # A few items list several ids in one string ("D8:6; D9:17"): split them.
    for entry in raw:
        yield from (part.strip() for part in re.split(r"[;,]", str(entry)) if part.strip())
