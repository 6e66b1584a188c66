"""The built-in generator: no model, output that passes the gate by construction.

One claim per distinct must-preserve statement (items with the same key,
canonical value and polarity from several events become one claim deriving
from all of them); anything grounded in a side of an unresolved conflict is
stated as contested (kind ``conflict``), never as fact. The summary is built
from the claims, and any sentence naming a number or date that no claim
carries is left out of it. Over the token budget, events with no items move
to the cold layer and their narrative leaves the summary; claims and open
items never give way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..extract import text_values
from ..gate import CONFLICT_KIND, carried_values
from ..model import Claim, Event, Item
from ..values import Canonical, canonical, unit_display
from .base import GenerationRequest

_KIND_LABELS: dict[str, str] = {
    "constraint": "Constraints",
    "negation": "Negated statements",
    "preference": "Preferences",
    "decision": "Decisions",
    "number": "Quantities",
    "money": "Amounts",
    "date": "Dates and times",
    "id": "Identifiers",
    "scope": "Permission scopes",
}


def approx_tokens(text: str) -> int:
    """A word count stands in for tokens until a tokenizer is wired in."""
    return len(text.split())


class DeterministicGenerator:
    """Fills the :class:`~memlineage.generators.base.Generator` protocol without a model."""

    name = "deterministic"
    prompt_version = "deterministic-v1"
    model_snapshot = "builtin"

    def generate(self, request: GenerationRequest) -> dict[str, Any]:
        unresolved = [c for c in request.conflicts if not c.resolved]
        sides = {side for c in unresolved for side in (c.a, c.b)}
        conflict_sides = {c.id: (c.a, c.b) for c in unresolved}
        claims = _claims(request.items, sides, conflict_sides)
        with_items = {item.source for item in request.items}
        narrative = [e for e in request.events if e.id not in with_items]
        summary = _summary(claims, narrative)
        cold: list[str] = []
        if request.budget is not None and _output_tokens(claims, summary) > request.budget:
            open_ids = set(request.open_items)
            cold = [e.id for e in narrative if e.id not in open_ids]
            kept = [e for e in narrative if e.id in open_ids]
            summary = _summary(claims, kept)
        return {
            "claims": [c.to_json() for c in claims],
            "openItems": list(request.open_items),
            "unresolvedConflicts": sorted(c.id for c in unresolved),
            "summary": summary,
            "cold": cold,
            "statements": [],
        }


def _claims(
    items: Sequence[Item], sides: set[str], conflict_sides: dict[str, tuple[str, str]]
) -> list[Claim]:
    groups: dict[tuple[str, Canonical, bool], list[Item]] = {}
    for item in items:
        groups.setdefault((item.key, canonical(item.value, item.unit), item.polarity), []).append(
            item
        )
    claims = []
    for members in groups.values():
        first = members[0]
        sources = list(dict.fromkeys(m.source for m in members))
        if first.kind == CONFLICT_KIND and str(first.value) in conflict_sides:
            sources = list(dict.fromkeys([*sources, *conflict_sides[str(first.value)]]))
        contested = first.kind == CONFLICT_KIND or any(s in sides for s in sources)
        kind = CONFLICT_KIND if contested else first.kind
        claims.append(
            Claim(
                key=first.key,
                value=first.value,
                unit=first.unit,
                polarity=first.polarity,
                kind=kind,
                derived_from=tuple(sources),
                text=_claim_text(first, contested),
            )
        )
    return claims


def _render_value(item: Item | Claim) -> str:
    if item.unit:
        return f"{item.value} {unit_display(item.unit)}"
    return str(item.value)


_CLAUSE_KINDS = frozenset({"constraint", "negation", "preference", "decision"})


def _negated(text: str, kind: str, polarity: bool) -> str:
    """Clause values carry their own negation words; other negated values get a 'not'."""
    return text if polarity or kind in _CLAUSE_KINDS else f"not {text}"


def _claim_text(item: Item, contested: bool) -> str:
    text = _negated(_render_value(item), item.kind, item.polarity)
    if item.kind == CONFLICT_KIND:
        return f"unresolved conflict {item.value}"
    return f"contested: {text}" if contested else text


def _summary(claims: Sequence[Claim], narrative: Sequence[Event]) -> str:
    """One line per kind of claim, then the narrative; a line the gate would refuse is left out.

    Lines are joined by newlines, which always end a sentence, so the gate
    reads each line exactly as it was checked here.
    """
    carried = carried_values(claims)
    by_label: dict[str, list[str]] = {}
    contested: list[str] = []
    for claim in claims:
        if claim.kind == CONFLICT_KIND:
            if not claim.key.startswith("conflict/"):
                contested.append(_render_value(claim))
            continue
        label = _KIND_LABELS.get(claim.kind, "Facts")
        by_label.setdefault(label, []).append(
            _negated(_render_value(claim), claim.kind, claim.polarity)
        )
    sentences = [f"{label}: {'; '.join(parts)}." for label, parts in by_label.items()]
    if contested:
        sentences.append(f"Contested, awaiting resolution: {'; '.join(contested)}.")
    sentences += [" ".join(e.text.split()) for e in narrative if e.text.strip()]
    return "\n".join(s for s in sentences if _only_carried(s, carried))


def _only_carried(sentence: str, carried: set[Canonical]) -> bool:
    """True when every number or date the line names is a claim's value (the gate's rule)."""
    return all(canonical(v, u) in carried for v, u, _ in text_values(sentence))


def _output_tokens(claims: Sequence[Claim], summary: str) -> int:
    return approx_tokens(summary) + sum(approx_tokens(c.text) + 4 for c in claims)
