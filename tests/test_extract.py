"""The must-preserve extractor: per-kind behaviour, the key scheme, and an accuracy set.

Run ``.venv/bin/python tests/test_extract.py`` to print precision and recall per kind.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memlineage.meaning import extract
from memlineage.meaning.extract import (
    KINDS,
    conflict_item,
    event_items,
    expected_open_items,
    extract_items,
    sentence_spans,
    split_sentences,
    text_values,
)
from memlineage.meaning.values import canonical
from memlineage.model import Conflict, Event, Fact, Item

CASES = Path(__file__).parent / "data" / "extraction_cases.jsonl"
# Sentences for polarity after a value, past-tense weekdays, local days, lexicon
# preferences, ambiguous units, short ids and upper-case scopes.
PRECISION_CASES = Path(__file__).parent / "data" / "extraction_cases_precision.jsonl"
# Third-person observations of a chat and conversational rules: constraint words used
# for habits, guesses and descriptions, next to real constraints said in passing.
NARRATIVE_CASES = Path(__file__).parent / "data" / "extraction_cases_narrative.jsonl"
AT = "2024-03-01T10:00:00Z"  # a Friday
PERFECT_RECALL = ("constraint", "negation", "number", "id", "scope")


def ev(text: str, id: str = "e1", **kw: Any) -> Event:
    return Event(id=id, subject="u", text=text, at=kw.pop("at", AT), **kw)


def found(text: str, **kw: Any) -> list[tuple[str, object, str | None, bool]]:
    return [(i.kind, i.value, i.unit, i.polarity) for i in event_items(ev(text, **kw))]


# ---------------------------------------------------------------------------
# accuracy set


def load_cases(path: Path = CASES) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _matches(item: Item, expected: dict[str, Any]) -> bool:
    if item.kind != expected["kind"] or item.polarity != expected.get("polarity", True):
        return False
    if "value" not in expected:
        return True
    return canonical(item.value, item.unit) == canonical(expected["value"], expected.get("unit"))


def score(cases: list[dict[str, Any]]) -> dict[str, tuple[int, int, int]]:
    """(true positives, false positives, false negatives) per kind."""
    tp: Counter[str] = Counter()
    fp: Counter[str] = Counter()
    fn: Counter[str] = Counter()
    for n, case in enumerate(cases):
        event = Event(id=f"x{n}", subject="u", text=case["text"], at=case.get("at"),
                      project=case.get("project"), kind=case.get("kind"))  # fmt: skip
        got = event_items(event)
        for expected in case["expected"]:
            hit = next((i for i in got if _matches(i, expected)), None)
            if hit is None:
                fn[expected["kind"]] += 1
            else:
                got.remove(hit)
                tp[expected["kind"]] += 1
        for item in got:
            fp[item.kind] += 1
    kinds = sorted(set(tp) | set(fp) | set(fn))
    return {k: (tp[k], fp[k], fn[k]) for k in kinds}


def table(scores: dict[str, tuple[int, int, int]]) -> str:
    lines = [f"{'kind':<11} {'P':>6} {'R':>6} {'tp':>4} {'fp':>4} {'fn':>4}"]
    for kind, (tp, fp, fn) in scores.items():
        p = tp / (tp + fp) if tp + fp else 1.0
        r = tp / (tp + fn) if tp + fn else 1.0
        lines.append(f"{kind:<11} {p:6.3f} {r:6.3f} {tp:4d} {fp:4d} {fn:4d}")
    return "\n".join(lines)


def split(name: str, path: Path = CASES) -> list[dict[str, Any]]:
    """'dev' / 'tuning': written with the patterns; 'holdout': never tuned on."""
    return [c for c in load_cases(path) if c.get("split", "dev") == name]


#: the sets ``python tests/test_extract.py`` prints, in order
SETS: tuple[tuple[str, str, Path], ...] = (
    ("dev", "dev", CASES),
    ("holdout", "holdout", CASES),
    ("precision tuning", "tuning", PRECISION_CASES),
    ("precision holdout", "holdout", PRECISION_CASES),
    ("narrative tuning", "tuning", NARRATIVE_CASES),
    ("narrative holdout", "holdout", NARRATIVE_CASES),
)


def test_accuracy_set_is_large_and_covers_every_kind() -> None:
    cases = split("dev")
    assert len(cases) >= 150
    kinds = {e["kind"] for c in cases for e in c["expected"]}
    assert kinds >= set(KINDS) - {"conflict"}


def test_accuracy_per_kind() -> None:
    scores = score(split("dev"))
    print("\n" + table(scores))
    for kind in PERFECT_RECALL:
        tp, _, fn = scores[kind]
        assert fn == 0, f"{kind}: recall {tp / (tp + fn):.3f}"
    for kind, (tp, fp, _) in scores.items():
        assert tp / (tp + fp) >= 0.9, f"{kind}: precision {tp / (tp + fp):.3f}"


def test_accuracy_on_the_holdout() -> None:
    """A regression floor below the first (and only) measurement: 38 of 40 items."""
    scores = score(split("holdout"))
    print("\n" + table(scores))
    tp = sum(s[0] for s in scores.values())
    fn = sum(s[2] for s in scores.values())
    assert tp / (tp + fn) >= 0.94


def test_precision_set_is_large_with_a_holdout() -> None:
    tuning, holdout = split("tuning", PRECISION_CASES), split("holdout", PRECISION_CASES)
    assert len(tuning) + len(holdout) >= 150 and len(holdout) >= 40


def test_accuracy_on_the_precision_set() -> None:
    scores = score(split("tuning", PRECISION_CASES))
    print("\n" + table(scores))
    for kind, (tp, fp, fn) in scores.items():
        assert tp / (tp + fp) >= 0.95, f"{kind}: precision {tp / (tp + fp):.3f}"
        assert tp / (tp + fn) >= 0.95, f"{kind}: recall {tp / (tp + fn):.3f}"


def test_accuracy_on_the_precision_holdout() -> None:
    """A regression floor below the first measurement (recall 51/53, precision 51/52)."""
    scores = score(split("holdout", PRECISION_CASES))
    print("\n" + table(scores))
    tp, fp, fn = (sum(s[i] for s in scores.values()) for i in range(3))
    assert tp / (tp + fn) >= 0.94 and tp / (tp + fp) >= 0.94


def ratios(scores: dict[str, tuple[int, int, int]], kind: str) -> tuple[float, float]:
    """(precision, recall) of one kind; 1.0 where nothing was found or expected."""
    tp, fp, fn = scores.get(kind, (0, 0, 0))
    return (tp / (tp + fp) if tp + fp else 1.0, tp / (tp + fn) if tp + fn else 1.0)


def test_narrative_set_is_large_with_a_holdout() -> None:
    tuning, holdout = split("tuning", NARRATIVE_CASES), split("holdout", NARRATIVE_CASES)
    assert len(tuning) + len(holdout) >= 80 and len(holdout) >= 30
    expected = [e["kind"] for c in tuning + holdout for e in c["expected"]]
    assert expected.count("constraint") >= 25  # real constraints, said in conversation
    assert sum(1 for c in tuning + holdout if not c["expected"]) >= 40  # nothing to keep


#: (precision, recall) per kind, as measured after the narrative rules. Before them,
#: constraint precision was 0.321 (17/53) on the tuning split and 0.316 (12/38) on
#: the holdout. Preferences told in the perfect or the past ('has always liked') are
#: not read (see docs/extraction.md), hence their recall.
NARRATIVE_TUNING = {
    "constraint": (1.0, 1.0),
    "date": (1.0, 1.0),
    "decision": (1.0, 1.0),
    "money": (1.0, 1.0),
    "negation": (1.0, 1.0),
    "number": (1.0, 1.0),
    "preference": (1.0, 0.33),
}
#: the holdout, scored once after the rules (never tuned on): constraint 12/14
#: precision ('a limited run', 'you should definitely check out ...'), with a margin
NARRATIVE_HOLDOUT = {
    "constraint": (0.8, 0.9),
    "date": (0.9, 0.9),
    "decision": (0.9, 0.9),
    "money": (0.9, 0.9),
    "negation": (0.9, 0.9),
    "number": (0.9, 0.9),
    "preference": (0.9, 0.0),
}


@pytest.mark.parametrize(
    ("name", "floors"), [("tuning", NARRATIVE_TUNING), ("holdout", NARRATIVE_HOLDOUT)]
)
def test_accuracy_on_the_narrative_set(name: str, floors: dict[str, tuple[float, float]]) -> None:
    scores = score(split(name, NARRATIVE_CASES))
    print("\n" + table(scores))
    assert set(scores) <= set(floors)
    for kind, (precision, recall) in floors.items():
        p, r = ratios(scores, kind)
        assert p >= precision, f"{kind}: precision {p:.3f}"
        assert r >= recall, f"{kind}: recall {r:.3f}"


# ---------------------------------------------------------------------------
# kinds


@pytest.mark.parametrize(
    ("text", "polarity"),
    [
        ("I don't eat meat.", False),
        ("I'm not unwilling to relocate.", True),
        ("He never fails to reply.", True),
        ("It is not impossible.", True),
        ("We are not without options.", True),
        ("The request failed.", None),  # 'failed' without 'to' negates nothing
        ("No, I'm fine with it.", None),  # an interjection
    ],
)
def test_negation_polarity(text: str, polarity: bool | None) -> None:
    negations = [p for k, _, _, p in found(text) if k == "negation"]
    assert negations == ([] if polarity is None else [polarity])


def test_limit_idioms_are_not_negations() -> None:
    assert found("Spend no more than $500.") == [
        ("money", 500, "USD", True),
        ("constraint", "spend no more than $500", None, True),
    ]


def clause_kinds(text: str) -> list[tuple[str, bool]]:
    return [(k, p) for k, _, _, p in found(text) if k in ("constraint", "negation", "preference")]


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        # a capitalised keyword inside a sentence is a name
        ("Ravi had to say goodbye to his old dog, Max.", []),
        ("Sam walks Max and Min every morning.", []),
        ("Max, the neighbours' beagle, barks at night.", []),  # no number: a name
        # hyphenated and fixed compounds
        ("Lisbon is a must-visit city.", []),
        ("He calls his guitar a must-have in his life.", []),
        ("She wore a jacket from a limited edition line of clothing.", []),
        # a guess, not an obligation
        ("Winning the final must have been thrilling.", []),
        ("You must be so proud of her.", []),
        ("That must've been hard.", []),
        # 'not only ... but also'
        ("Dev has not only met the mayor but also shaken her hand.", []),
        # a character or a past habit; the supportive idioms
        ("Nina has always liked turtles.", []),
        ("She has always been there for me.", []),
        ("Marcus is always looking to up his game.", []),
        ("Her mom loved roses and they always made her happy.", []),
        ("Kofi will always be there for his brother.", []),
        ("His friends are always there to have his back.", []),
        # descriptions and past narrative
        ("The project required research and networking.", []),
        ("The game only requires a gamepad.", []),
        ("Omar had to leave early.", []),
        ("Theo moved to Berlin after March 2023.", []),
        # the other kinds stay what they are
        ("Ana has always liked jazz but doesn't like opera.", [("negation", False)]),
        ("Max, the neighbours' beagle, loves long walks.", [("preference", True)]),
    ],
)
def test_narrative_uses_of_constraint_words_are_not_constraints(
    text: str, kinds: list[tuple[str, bool]]
) -> None:
    assert clause_kinds(text) == kinds


@pytest.mark.parametrize(
    ("text", "polarity"),
    [
        ("Always reply in Spanish.", True),
        ("I must leave by 5pm.", True),
        ("Never book flights before 9am.", False),
        ("The budget is at most $500.", True),
        ("Only use the staging database.", True),
        ("Max 3 meetings a day.", True),
        ("No interview is required, only ID.", False),  # the clause's negation parity
        ("You must have a passport to board.", True),
        ("Deploys must be approved by two reviewers.", True),
        ("I always fly business class.", True),  # a standing habit in the present
        ("The report must be signed.", True),
        ("Limit spending to $200.", True),
        # the rule-stating sense of the same words
        ("Note: Always reply in Spanish.", True),  # after an opening, not a name
        ("Reply by noon; Always cc Ana.", True),
        ("MAX 3 retries per job.", True),
        ("Deploys are always reviewed by two people.", True),
        ("Invoices are only accepted in EUR.", True),
        ("The venue only takes cash.", True),
        ("It not only requires a passport but also a visa.", True),
        ("The report must have been signed by the CFO.", True),
        ("You must be very careful with the knives.", True),
        ("Guests were required to wear masks.", True),
        ("We decided we will meet after June 5.", True),
    ],
)
def test_constraints_said_in_conversation_stay_constraints(text: str, polarity: bool) -> None:
    assert ("constraint", polarity) in clause_kinds(text)


def test_constraint_value_is_the_clause_and_polarity_its_parity() -> None:
    items = found("Never deploy on Fridays; always tag releases.")
    assert ("constraint", "never deploy on fridays", None, False) in items
    assert ("constraint", "always tag releases", None, True) in items


def test_numbers_are_canonicalised_through_units() -> None:
    (item,) = event_items(ev("The run is 5 km."))
    assert (item.value, item.unit) == (5, "kilometer")
    assert canonical(item.value, item.unit) == canonical(5000, "m")
    assert canonical(item.value, item.unit) != canonical(5, "mi")


def test_a_value_right_after_not_is_denied() -> None:
    items = found("The daily run is 5 km, not 5 mi.")
    assert ("number", 5, "kilometer", True) in items
    assert ("number", 5, "mile", False) in items
    assert ("money", 40, "EUR", True) in found("It costs 40 EUR and is not expensive.")
    assert ("date", "2026-12-15", None, False) in found("Ship on 2026-12-16, not 2026-12-15.")


def test_ids_inside_numbers_and_dates_are_not_numbers() -> None:
    kinds = [k for k, *_ in found("ORION-12 was filed 2024-03-05 from 10.0.0.1, v1.2.3.")]
    assert kinds == ["id", "date", "id", "id"]


def test_relative_dates_resolve_against_at() -> None:
    assert ("date", "2024-03-02", None, True) in found("Call me tomorrow.")


def test_relative_dates_fall_back_to_recorded_at() -> None:
    event = Event(id="e", subject="u", text="Call me tomorrow.", recorded_at="2024-06-10T08:00:00Z")
    assert [i.value for i in event_items(event)] == ["2024-06-11"]


def test_items_of_an_event_read_twice_are_those_of_its_own_content() -> None:
    # items are remembered per event: the same text and hash recorded on another
    # day, or under another id, must still resolve against its own anchor and source
    first = Event(id="e", subject="u", text="Call me tomorrow.", recorded_at="2024-06-10T08:00:00Z",
                  hash="sha256:same")  # fmt: skip
    again = replace(first, recorded_at="2024-06-20T08:00:00Z")
    other = replace(first, id="f")
    assert [i.value for i in event_items(first)] == ["2024-06-11"]
    assert [i.value for i in event_items(again)] == ["2024-06-21"]
    assert [i.source for i in event_items(other)] == ["f"]
    items = event_items(first)
    items.clear()  # a caller's list is its own: the next read is whole
    assert [i.value for i in event_items(first)] == ["2024-06-11"]


def test_relative_dates_without_any_anchor_are_skipped() -> None:
    event = Event(id="e", subject="u", text="Call me tomorrow. Launch is 2024-07-01.")
    assert [i.value for i in event_items(event)] == ["2024-07-01"]


def test_month_day_without_year_or_anchor_is_kept_yearless() -> None:
    event = Event(id="e", subject="u", text="Her birthday is July 4th.")
    assert [i.value for i in event_items(event)] == ["--07-04"]


def test_explicit_facts_are_taken_as_given() -> None:
    fact = Fact("max-run", 5, "km", polarity=False, kind="constraint")
    (item,) = event_items(ev("", facts=(fact,), project="orion"))
    assert (item.kind, item.key, item.value, item.unit, item.polarity) == (
        "constraint", "orion/fact/max-run", 5, "km", False,
    )  # fmt: skip


def test_unresolved_conflicts_become_items() -> None:
    conflicts = (Conflict("c1", "a", "b", "k"), Conflict("c2", "a", "c", winner="a"))
    items = extract_items([ev("Hi.", id="a"), ev("Ho.", id="b")], conflicts)
    assert [(i.kind, i.key, i.value, i.source) for i in items] == [
        ("conflict", "conflict/c1", "c1", "a")
    ]
    assert items[0] == conflict_item(conflicts[0])


def test_kind_fallback_keeps_uncaught_preferences_whole() -> None:
    items = event_items(ev("Dark mode in the evening.", kind="preference", project="orion"))
    assert [(i.kind, i.value) for i in items] == [("preference", "dark mode in the evening")]


# ---------------------------------------------------------------------------
# keys and ids


def test_keys_keep_projects_apart() -> None:
    a = event_items(ev("Always use tabs.", project="orion"))
    b = event_items(ev("Always use tabs.", project="vega"))
    assert a[0].key == "orion/constraint/tabs" and b[0].key == "vega/constraint/tabs"


def test_keys_keep_same_named_entities_apart() -> None:
    a = event_items(ev("Alex (alex@acme.com) has a $900 budget."))
    b = event_items(ev("Alex (alex@globex.com) has a $900 budget."))
    money_a = next(i for i in a if i.kind == "money")
    money_b = next(i for i in b if i.kind == "money")
    assert money_a.key != money_b.key
    assert money_a.key.endswith("[alex@acme.com]")


def test_keys_do_not_depend_on_polarity() -> None:
    (a,) = event_items(ev("I like sushi."))
    (b,) = event_items(ev("I don't like sushi."))
    assert a.kind == "preference" and b.kind == "negation"
    (c,) = event_items(ev("Always deploy on Fridays."))
    (d,) = event_items(ev("Never deploy on Fridays."))
    assert c.key == d.key and c.polarity != d.polarity


def test_ids_are_stable_and_batch_independent() -> None:
    e1, e2 = ev("Budget is $500 for ORION-3.", id="a"), ev("Never deploy on Fridays.", id="b")
    alone = event_items(e1)
    assert extract_items([e1, e2])[: len(alone)] == alone
    assert extract_items([e2, e1])[-len(alone) :] == alone
    assert [i.id for i in event_items(replace(e1, id="c"))] != [i.id for i in alone]
    assert len({i.id for i in alone}) == len(alone)


def test_same_statement_twice_in_one_event_is_one_item() -> None:
    assert len(event_items(ev("Call ORION-3. Really, ORION-3."))) == 1


# ---------------------------------------------------------------------------
# open items


@pytest.mark.parametrize(
    ("text", "kind", "open_"),
    [
        ("Renew the certificate.", "task", True),
        ("TODO: renew the certificate.", None, True),
        ("We still need to pick a venue.", None, True),
        ("Open question: who owns billing?", None, True),
        ("Follow up with Sam.", None, True),
        ("The certificate was renewed.", None, False),
        ("We need to talk.", "observation", False),
    ],
)
def test_open_items(text: str, kind: str | None, open_: bool) -> None:
    assert expected_open_items([ev(text, kind=kind)]) == (("e1",) if open_ else ())


def test_text_values_reads_numbers_amounts_and_absolute_dates() -> None:
    values = [(v, u) for v, u, _ in text_values("Pay $5 by 2024-03-05 for 3 km, tomorrow.")]
    assert values == [(5, "USD"), ("2024-03-05", None), (3, "kilometer")]


if __name__ == "__main__":
    for title, name, path in SETS:
        cases = split(name, path)
        print(f"{title} ({len(cases)} sentences)\n{table(score(cases))}\n")


# ---------------------------------------------------------------------------
# linear work: count characters handed to the regexes and calls made, never time


class CountingPattern:
    """A compiled pattern that adds the length of every window it is asked to scan."""

    def __init__(self, pattern: re.Pattern[str], counter: Counter[str]) -> None:
        self.pattern = pattern
        self.counter = counter

    def _scan(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> None:
        self.counter["chars"] += max(0, min(endpos, len(string)) - pos)

    def search(self, string: str, *args: int) -> re.Match[str] | None:
        self._scan(string, *args)
        return self.pattern.search(string, *args)

    def match(self, string: str, *args: int) -> re.Match[str] | None:
        self._scan(string, *args)
        return self.pattern.match(string, *args)

    def fullmatch(self, string: str, *args: int) -> re.Match[str] | None:
        self._scan(string, *args)
        return self.pattern.fullmatch(string, *args)

    def finditer(self, string: str, *args: int) -> Iterator[re.Match[str]]:
        self._scan(string, *args)
        return self.pattern.finditer(string, *args)

    def findall(self, string: str, *args: int) -> list[Any]:
        self._scan(string, *args)
        return self.pattern.findall(string, *args)

    def sub(self, repl: Any, string: str, count: int = 0) -> str:
        self._scan(string)
        return self.pattern.sub(repl, string, count)

    def split(self, string: str, maxsplit: int = 0) -> list[str]:
        self._scan(string)
        return self.pattern.split(string, maxsplit)


EXTRACT_MODULES = [
    importlib.import_module(f"{extract.__name__}.{info.name}")
    for info in pkgutil.iter_modules(extract.__path__)
]


def work(text: str, monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Characters scanned by the extractor's patterns, and calls made, for one event."""
    counter: Counter[str] = Counter()
    with monkeypatch.context() as patch:
        for module in EXTRACT_MODULES:  # each module reads the patterns it imported
            for name, value in list(vars(module).items()):
                if isinstance(value, re.Pattern):
                    patch.setattr(module, name, CountingPattern(value, counter))

        def profile(frame: Any, event: str, arg: Any) -> None:
            if event in ("call", "c_call"):
                counter["calls"] += 1

        sys.setprofile(profile)
        try:
            event_items(ev(text))
        finally:
            sys.setprofile(None)
    return counter


