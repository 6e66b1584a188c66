"""Clause kinds: constraint, negation, preference, decision.

Which kind a clause states, if any, and in which sense its constraint words are
used (a rule, or a habit, a guess, a description).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from memlineage.meaning.extract.patterns import (
    AFTER_REQUIRED,
    AFTER_VERB,
    BE_NOW,
    BE_PAST,
    BEFORE_REQUIRED,
    CONSTRAINT,
    CONSTRAINT_HINTS,
    DECISION,
    DECISION_HINTS,
    DIGIT,
    EXCLAIM,
    FEELINGS,
    FUTURE,
    GUESS_DEGREE,
    HAVE,
    IMPERATIVE,
    NAME_KEYWORDS,
    NOT_PAST_ED,
    ONLY_TAKES,
    PARTICIPLES,
    PASSIVE_AUX,
    PAST_FORMS,
    PREFERENCE,
    PREFERENCE_HINTS,
    STOPWORDS,
    TEMPORAL_LIMIT,
    TITLE_CASE,
    TRIGGER_WORDS,
    WORD,
    holds_any,
)
from memlineage.meaning.extract.sentences import Found, Sentence
from memlineage.meaning.extract.sentiment import Predicate, attitude


def _clause_kind(
    clause: str,
    sentence: Sentence,
    bounds: tuple[int, int],
    predicate: Predicate | None,
    negations: int,
) -> str | None:
    """``negations``: the clause's negations, less those of its predicate ("can't stand")."""
    offset, end = bounds
    if IMPERATIVE.match(clause) or _states_a_rule(clause, sentence, offset, end):
        return "constraint"
    if _has_temporal_limit(sentence, offset, offset + len(clause)):
        return "constraint"
    if negations:
        return "negation"
    if predicate is not None or (holds_any(clause, PREFERENCE_HINTS) and PREFERENCE.search(clause)):
        return "preference"
    if holds_any(clause, DECISION_HINTS) and DECISION.search(clause):
        return "decision"
    return None


def _has_temporal_limit(sentence: Sentence, start: int, end: int) -> bool:
    """A date after 'before', 'by', 'until', 'due', ... in the clause.

    'before'/'after' a date in a clause told in the past ('Theo moved to Berlin
    after March 2023') say when something happened, not a limit to keep.
    """
    if not sentence.spans:
        return False  # most sentences hold no value at all
    in_past: bool | None = None  # read once per clause, on the first 'before'/'after'
    for span in sentence.spans_in(start, end):
        if span.kind != "date":
            continue
        window = max(start, span.start - 30)
        limit = TEMPORAL_LIMIT.search(sentence.text, window, span.start)
        if limit is None:
            continue
        if limit["word"].casefold() in ("before", "after"):
            if in_past is None:
                in_past = told_in_past(sentence.text, start, end)
            if in_past:
                continue
        return True
    return False


def told_in_past(text: str, start: int, end: int) -> bool:
    """A past verb ('moved', 'went') in the clause and no future ('will', 'next')."""
    if FUTURE.search(text, start, end):
        return False
    previous = ""
    for match in WORD.finditer(text, start, end):
        word = match.group().casefold().replace("’", "'")
        if _past_form(word, previous):
            return True
        previous = word
    return False


def _past_form(word: str, previous: str) -> bool:
    """'went', 'was', or an '-ed' verb not after 'is'/'will'/... ('is required' is not past)."""
    return word in PAST_FORMS or (
        word.endswith("ed")
        and len(word) > 3
        and word not in NOT_PAST_ED
        and previous not in PASSIVE_AUX
    )


def _states_a_rule(clause: str, sentence: Sentence, start: int, end: int) -> bool:
    """A constraint keyword in the clause, used in a sense that states a rule.

    Most clauses hold no keyword at all, so the senses are read only when one is there.
    """
    may_hold = holds_any(clause, CONSTRAINT_HINTS) or DIGIT.search(clause) is not None
    return (
        may_hold
        and bool(CONSTRAINT.search(clause))
        and bool(CONSTRAINT.search(_rule_text(sentence, start, end)))
    )


