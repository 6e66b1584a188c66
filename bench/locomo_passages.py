"""A small reader of LoCoMo (locomo10.json), read in place from the shared data folder.

Each speaker of a conversation is a subject; each observation is an event whose
``at`` is its session's date, and which stands for the dialogue turns
(``dia_id``s) it names: the QA items' evidence. The file is never copied.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dateutil import parser as dateparser

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Observation:
    id: str
    subject: str
    text: str
    at: str
    dia_ids: tuple[str, ...]


@dataclass(frozen=True)
class Question:
    conversation: str
    question: str
    answer: str
    evidence: tuple[str, ...]
    category: int


@dataclass(frozen=True)
class Conversation:
    id: str
    speakers: tuple[str, str]  # subjects
    observations: tuple[Observation, ...]
    questions: tuple[Question, ...]


def locomo_path() -> Path:
    shared = os.environ.get("MEMLINEAGE_SHARED_DATA")
    base = Path(shared) if shared else HERE.parents[1] / "shared" / "data"
    return base / "locomo" / "locomo10.json"


def load(path: Path | None = None) -> list[Conversation]:
    data = json.loads((path or locomo_path()).read_text("utf-8"))
    return [_conversation(c) for c in data]


def _conversation(raw: dict[str, Any]) -> Conversation:
    cid = raw["sample_id"]
    talk = raw["conversation"]
    names = (talk["speaker_a"], talk["speaker_b"])
    subjects = (f"{cid}/{names[0]}", f"{cid}/{names[1]}")
    observations: list[Observation] = []
    for key in sorted(raw["observation"], key=_session_number):
        session = _session_number(key)
        at = _iso(talk.get(f"session_{session}_date_time"))
        for speaker, rows in raw["observation"][key].items():
            subject = subjects[names.index(speaker)]
            for text, dia in rows:
                observations.append(
                    Observation(
                        # short ids: every method pays for them on every line it returns
                        id=f"{cid.removeprefix('conv-')}-{len(observations)}",
                        subject=subject,
                        text=text,
                        at=at,
                        dia_ids=_dia_ids(dia),
                    )
                )
    questions = tuple(
        Question(cid, q["question"], str(q.get("answer", "")), tuple(_evidence(q)), q["category"])
        for q in raw["qa"]
    )
    return Conversation(cid, subjects, tuple(observations), questions)


def _session_number(key: str) -> int:
    return int(re.findall(r"\d+", key)[0])


def _iso(when: str | None) -> str:
    return dateparser.parse(when).strftime("%Y-%m-%dT%H:%M:00Z") if when else ""


def _dia_ids(dia: str | list[str]) -> tuple[str, ...]:
    parts = dia if isinstance(dia, list) else [dia]
    return tuple(d.strip() for p in parts for d in p.split(",") if d.strip())


def _evidence(question: dict[str, Any]) -> list[str]:
    return [d.strip() for e in question.get("evidence", []) for d in e.split(";") if d.strip()]
