"""LoCoMo (Maharana et al., 2024): long conversations, their observations, and QA with evidence.

Each speaker of a conversation becomes a subject (``<sample_id>/<speaker>``);
each observation ``[text, dia_id]`` becomes an event whose id carries its
dialogue id (``<sample_id>/<speaker>/<dia_id>#<n>``), dated by its session.
A QA item's ``evidence`` names dialogue ids; its evidence events are the
observations of either speaker with those ids.

Read the file from where it is kept (``locomo10.json``); never copy it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

SESSION_TIME = "%I:%M %p on %d %B, %Y"


@dataclass(frozen=True)
class QAItem:
    sample_id: str
    question: str
    answer: str
    category: int
    evidence: tuple[str, ...]  # dialogue ids

    def evidence_events(self, conversation: Conversation) -> tuple[str, ...]:
        return tuple(i for d in self.evidence for i in conversation.by_dia_id.get(d, ()))


@dataclass
class Conversation:
    sample_id: str
    speakers: tuple[str, ...]
    events: list[dict[str, Any]] = field(default_factory=list)
    dialogue: list[dict[str, Any]] = field(default_factory=list)  # the turns, for token counts
    qa: list[QAItem] = field(default_factory=list)
    by_dia_id: dict[str, list[str]] = field(default_factory=dict)

    def subject(self, speaker: str) -> str:
        return f"{self.sample_id}/{speaker}"

    @property
    def subjects(self) -> list[str]:
        return [self.subject(s) for s in self.speakers]


def load(path: str | Path) -> list[Conversation]:
    """Every conversation of a LoCoMo file, with its events (as ``Memory.add`` takes them)."""
    with open(path, encoding="utf-8") as handle:
        samples = json.load(handle)
    return [_conversation(sample) for sample in samples]


def _session_time(raw: str | None) -> str | None:
    if not raw:
        return None
    try:
        when = datetime.strptime(raw.strip(), SESSION_TIME)
    except ValueError:
        return None
    # The dataset gives no time zone; its times are read as UTC.
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _sessions(sample: dict[str, Any]) -> Iterator[int]:
    for key in sample["observation"]:
        match = re.fullmatch(r"session_(\d+)_observation", key)
        if match:
            yield int(match.group(1))


def _conversation(sample: dict[str, Any]) -> Conversation:
    talk = sample["conversation"]
    conversation = Conversation(sample["sample_id"], (talk["speaker_a"], talk["speaker_b"]))
    for number in sorted(_sessions(sample)):
        at = _session_time(talk.get(f"session_{number}_date_time"))
        conversation.dialogue.extend(talk.get(f"session_{number}", []))
        observed = sample["observation"][f"session_{number}_observation"]
        for speaker, rows in observed.items():
            for text, dia_id in _rows(rows):
                ids = conversation.by_dia_id.setdefault(dia_id, [])
                event_id = f"{conversation.subject(speaker)}/{dia_id}#{len(ids) + 1}"
                ids.append(event_id)
                event = {"id": event_id, "subject": conversation.subject(speaker), "text": text}
                if at:
                    event["at"] = at
                conversation.events.append(event)
    for qa in sample["qa"]:
        conversation.qa.append(
            QAItem(
                conversation.sample_id,
                str(qa.get("question", "")),
                str(qa.get("answer", qa.get("adversarial_answer", ""))),
                int(qa.get("category", 0)),
                tuple(_evidence(qa.get("evidence", []))),
            )
        )
    return conversation


def _rows(rows: Sequence[Any]) -> Iterator[tuple[str, str]]:
    for row in rows:
        if isinstance(row, list) and len(row) == 2 and isinstance(row[0], str):
            dia = row[1] if isinstance(row[1], str) else str(row[1])
            yield row[0], dia


def _evidence(raw: Sequence[Any]) -> Iterator[str]:
    # A few items list several ids in one string ("D8:6; D9:17"): split them.
    for entry in raw:
        yield from (part.strip() for part in re.split(r"[;,]", str(entry)) if part.strip())