def _rule_text(sentence: Sentence, start: int, end: int) -> str:
    """The clause as the constraint patterns read it: case-folded, each keyword used
    in a sense that states no rule (``_states_no_rule``) blanked out."""
    text = sentence.text
    words = list(WORD.finditer(text, start, end))
    folded = [m.group().casefold().replace("’", "'") for m in words]
    has_digit = DIGIT.search(text, start, end) is not None
    parts: list[str] = []
    at = start
    for i, match in enumerate(words):
        if _is_name(text, match, has_digit) or _states_no_rule(folded, i, text, words):
            parts.append(text[at : match.start()])
            parts.append(" " * len(match.group()))
            at = match.end()
    parts.append(text[at:end])
    return "".join(parts).casefold().replace("’", "'").strip()


def _is_name(text: str, match: re.Match[str], has_digit: bool) -> bool:
    """A capitalised word inside a sentence is a name ('his dog, Max', 'Sam met Max');
    at the start of one, 'Max' is a name unless a number follows ('Max 3 meetings')."""
    word = match.group()
    if TITLE_CASE.fullmatch(word) is None:
        return False  # lower case, or 'ALWAYS' written for emphasis
    before = match.start() - 1
    while before >= 0 and text[before].isspace():
        before -= 1
    if before >= 0 and (text[before].isalnum() or text[before] == ","):
        return True  # not after an opening (start, ':', ';', a quote, a bracket)
    return word.casefold() in NAME_KEYWORDS and not has_digit


def _states_no_rule(words: list[str], i: int, text: str, matches: list[re.Match[str]]) -> bool:
    """Is ``words[i]`` a constraint keyword used for a habit, a guess or a description?

    'a must-visit city', 'must have been thrilling', 'you must be so proud', 'not only
    ... but also', 'has always liked', 'is always looking', 'they always made her
    smile', 'always be there for him', 'was only an hour', 'only got back', 'only
    requires a controller', 'the trip required months of planning', 'a limited
    edition'. The senses that state a rule keep the word: 'I always fly business',
    'must have a passport', 'must be signed', 'use only approved vendors', 'is required'.
    """
    word = words[i]
    if word == "must've":
        return True  # the contraction is only ever a guess about the past
    if word not in ("must", "always", "only", "required", "require", "requires", "limited"):
        return False
    end = matches[i].end()
    if text[end : end + 1] == "-" and text[end + 1 : end + 2].isalpha():
        return True  # 'must-have', 'always-on', 'limited-edition': part of a compound
    previous = words[i - 1] if i else ""
    following = words[i + 1] if i + 1 < len(words) else ""
    after = words[i + 2] if i + 2 < len(words) else ""
    if word == "must":
        return _guessed(words, i)
    if word == "always":
        return _habit(previous, following, after)
    if word == "only":
        return _just(previous, following, after)
    if word == "required":
        spaced = i + 1 < len(words) and not text[end : matches[i + 1].start()].strip()
        return _past_required(previous, following if spaced else "")
    if word in ONLY_TAKES:  # 'X only requires Y', but not 'not only requires Y but also Z'
        return previous == "only" and i >= 2 and words[i - 2] != "not" and following != "to"
    return following in ("edition", "time")  # 'a limited edition line': a product


def _guessed(words: list[str], i: int) -> bool:
    """'must have been', 'must have felt', "must've", 'must be so proud', 'must be a relief'."""
    following = words[i + 1] if i + 1 < len(words) else ""
    if following == "have":
        participle = words[i + 2] if i + 2 < len(words) else ""
        if participle == "been":
            # 'must have been thrilling', but a rule in the perfect passive stays one:
            # 'must have been signed by the CFO'
            state = words[i + 3] if i + 3 < len(words) else ""
            return state in FEELINGS or not _past_form(state, "been")
        return participle in PARTICIPLES or _past_form(participle, "have")
    if following != "be":
        return False
    j = i + 2
    if j < len(words) and words[j] in ("a", "an"):
        j += 1
    if j < len(words) and words[j] in EXCLAIM:
        return True
    while j < len(words) and words[j] in GUESS_DEGREE:
        j += 1
    return j < len(words) and words[j] in FEELINGS