LINEAR_TEXTS = {
    "numbers": lambda n: "Readings: " + "1 " * n,
    "dollars": lambda n: "$1 " * n,
    "values and negations": lambda n: "I don't owe 5 km, not $6 on June 3 " * (n // 10),
    "scopes": lambda n: "Revoke read:a but grant write:b " * (n // 10),
    "sentences": lambda n: "Never deploy on Fridays. I detest olives. " * (n // 10),
}


@pytest.mark.parametrize("shape", sorted(LINEAR_TEXTS))
def test_extraction_work_is_linear_in_the_text(shape: str, monkeypatch: pytest.MonkeyPatch) -> None:
    make = LINEAR_TEXTS[shape]
    event_items(ev(make(100)))  # the lexicon and caches are built once per process
    small, large = work(make(500), monkeypatch), work(make(5000), monkeypatch)
    for measure in ("chars", "calls"):
        assert large[measure] <= 12 * small[measure], (shape, measure, small, large)


# ---------------------------------------------------------------------------
# polarity governed by the words around a scope or value


def polarity_of(text: str, value: object, **kw: Any) -> bool:
    (item,) = [i for i in event_items(ev(text, **kw)) if i.value == value]
    return item.polarity


@pytest.mark.parametrize(
    ("text", "value", "polarity"),
    [
        ("The bot's delete:records permission was withdrawn.", "delete:records", False),
        ("Access to post:slack is refused.", "post:slack", False),
        ("Sam's manage:users permission was never granted.", "manage:users", False),
        ("The read:orders grant was not revoked.", "read:orders", True),
        ("The app keeps read:calendar.", "read:calendar", True),
        ("Revoke ADMIN:ORG from the contractor.", "ADMIN:ORG", False),
        ("The limit is not 500.", 500, False),
        ("I never agreed to a $700 fee.", 700, False),
        ("The offer of $1,500 was rejected.", 1500, False),
        ("Never spend more than 500 EUR on hardware.", 500, True),  # a bound, not a denial
        ("I can't attend on Thursday.", "2024-03-07", True),  # the date is not what is denied
    ],
)
def test_polarity_comes_from_the_words_around_a_scope_or_value(
    text: str, value: object, polarity: bool
) -> None:
    assert polarity_of(text, value) is polarity


def test_a_correction_denies_the_first_date_and_states_the_second() -> None:
    items = found("The review is not on June 3, it's on June 4.")
    assert ("date", "2024-06-03", None, False) in items
    assert ("date", "2024-06-04", None, True) in items


# ---------------------------------------------------------------------------
# dates: tense and the event's own local day

WEDNESDAY = "2026-03-04T12:00:00Z"


@pytest.mark.parametrize(
    ("text", "day"),
    [
        ("I went sailing on Sunday.", "2026-03-01"),  # the previous Sunday
        ("We met Sam Monday.", "2026-03-02"),
        ("The package arrived on Tuesday.", "2026-03-03"),
        ("We signed the lease on Wednesday.", "2026-03-04"),  # today
        ("I'll go sailing on Sunday.", "2026-03-08"),  # future: forward
        ("The call is scheduled for Friday.", "2026-03-06"),
        ("We moved the review to Monday.", "2026-03-09"),  # a target date, despite 'moved'
        ("Last Friday I paid the rent.", "2026-02-27"),
    ],
)
def test_past_tense_reads_a_weekday_backward(text: str, day: str) -> None:
    assert [i.value for i in event_items(ev(text, at=WEDNESDAY)) if i.kind == "date"] == [day]


@pytest.mark.parametrize(
    ("text", "at", "day"),
    [
        ("Call me tomorrow.", "2026-03-04T23:00:00-07:00", "2026-03-05"),
        ("Call me tomorrow.", "2026-03-05T06:00:00Z", "2026-03-06"),  # the same instant in UTC
        ("I fixed the sink yesterday.", "2026-03-05T01:30:00+09:00", "2026-03-04"),
        ("The parcel comes today.", "2026-03-04T22:15:00-05:00", "2026-03-04"),
        ("See you on Friday.", "2026-03-06T20:00:00-08:00", "2026-03-06"),
        ("In two days I start the new job.", "2026-03-04T21:00:00-06:00", "2026-03-06"),
    ],
)
def test_relative_dates_resolve_on_the_events_local_day(text: str, at: str, day: str) -> None:
    event = Event(id="e", subject="u", text=text, at=at)
    assert [i.value for i in event_items(event) if i.kind == "date"] == [day]


# ---------------------------------------------------------------------------
# preferences from the sentiment lexicon


@pytest.mark.parametrize(
    ("text", "polarity"),
    [
        ("I detest olives.", False),
        ("I hate opera now.", False),
        ("I love opera.", True),
        ("She adores old jazz records.", True),
        ("Tom despises spreadsheets.", False),
        ("I absolutely dread dentist visits.", False),
        ("I'm allergic to shellfish.", False),
        ("My son is allergic to peanuts.", False),
        ("I can't stand loud restaurants.", False),
        ("We are fond of long walks.", True),
    ],
)
def test_preference_polarity_comes_from_the_lexicon(text: str, polarity: bool) -> None:
    assert [(k, p) for k, _, _, p in found(text)] == [("preference", polarity)]


@pytest.mark.parametrize(
    "text",
    [
        "I lost my keys.",
        "I hurt my knee.",
        "Call support today.",
        "Our team has 3 pods.",
        "Audrey worries about her dogs.",
        "Audrey is using treats to help with her dogs' problems.",
        "Dance has been Jon's stress relief.",
        "Mei's friends cheer her on.",  # after a possessive name, 'friends' is a noun
    ],
)
def test_events_and_imperatives_are_not_preferences(text: str) -> None:
    assert "preference" not in [k for k, *_ in found(text)]


def test_opposite_attitudes_to_one_thing_share_a_key() -> None:
    (love,) = event_items(ev("I love opera."))
    (hate,) = event_items(ev("I hate opera."))
    assert love.key == hate.key == "global/preference/opera"
    assert (love.polarity, hate.polarity) == (True, False)


def test_the_lexicon_is_read_once_from_the_installed_package() -> None:
    lexicon = extract.sentiment_lexicon()
    assert lexicon is extract.sentiment_lexicon()
    assert lexicon["hate"] < 0 < lexicon["love"]


# ---------------------------------------------------------------------------
# ambiguous amounts are kept as written


@pytest.mark.parametrize(
    ("text", "kind", "verbatim"),
    [
        ("I lost 20 pounds.", "number", "20 pounds"),
        ("Lunch was ¥600.", "money", "¥600"),
        ("The app has 2B users.", "number", "2B"),
        ("The invoice says €1.250.", "money", "€1.250"),
        ("The fee is 1.250 EUR.", "money", "1.250 EUR"),
        ("I ran a 10k.", "number", "10k"),
        ("My pace was 5:30 per km.", "number", "5:30 per km"),
        ("My pace dropped to 6:10/km.", "number", "6:10/km"),
        ("The carpet is 2,5 m wide.", "number", "2,5 m"),
    ],
)
def test_ambiguous_amounts_are_kept_verbatim(text: str, kind: str, verbatim: str) -> None:
    assert found(text) == [(kind, verbatim, None, True)]
    assert [(v, u) for v, u, _ in text_values(text)] == [(verbatim, None)]


@pytest.mark.parametrize(
    ("text", "item"),
    [
        ("The bag weighs 20 lbs.", ("number", 20, "pound", True)),
        ("The ticket cost £20.", ("money", 20, "GBP", True)),
        ("It costs 20 pounds sterling.", ("money", 20, "GBP", True)),
        ("Lunch was 600 yen.", ("money", 600, "JPY", True)),
        ("They raised $2B.", ("money", 2_000_000_000, "USD", True)),
        ("Budget: $10k.", ("money", 10_000, "USD", True)),
        ("We expect 10 thousand visitors.", ("number", 10_000, None, True)),
    ],
)
def test_unambiguous_amounts_are_canonicalised(text: str, item: tuple[Any, ...]) -> None:
    assert item in found(text)


# ---------------------------------------------------------------------------
# ids and scopes


@pytest.mark.parametrize(
    ("text", "value"),
    [("Ticket E-10442 is still open.", "E-10442"), ("Please escalate P-7731.", "P-7731")],
)
def test_ids_with_short_prefixes(text: str, value: str) -> None:
    assert found(text) == [("id", value, None, True)]


def test_scopes_in_upper_case_keep_their_case_and_share_the_lower_case_key() -> None:
    (upper,) = event_items(ev("The key has READ:BILLING."))
    (lower,) = event_items(ev("The key has read:billing."))
    assert (upper.kind, upper.value) == ("scope", "READ:BILLING")
    assert upper.key == lower.key == "global/scope/read:billing"
    assert found("Re:Meeting notes attached.") == []  # mixed case is not a scope
    assert found("Nate usually plays CS:GO.") == []  # nor a short upper-case name


# ---------------------------------------------------------------------------
# the verbatim clause


def test_every_text_item_carries_its_clause_verbatim() -> None:
    items = event_items(ev("Never deploy on FRIDAYS;   ALWAYS tag \t Releases for ORION-3."))
    clauses = {(i.kind, i.clause) for i in items}
    assert clauses == {
        ("constraint", "Never deploy on FRIDAYS"),
        ("constraint", "ALWAYS tag Releases for ORION-3."),
        ("id", "ALWAYS tag Releases for ORION-3."),
    }


def test_a_value_carries_the_clause_it_stands_in() -> None:
    items = event_items(ev("The rent isn't 1200 Dollars, but the Deposit is $900."))
    by_value = {i.value: i.clause for i in items if i.kind == "money"}
    assert by_value == {1200: "The rent isn't 1200 Dollars", 900: "the Deposit is $900."}


def test_clause_of_explicit_facts_is_empty_and_of_a_kept_event_its_text() -> None:
    (fact,) = event_items(ev("", facts=(Fact("max-run", 5, "km"),)))
    assert fact.clause == ""
    (kept,) = event_items(ev("Dark mode  in the Evening.", kind="preference"))
    assert (kept.value, kept.clause) == ("dark mode in the evening", "Dark mode in the Evening.")


# ---------------------------------------------------------------------------
# sentence spans


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "One. Two! Three? four.",
        "  Leading space.\n\nNew line here.  Trailing.  ",
        "Price is $5.50. Ok.\nDone",
    ],
)
def test_sentence_spans_are_the_offsets_of_split_sentences(text: str) -> None:
    spans = sentence_spans(text)
    assert [text[a:b] for a, b in spans] == split_sentences(text)
    assert all(a < b for a, b in spans) and spans == sorted(spans)


@given(st.lists(st.sampled_from(["Hi.", " ", "\n", "Bye!", "ok", "3.5 km.", "A?"]), max_size=12))
def test_sentence_spans_agree_with_split_sentences(parts: list[str]) -> None:
    text = "".join(parts)
    assert [text[a:b] for a, b in sentence_spans(text)] == split_sentences(text)


# -- hostile text: a clause is bounded, whatever the punctuation --

HOSTILE_WORDS = [
    "tea",
    "eur",
    "budget",
    "friday",
    "never",
    "must",
    "5",
    "km",
    "the",
    "of",
    "report",
    "deadline",
    "4,500",
    "june",
    "not",
]


def hostile_text(size: int) -> str:
    """Twelve-word lower-case sentences, as an attack fills an event with."""
    words, out, length, n = HOSTILE_WORDS, [], 0, 0
    while length < size:
        chosen = " ".join(words[(n + i * 7) % len(words)] for i in range(10))
        sentence = f"{chosen} {n} km.  "  # a distinct value in every sentence
        out.append(sentence)
        length += len(sentence)
        n += 1
    return "".join(out)


def test_a_lower_case_word_after_a_full_stop_starts_a_sentence() -> None:
    assert extract.split_sentences("tea.  eur budget friday. never mind") == [
        "tea.",
        "eur budget friday.",
        "never mind",
    ]


@pytest.mark.parametrize(
    "text",
    [
        "My dentist is Dr. Patel.",
        "Use e.g. tea or coffee.",
        "The U.S. rules apply.",
        "At 5 p.m. sharp.",
    ],
)
def test_an_abbreviation_or_an_initial_does_not_end_a_sentence(text: str) -> None:
    assert extract.split_sentences(text) == [text]


def test_a_sentence_too_long_to_read_whole_is_read_in_marked_windows() -> None:
    filler = " ".join(["word"] * 400)
    text = f"{filler} the budget is 4,500 EUR and {filler}"
    (money,) = [i for i in extract.event_items(ev(text)) if i.kind == "money"]
    assert money.value == 4500 and "4,500 EUR" in money.clause
    assert money.clause.startswith(extract.CUT_MARK) and money.clause.endswith(extract.CUT_MARK)
    assert len(money.clause) <= extract.MAX_SENTENCE_CHARS + 2 * (len(extract.CUT_MARK) + 1)


def test_what_a_long_event_yields_is_linear_in_its_text_and_bounded_per_claim() -> None:
    """A claim carries its clause, never the whole text (issue: 729 copies of 1 MB)."""
    sizes = {}
    for size in (100_000, 1_000_000):
        items = extract.event_items(ev(hostile_text(size)))
        assert max(len(i.clause) for i in items) <= 200  # twelve words and their marks
        sizes[size] = sum(len(i.clause) for i in items)
    assert sizes[1_000_000] <= 3 * 1_000_000  # a small constant per byte of text
    assert 8 <= sizes[1_000_000] / sizes[100_000] <= 12  # linear


def test_a_longer_selection_has_each_events_items_even_where_an_old_event_changed() -> None:
    """Items of the events read last time are reused only for the very same events: an
    event edited behind the same id (an erasure rewrites one) gets its new items."""
    extract.clear_caches()
    texts = ("Never deploy on Fridays.", "The budget is $500.", "Alice prefers tea.")
    events = [Event(id=f"e{n}", subject="u", text=t, at=AT, seq=n) for n, t in enumerate(texts)]
    assert extract_items(events[:2]) == [*event_items(events[0]), *event_items(events[1])]
    events[1] = replace(events[1], text="The budget is $900.")
    longer = extract_items(tuple(events), [Conflict(id="c-1", a="e0", b="e2")])  # as selected
    assert [item.value for item in longer if item.key.endswith("budget")] == [900]
    assert longer[:-1] == [item for e in events for item in event_items(e)]
    assert longer[-1].key == "conflict/c-1"
