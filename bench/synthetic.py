"""Synthetic but realistic memory streams for the consolidation benchmark.

A stream mixes what an assistant hears from one user over months: preferences
(some negated), constraints, decisions, tasks, facts with numbers, amounts,
dates, ids and scopes, plain narrative, and small talk. Values vary, so most
sentences are distinct; some recur word for word, as people repeat themselves.
Deterministic for a given seed.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memlineage import Memory

PROJECTS = (None, None, "orion", "vega", "lyra")
FOODS = ("olives", "sushi", "jazz", "opera", "tea", "coffee", "hiking", "chess", "tofu", "rain")
PLACES = ("Madrid", "Seville", "Lisbon", "Porto", "Berlin", "Oslo", "Kyoto", "Lima")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
MONTHS = ("January", "March", "May", "June", "August", "October", "December")

# (kind or None, template); fields: n (number), m (money), d (day), w (weekday),
# mo (month), f (a food/activity), p (a place), t (ticket number)
TEMPLATES: tuple[tuple[str | None, str], ...] = (
    ("preference", "I love {f}."),
    ("preference", "I really don't like {f} anymore."),
    ("preference", "I prefer {f} over {g} on weekends."),
    ("constraint", "Never book flights that land after {h}:00."),
    ("constraint", "The agent may use read:billing but not write:billing for ticket ORION-{t}."),
    ("constraint", "Keep the monthly budget under ${m},000."),
    ("decision", "We decided to move the launch to {mo} {d}."),
    ("decision", "We agreed to use PostgreSQL {v} for the {p} office."),
    ("task", "TODO: renew the passport before 2027-{mm:02d}-{d:02d}."),
    ("task", "Remind me to call the dentist on {w}."),
    ("fact", "My office is in {p}."),
    ("fact", "I walk about {n},000 steps a day."),
    (None, "The review is not on {mo} {d}, it's on {mo} {d2}."),
    (None, "I never agreed to a ${n}00 fee."),
    (None, "I went sailing on {w} with my sister."),
    (None, "We spent the afternoon in {p} looking at old bookshops."),
    (None, "The weather was grey, so we stayed in and watched a film."),
    (None, "My neighbour's dog finally learned to sit."),
    (None, "I read half of a novel about a lighthouse keeper."),
    (None, "Ticket E-{t} was closed yesterday."),
    ("observation", "The train to {p} was {n} minutes late again."),
    ("observation", "Lunch with Ana went well; she starts her new job in {mo}."),
    (None, "Hi! Thanks so much!"),
    (None, "Good morning!"),
    (None, "Haha, sounds great."),
    (None, "Ok, talk to you later."),
)


#: events per ``Memory.add`` when a benchmark fills a subject
BATCH = 5_000


def fill(memory: Memory, subject: str, count: int, start: int = 0) -> None:
    """Add ``stream(subject, count, start=start)`` to ``memory``, in batches."""
    events = stream(subject, count, start=start)
    for first in range(0, count, BATCH):
        memory.add(events[first : first + BATCH])


def stream(subject: str, count: int, *, start: int = 0, seed: int = 7) -> list[dict[str, Any]]:
    """``count`` events of ``subject`` (ids ``<subject>:e<n>`` from ``start``), a few a day."""
    rng = random.Random(f"{seed}:{subject}:{start}")
    day0 = datetime(2025, 1, 1, 8, 0, tzinfo=UTC)
    events = []
    for n in range(start, start + count):
        kind, template = TEMPLATES[rng.randrange(len(TEMPLATES))]
        food, other = rng.sample(FOODS, 2)
        text = template.format(
            f=food,
            g=other,
            h=rng.randrange(18, 23),
            t=rng.randrange(10_000, 99_999),
            m=rng.randrange(1, 40),
            mo=rng.choice(MONTHS),
            d=rng.randrange(1, 28),
            d2=rng.randrange(1, 28),
            mm=rng.randrange(1, 12),
            w=rng.choice(WEEKDAYS),
            p=rng.choice(PLACES),
            n=rng.randrange(2, 30),
            v=rng.randrange(12, 18),
        )
        at = day0 + timedelta(minutes=37 * n)
        event: dict[str, Any] = {
            "id": f"{subject}:e{n}",
            "subject": subject,
            "text": text,
            "at": at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        if kind is not None and rng.random() < 0.6:
            event["kind"] = kind
        project = PROJECTS[rng.randrange(len(PROJECTS))]
        if project is not None:
            event["project"] = project
        events.append(event)
    return events


# What an assistant hears most days: things that happened, new tickets, small talk.
# Each statement is about something new (its own ticket, its own day), so a tail of
# these contradicts nothing stored before it.
QUIET_TEMPLATES: tuple[str, ...] = (
    "Ticket Q-{n} was opened for the {p} office.",
    "I went sailing on day {n} with my sister.",
    "We spent afternoon {n} in {p} looking at old bookshops.",
    "Lunch number {n} with Ana went well.",
    "Hi! Thanks so much!",
    "Haha, sounds great.",
)


def quiet_tail(subject: str, count: int, *, start: int = 0) -> list[dict[str, Any]]:
    """``count`` events of ``subject`` that contradict nothing (ids as ``stream``'s)."""
    day0 = datetime(2025, 1, 1, 8, 0, tzinfo=UTC)
    return [
        {
            "id": f"{subject}:e{n}",
            "subject": subject,
            "text": QUIET_TEMPLATES[n % len(QUIET_TEMPLATES)].format(
                n=n, p=PLACES[n % len(PLACES)]
            ),
            "at": (day0 + timedelta(minutes=37 * n)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        for n in range(start, start + count)
    ]


def self_contradicting_tail(subject: str, count: int, *, start: int = 0) -> list[dict[str, Any]]:
    """``quiet_tail`` where two events in ten contradict each other and nothing stored
    before them: a price said twice (a conflict kept unresolved) and a preference
    reversed (one the default temporal policy resolves, latest wins)."""
    events = quiet_tail(subject, count, start=start)
    for event in events:
        n = int(event["id"].rsplit(":e", 1)[1])
        said = {
            0: f"Ticket Q-{n} costs 40 EUR.",
            1: f"Ticket Q-{n - 1} costs 55 EUR.",
            2: f"I love song {n}.",
            3: f"I hate song {n - 1} now.",
        }.get(n % 10)
        if said is not None:
            event["text"] = said
    return events