def _habit(previous: str, following: str, after: str) -> bool:
    """'always' for a character or a past habit, not a standing rule."""
    return (
        previous in HAVE  # 'has always liked': the perfect tells a life so far
        or following == "been"  # "she's always been there"
        or previous in BE_PAST  # 'were always supportive'
        or (previous in BE_NOW and following.endswith("ing") and len(following) > 5)
        or following == "there"  # 'always there to have his back'
        or (following == "be" and after == "there")  # 'always be there for him'
        or (following == "up" and after == "for")  # 'always up for a challenge'
        or (previous not in BE_NOW and _past_form(following, "always"))  # 'always made'
    )


def _past_required(previous: str, following: str) -> bool:
    """'the bakery required months of planning': a verb in the past with a subject
    before it and an object after it; not 'is required', 'the required forms',
    'required to', 'required by law' (``following`` is empty after punctuation)."""
    return (
        bool(previous)
        and bool(following)
        and previous not in BEFORE_REQUIRED
        and not previous.endswith(("n't", "'s", "'re"))
        and following not in AFTER_REQUIRED
    )


def _just(previous: str, following: str, after: str) -> bool:
    """'only' meaning 'just' or 'merely', not a restriction."""
    if previous in ("not", "had") or previous in BE_PAST:
        return True  # 'not only ... but also', 'it was only a matter of time'
    if previous and following in ONLY_TAKES and after != "to":
        return True  # 'the game only requires a controller': all it takes
    if following in PAST_FORMS:
        return True  # 'Priya only got back'
    # 'only started running' (a past verb), not 'only approved vendors' (an adjective)
    # nor 'are only accepted in EUR' (a passive)
    return (
        previous not in BE_NOW
        and _past_form(following, "only")
        and (after in AFTER_VERB or after.endswith("ing") or not after)
    )


def clause_items(sentence: Sentence, scope: str, entity: str) -> Iterator[Found]:
    text = sentence.text
    for start, end in sentence.clauses:
        raw = text[start:end]
        clause = raw.casefold().replace("’", "'").strip()
        predicate = attitude(*sentence.words_in(start, end))
        # the clause's negations, counted once per sentence on its original text
        negations = len(sentence.negation_marks[start]) - (predicate.absorbed if predicate else 0)
        kind = _clause_kind(clause, sentence, (start, end), predicate, negations)
        if kind is None:
            continue
        polarity = negations % 2 == 0
        if kind == "preference" and predicate is not None:
            # 'I detest olives': the predicate's lexicon valence gives the polarity
            polarity = polarity == (predicate.valence > 0)
        value = clause_value(raw)
        skip = predicate.words if predicate is not None else frozenset()
        words = [
            w
            for w in content_words(value)
            if w not in TRIGGER_WORDS and w not in skip and w.isalpha()
        ]
        anchor = slug(words) or slug(content_words(value)) or kind
        clause_text = sentence.verbatim_clauses[start]
        yield kind, f"{scope}/{kind}/{anchor}{entity}", value, None, polarity, clause_text


def clause_value(text: str) -> str:
    """A clause kind's value: the clause case-folded, for comparison (Item.clause keeps it)."""
    return " ".join(text.split()).strip(" .!?,;:").casefold()


def content_words(text: str) -> list[str]:
    return [w for w in WORD.findall(text.casefold()) if w not in STOPWORDS]


def slug(words: Sequence[str], limit: int = 6) -> str:
    return "-".join(w.replace("'", "").replace("’", "") for w in words[:limit])
