"""The gate's checks of what a reader sees of a statement: words, speaker, characters. Pure.

Two modes, named by the generator's configuration (``wording``):

* ``extractive`` (the default, for every generator): a statement's text is a
  cited event's own text, byte for byte after whitespace is collapsed (or a
  marked part, which ``unit_checks`` judges). A model chooses which events are
  hot, their order, grouping and kind; it cannot change meaning through wording.
* ``reworded`` (a tenant's opt-in): a statement that is not an event's text
  cites exactly one event (or events with the same text) and passes
  :func:`memlineage.meaning.markers.rewording_problem`, which refuses what it
  cannot prove. Several events' values are never crossed in one reworded line.

In both modes the ``speaker`` is the cited events' speaker (never dropped,
never another one), a claim's ``text`` is a verbatim piece of an event it
derives from (or empty), and no field shows a control character, a
bidirectional override or markup that its events lack.

A failure's detail names the class of the problem, never a value to write:
the repair loop hands details to the model.
"""

from __future__ import annotations

from collections.abc import Sequence

from memlineage.consolidation.parts import shown_text
from memlineage.consolidation.unit_checks import quote
from memlineage.meaning.markers import rewording_problem, unsafe_characters
from memlineage.model import Claim, Event, GateFailure, Statement

EXTRACTIVE = "extractive"
REWORDED = "reworded"
WORDINGS: tuple[str, ...] = (EXTRACTIVE, REWORDED)

STATEMENT_REWORDED = "statement_reworded"
STATEMENT_MEANING_CHANGED = "statement_meaning_changed"
STATEMENT_SPEAKER_UNSUPPORTED = "statement_speaker_unsupported"
UNSAFE_TEXT = "unsafe_text"
CLAIM_TEXT_UNSUPPORTED = "claim_text_unsupported"
CODES: tuple[str, ...] = (
    STATEMENT_REWORDED,
    STATEMENT_MEANING_CHANGED,
    STATEMENT_SPEAKER_UNSUPPORTED,
    UNSAFE_TEXT,
    CLAIM_TEXT_UNSUPPORTED,
)


def check_statements(
    statements: Sequence[Statement], events: dict[str, Event], wording: str
) -> list[GateFailure]:
    """Each statement's words (by ``wording``), speaker and characters against its events."""
    failures: list[GateFailure] = []
    for index, statement in enumerate(statements):
        cited = [events[s] for s in dict.fromkeys(statement.derived_from) if s in events]
        if not cited:
            continue  # the lineage check names it
        name = f"statements[{index}]"
        failures += _check_characters(name, statement, cited)
        failures += _check_speaker(name, statement, cited)
        if statement.part is None:  # a marked part is judged by unit_checks, verbatim
            failures += _check_words(name, statement, cited, wording)
    return failures


def _check_words(
    name: str, statement: Statement, cited: Sequence[Event], wording: str
) -> list[GateFailure]:
    shown = shown_text(statement.text)
    wholes = {shown_text(e.text) for e in cited}
    if shown in wholes or not shown:
        return []  # several different wholes: unit_checks names the merge
    if any(shown in whole for whole in wholes):
        return []  # an unmarked piece: unit_checks names it
    if wording != REWORDED:
        detail = f"{quote(statement.text)} is not the text of an event it cites"
        return [GateFailure(STATEMENT_REWORDED, name, detail)]
    if len(wholes) > 1:
        detail = f"{quote(statement.text)} rewords {len(wholes)} different events in one line"
        return [GateFailure(STATEMENT_MEANING_CHANGED, name, detail)]
    source = cited[0]
    allowed = [n for n in (source.speaker, source.project) if n]
    problem = rewording_problem(source.text, statement.text, allowed)
    if problem is None:
        return []
    detail = f"{quote(statement.text)} does not provably keep the {problem} of {source.id}"
    return [GateFailure(STATEMENT_MEANING_CHANGED, name, detail)]


def _check_speaker(name: str, statement: Statement, cited: Sequence[Event]) -> list[GateFailure]:
    """The speaker shown is the cited events' own; one that has a speaker keeps it."""
    speakers = {e.speaker for e in cited}
    if statement.speaker in speakers and (statement.speaker is not None or speakers == {None}):
        return []
    said = "no speaker" if statement.speaker is None else "another speaker"
    detail = f"{quote(statement.text)} shows {said} than the events it cites"
    return [GateFailure(STATEMENT_SPEAKER_UNSUPPORTED, name, detail)]


def _check_characters(name: str, statement: Statement, cited: Sequence[Event]) -> list[GateFailure]:
    """No control character, bidirectional override or markup the events lack."""
    known: set[str] = set()
    for event in cited:
        known |= unsafe_characters(
            " ".join(filter(None, (event.text, event.speaker, event.project)))
        )
    shown = " ".join(filter(None, (statement.text, statement.speaker, statement.project)))
    if unsafe_characters(shown) <= known:
        return []
    detail = f"{quote(statement.text)} has control characters or markup its events lack"
    return [GateFailure(UNSAFE_TEXT, name, detail)]


def claim_labels(claim: Claim) -> tuple[str, str]:
    """The labels a claim's ``text`` may be that say nothing beyond its checked fields."""
    unit = f" {claim.unit}" if claim.unit else ""
    bare = f"{claim.key.rsplit('/', 1)[-1]}: {claim.value}{unit}"
    conflict = f"unresolved conflict {claim.value} between {' and '.join(claim.derived_from)}"
    return bare, conflict


def check_claim_texts(claims: Sequence[Claim], events: dict[str, Event]) -> list[GateFailure]:
    """A claim's ``text`` is empty, a verbatim piece of an event it derives from, or a
    label of its own key and value (which the gate checks)."""
    failures: list[GateFailure] = []
    wholes: dict[str, str] = {}
    for claim in claims:
        text = shown_text(claim.text)
        if not text or text in map(shown_text, claim_labels(claim)):
            continue
        if not any(source in events for source in claim.derived_from):
            continue  # unknown_source names it
        found = False
        for source in claim.derived_from:
            if source in events:
                if source not in wholes:
                    wholes[source] = shown_text(events[source].text)
                found = text in wholes[source]
                if found:
                    break
        if not found:
            detail = f"{quote(claim.text)} is not the words of an event the claim derives from"
            failures.append(GateFailure(CLAIM_TEXT_UNSUPPORTED, claim.key, detail))
    return failures


def wording_of(generator: object) -> str:
    """The wording a generator's statements are judged by: its configuration's, else extractive."""
    config = getattr(generator, "config", None)
    wording = getattr(config, "wording", None) or getattr(generator, "wording", None)
    return wording if wording in WORDINGS else EXTRACTIVE
