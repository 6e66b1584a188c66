"""Binding events: what an agent acts against if it does not see it. Pure, no I/O.

An event binds when it states (docs/concepts.md, "Binding events"):

- ``rule``: an instruction or rule for whoever acts: a sentence that opens with
  an imperative ("Never deploy on Fridays.", "Please don't email me after 9 pm.",
  "Keep my answers in British English.", "Make sure ...") or a limit stated
  with a modal of obligation ("The budget must not exceed 4,500 EUR.");
- ``scope``: a permission given or withdrawn (a ``scope`` item of the extractor);
- ``aversion``: the speaker's own, present aversion or restriction ("I hate
  cilantro.", "I'm allergic to peanuts.", "I don't eat pork.", "I'm vegan.");
- ``preference``: the speaker's own stated preference ("I prefer window seats.",
  "I'd rather meet in the afternoon.");
- ``open``: an open item (a task, "remind me to", "TODO", "still need to").

Both sides of an unresolved conflict bind too; the caller knows those.

What does not bind, by design, because it would crowd every budget on chat text
while no agent acts against it: a question ("Should I keep sending the digest?"),
someone else's preference or opinion as reported ("Bob said he hates sushi",
"Tom thinks I should quit coffee", "According to Ana, I prefer ..."), forwarded
or external text ("Fwd: ...", trust ``external``: shown, never the user's
rule), affection and
hobbies ("I love that!", "I love painting"), habits and feelings told with
"always" ("my friends always make me happy"), chat idioms ("Don't worry",
"Don't give up"), quotations, and what the speaker no longer holds ("I used to
hate mornings", "... Not anymore."). Narrative negations, numbers, dates and ids
are kept exactly wherever they are shown, but they are ranked, not forced.

Hand-written patterns, as for extraction: measured on a labelled case set
(tests/data/binding_cases.jsonl, a tuning half and a holdout half written first).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Sequence

from memlineage.meaning import caches, extract
from memlineage.meaning.extract import is_open_item, split_sentences
from memlineage.meaning.extract.patterns import MEASURED_OBLIGATION, folded, holds_any
from memlineage.model import Event, Item

CONFLICT_SIDE = "conflict side"
RULE = "constraint"
SCOPE = "permission scope"
AVERSION = "aversion"
PREFERENCE = "preference"
OPEN = "open item"
#: every reason, strongest first (the order binding_reasons reports them in)
REASONS = (CONFLICT_SIDE, RULE, SCOPE, AVERSION, PREFERENCE, OPEN)
#: the mark :func:`event_kinds` adds for an event that binds by its own text and items
#: (not by the caller's sets); stored with the item kinds, so recall never re-reads it
BINDING_MARK = "binding"


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: a chat line that names its speaker first: "Caroline: ..."
SPEAKER_PREFIX = re.compile(r"^\s*[A-Z][\w'’.-]*(?: [A-Z][\w'’.-]*){0,2}:\s+")
_QUOTED = re.compile(r"\"[^\"]*\"|“[^”]*”")

# Imperatives that open a sentence. ``always`` and ``only`` need a verb after them
# ("Always cc Anna", not "Always a pleasure"), checked by _NOT_A_VERB.
_PROHIBITION = re.compile(
    r"^(?:please\s+)?(?:(?P<word>never|always|only)|don't|do not|dont|stop|avoid|"
    r"make sure|be sure to|remember to|don't forget to|do not forget to)\b\s*(?P<next>[\w']*)",
    re.IGNORECASE,
)
# Instructions that open with a plain verb: the verbs an agent is asked to act with.
_INSTRUCTION_VERBS = _words(
    """
    keep use send reply answer respond write order book call email text remind schedule
    cc bcc include add skip check ask tell format put set cancel renew buy pay bring mention
    limit file forward save store delete share post notify alert water feed lock turn
    """
)
# Chat idioms that open like an instruction but ask nothing of the agent.
_IDIOMS = re.compile(
    r"^(?:please\s+)?(?:don't|do not|dont|never)\s+(?:worry|give up|hesitate|mind|be (?:sorry|"
    r"afraid|shy|too hard|so hard)|stop (?:believing|dreaming|trying|chasing|learning)|"
    r"forget (?:it|that)\b|let\b|lose\b|miss a\b|forget to (?:take|have|enjoy|relax)\b|"
    r"know\b|feel\b|think\b|care\b|quit\b|forget the\b)"
    r"|^stay\b|^keep\s+(?!my\b|the\b|all\b|every\b|each\b|replies\b|answers\b|responses\b|"
    r"emails\b|messages\b|it (?:short|brief)\b|\w+s? (?:under|below|within|above|to)\b)"
    r"|^check\s+(?:\w+\s+){0,4}?out\b|^check it\b"
    r"|^(?:take|call)\s+it\b|^(?:turn|put)\s+(?:it|that)\b|^check (?:this|these|that)\b"
    r"|^(?:ask|tell)\s+(?:me|us)\b|^(?:add|send)\s+(?:me|some|us)\s+(?:pics|photos|pictures)\b"
    r"|^stop\s+(?:talking|it|that|being|worrying)\b",
    re.IGNORECASE,
)
_NOT_A_VERB = _words(
    """
    a an the so such great good nice fun there here been being my your our his her their
    more happy glad lovely amazing awesome wonderful cool exciting interesting pleasure
    up on in at for with ready down about around into looking love like enjoy
    """
)
# "Never tried it", "Never had a chance": a past form after "never" tells, it does not ask.
_PAST_FORMS = _words(
    """
    had done been seen gone heard thought felt knew known met made got gotten went ate eaten
    took taken saw said told found left lost gave given came come
    """
)
# Advice to the other person of a chat ("Make sure to take some time for yourself"):
# an instruction that speaks to "you" asks the listener, not whoever acts for the speaker.
_TO_THE_LISTENER = re.compile(r"\b(?:you|your|yourself|yourselves|you're|you'll)\b", re.I)
# A limit stated with a modal of obligation, whoever its grammatical subject.
_MODAL_RULE = re.compile(
    r"\b(?:(?:nobody|no one|only [\w-]+(?: [\w-]+)?) (?:may|can)|must not|mustn't|must never|"
    r"may not|may only|"
    r"cannot exceed|can't exceed|must not exceed|is not allowed|isn't allowed|are not allowed|"
    r"aren't allowed|not allowed to|is forbidden|are forbidden|is prohibited|are prohibited|"
    r"no more than|never more than|need(?:s)? (?:\w+ )?approvals?|requires? (?:\w+ )?approvals?)\b",
    re.IGNORECASE,
)

#: every alternative of _MODAL_RULE holds one of these, as ``folded`` reads a sentence
#: (its spaces are literal ones)
_MODAL_HINTS = (
    "nobody", "no one", "only", "must", "may", "exceed", "allowed", "forbidden", "prohibited",
    "more than", "approval",
)  # fmt: skip

_I = r"(?:i|i'm|i am|i've|i have|we|we're|we are)"
_ADVERBS = r"(?:\s+(?:really|just|absolutely|honestly|still|truly|totally|so|also|strictly|do))*"
_AVERSION = re.compile(
    rf"\b{_I}{_ADVERBS}\s+(?:hate|dislike|detest|loathe|can't stand|cannot stand|can not stand|"
    r"don't like|do not like|don't eat|do not eat|don't drink|do not drink|never eat|never drink|"
    r"can't eat|cannot eat|can't have|cannot have|avoid|am not a fan of|'m not a fan of|"
    r"allergic to|am allergic|intolerant|vegan|vegetarian|gluten-free|lactose)\b",
    re.IGNORECASE,
)
_PREFERENCE = re.compile(
    rf"\b{_I}{_ADVERBS}\s+(?:prefer|would rather|would prefer)\b|\b(?:i|we)'d (?:rather|prefer)\b"
    r"|^(?:please\s+)?(?:call|address) me\b",
    re.IGNORECASE,
)
#: every alternative of _AVERSION holds one of these (its spaces are literal ones:
#: "can't have" and "cannot have" both hold "t have")
_AVERSION_HINTS = (
    "hate", "dislike", "detest", "loathe", "t stand", "t like", " eat", "drink", "t have",
    "avoid", "fan of", "allergic", "intolerant", "vegan", "vegetarian", "gluten-free", "lactose",
)  # fmt: skip
#: every alternative of _PREFERENCE holds one of these
_PREFERENCE_HINTS = ("prefer", "rather", "call", "address")
# What the speaker no longer holds, or held only in the past.
_NOT_NOW_HINTS = ("used to", "anymore", "no longer", "hated", "disliked", "preferred")
_NOT_NOW = re.compile(
    r"\bused to\b|\bnot anymore\b|\bno longer\b|\banymore\b|\b(?:hated|disliked|preferred)\b",
    re.IGNORECASE,
)


# What makes an extracted constraint a rule for whoever acts, not a habit, a guess or advice.
_HABIT_ONLY = re.compile(r"\balways\b", re.I)
_OBLIGATION = re.compile(
    r"\b(?:must|mustn't|never|need(?:s)? to|ha(?:ve|s) to|should|shouldn't|can't|cannot|"
    r"only|required|requires?|limit(?:ed)?|at least|at most|no more than|max(?:imum)?|"
    r"capped|due|don't|do not|not allowed|may(?: not)?|exceed)\b",
    re.I,
)
_GUESS = re.compile(
    r"\bmust(?:'ve| have)?\s+(?:been|be|feel|seem|sound|look|have)\b(?:\s+\w+){0,3}?\s+"
    r"(?:so|really|very|such|amazing|awesome|great|fun|nice|hard|tough|cool|rewarding|"
    r"exciting|incredible|special|wonderful|beautiful|lovely|scary|tiring|fulfilling|"
    r"satisfying|powerful|meaningful|relaxing|a\b|an\b)",
    re.I,
)
_SUGGESTION = re.compile(
    r"\b(?:you|we|u)\s+(?:really\s+|totally\s+|definitely\s+)?should\b(?!n't| not| never)", re.I
)
_CHAT_SAYING = re.compile(r"\bha(?:ve|d) to (?:say|admit|agree|laugh|thank|tell you)\b", re.I)
# Told, planned or predicted rather than required: "I had to", "I need to try that",
# "should be fun", "never tried", "I only work in the studio".
_NOT_REQUIRED = re.compile(
    r"\b(?:had|needed) to\b|\bi\s+(?:really\s+)?(?:need|have|got|should|gotta)\s+(?:to\s+)?"
    r"(?:try|check|get|go|do|find|see|make|start|learn|read|watch|take|give|keep|look|show|"
    r"visit|come|tell|thank|say|admit|think)\b|\bshould (?:be|help|make|give|get|work)\b"
    r"|\bnever (?:\w+ed|\w+s|had|done|been|seen|gone|heard|thought|felt|knew|met|made|got|"
    r"forget|stop|give|too)\b|\bi (?:\w+ )?only\b|\bonly (?:\$|\d|a |one |the best)"
    r"|\bmust(?:'ve| have)?\s+(?:love|like|enjoy|make|mean|miss|know|think|feel|get|keep)\b"
    r"|(?:'ll|will|would|'d) (?:\w+ )?(?:have|need) to\b",
    re.I,
)


_RULE_MODAL = re.compile(r"\b(?:must|may|cannot|can't|shouldn't|should not|should never)\b", re.I)


@functools.lru_cache(maxsize=extract.ITEM_CACHE_SIZE)
def _rule_clause(clause: str) -> bool:
    """An extracted constraint that states a rule (not "always" alone, a guess or advice).

    A pure function of the clause, remembered per process as ``text_reasons`` is:
    the generator and the gate ask it of every constraint at every run.
    """
    text = SPEAKER_PREFIX.sub("", clause, count=1).replace("’", "'").strip()
    if not text or text.endswith("?") or _IDIOMS.search(text) or MEASURED_OBLIGATION.search(text):
        return False
    if _HABIT_ONLY.search(text) and not _OBLIGATION.search(text):
        return False
    if _TO_THE_LISTENER.search(text) and not _RULE_MODAL.search(text):
        return False  # advice to the other person of a chat
    return not (
        _GUESS.search(text)
        or _SUGGESTION.search(text)
        or _CHAT_SAYING.search(text)
        or _NOT_REQUIRED.search(text)
    )


caches.register(_rule_clause.cache_clear)


def binding_reasons(
    event: Event,
    items: Sequence[Item],
    *,
    open_items: Collection[str] | None = None,
    conflict_sides: Collection[str] = (),
) -> tuple[str, ...]:
    """Why ``event`` binds, strongest first (:data:`REASONS`); ``()`` when it does not.

    ``items`` are the event's must-preserve items (others' are ignored);
    ``open_items`` the ids of the selection's open items (by default the event
    is asked itself) and ``conflict_sides`` the ids of unresolved conflicts' sides.
    """
    # A chat line's "must" or "need to" tells more often than it rules ("you must love
    # it", "we need to catch up"): there only the sentence patterns below find rules.
    chat = chat_line(event.text, event.speaker)
    # Forwarded or external text (a pasted e-mail's "pay this invoice today") is not the
    # user's rule or taste: it is shown, with its trust, but never binds by its words.
    foreign = event.trust == "external" or _FORWARDED.match(event.text) is not None
    found = set() if foreign else set(text_reasons(event.text, chat))
    event_id = event.id
    for item in items:  # one pass over the event's own items (scope, rule)
        if item.source != event_id:
            continue
        if item.kind == "scope":
            found.add(SCOPE)
        elif item.kind == "constraint" and _own_rule(item.clause, event.text, chat or foreign):
            found.add(RULE)
    if event_id in conflict_sides:
        found.add(CONFLICT_SIDE)
    if event_id in open_items if open_items is not None else is_open_item(event):
        found.add(OPEN)
    if event.kind == "preference":
        found.add(PREFERENCE)  # the writer said so
    elif event.kind == "constraint":
        found.add(RULE)  # the writer said so
    return _in_order(frozenset(found)) if found else ()


def chat_line(text: str, speaker: str | None) -> bool:
    """Whether a text is a line of a chat: its event names a speaker, or the text opens
    with one ("Caroline: ..."). The binding rules read a chat line more strictly."""
    return speaker is not None or SPEAKER_PREFIX.match(text) is not None


def _own_rule(clause: str, text: str, not_the_users: bool) -> bool:
    """A constraint clause that states the speaker's own rule: not on a chat line, not
    forwarded, a rule by its words, and not reported ("Tom thinks I should ...")."""
    return not not_the_users and _rule_clause(clause) and not _reported(text, clause)


def _reported(text: str, clause: str) -> bool:
    """Whether ``clause`` stands in a sentence that reports another's opinion."""
    return any(
        clause in sentence and _REPORTED.match(sentence.strip()) is not None
        for sentence in split_sentences(text)
    )


_FORWARDED = re.compile(r"^\s*(?:fwd?|forwarded(?: message)?)\s*:", re.IGNORECASE)


@functools.lru_cache(maxsize=1 << 7)
def _in_order(found: frozenset[str]) -> tuple[str, ...]:
    """The reasons in :data:`REASONS` order (few sets of six: remembered)."""
    return tuple(r for r in REASONS if r in found)


@functools.lru_cache(maxsize=extract.ITEM_CACHE_SIZE)
def text_reasons(text: str, chat: bool) -> frozenset[str]:
    """The reasons an event's words give (``chat``: it is a chat line).

    A pure function of the two, so remembered per process (bounded, as the event
    items are): a consolidation judges every selected event at every run, in the
    generator and again in the gate.
    """
    # "Allergies: peanuts, ..." reads like a speaker's name before a colon
    found: set[str] = {AVERSION} if _LISTED_AVERSION.match(text.strip()) else set()
    text = SPEAKER_PREFIX.sub("", text, count=1).replace("’", "'")
    not_now = holds_any(folded(text), _NOT_NOW_HINTS) and _NOT_NOW.search(text) is not None
    for sentence in split_sentences(_QUOTED.sub('""', text)):
        found.update(sentence_reasons(sentence, not_now=not_now, chat=chat))
    if not text.isascii() or _OTHER_LANGUAGE_HINT.search(text):
        found.update(other_language_reasons(text, chat=chat))
    return frozenset(found)


# -- rules in other languages --------------------------------------------------------
# The rules and tastes an agent must not miss, in the languages the binding rules read
# besides English: Portuguese, Spanish, French, German, Italian and Japanese (LANGUAGES).
# A short list per language of how a rule, an aversion or a preference opens; the rest
# of the pipeline keeps such an event's words as they are (nothing is translated).
LANGUAGES = ("en", "pt", "es", "fr", "de", "it", "ja")
_OTHER_LANGUAGE_HINT = re.compile(
    r"\b(?:nunca|não|nao|jamais|jamás|no|ne|n'|nie|niemals|bitte|non|mai|sempre|siempre|"
    r"toujours|immer|proibido|prohibido|interdit|verboten|vietato|prefiro|prefiero|"
    r"préfère|bevorzuge|preferisco|alérgic|alergic|allergique|allergisch|allergic)",
    re.IGNORECASE,
)
_OTHER_RULES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (reason, re.compile(pattern, re.IGNORECASE | re.MULTILINE))
    for reason, pattern in (
        # an imperative that forbids or requires, at the opening of a sentence
        (RULE, r"(?:^|[.!;]\s+)(?:por favor,?\s+|per favore,?\s+|"
               r"s'il (?:te|vous) pla[iî]t,?\s+)?(?:nunca|jamais|jamás|mai|sempre|siempre|"
               r"não|nao|no|non)\s+(?:me|te|nos|lhe|le|les|lo|la|se|mi|ci|ti)\s+\w"
               r"|(?:^|[.!;]\s+)(?:per favore,?\s+)?non\s+\w{3,}(?:re|mi|ci|lo|la)\b"
               r"|(?:^|[.!;]\s+)(?:s'il (?:te|vous) pla[iî]t,?\s+)?(?:ne|n')\s*\S+\s+"
               r"(?:\S+\s+)?(?:jamais|pas|plus)\b|\b(?:merci de|veuillez) ne (?:pas|jamais|plus)\b"
               r"|\bbitte\s+(?:\w+\s+){0,4}?(?:nicht|nie|niemals|kein\w*)\b"
               r"|(?:^|[.!;]\s+)(?:nie|niemals)\b[^.!?]*\b\w+en\s*[.!]?\s*$"
               r"|\b(?:proibido|prohibido|interdit|verboten|vietato)\b"
               r"|しないで|ないでください|禁止|してはいけない|してはならない|必ず"),
        (AVERSION, r"\b(?:sou|soy|je suis|ich bin|sono)\s+(?:\w+\s+)?(?:alérgic[oa]|alergic[oa]|"
                   r"allergique|allergisch|allergic[oa])\b"
                   r"|\b(?:não|no) (?:como|bebo)\b|\bje ne (?:mange|bois) (?:pas|jamais|plus)\b"
                   r"|\bich (?:esse|trinke) (?:kein\w*|nicht)\b|\bnon mangio\b"
                   r"|アレルギー|食べられません|苦手"),
        (PREFERENCE, r"\b(?:prefiro|prefiero|je préfère|ich bevorzuge|preferisco)\b"
                     r"|の方がいい|がいいです"),
    )
)  # fmt: skip


def other_language_reasons(text: str, *, chat: bool = False) -> set[str]:
    """The reasons a text in one of :data:`LANGUAGES` (not English) gives by its words.

    On a chat line an imperative binds only when it concerns the speaker, as in
    English; the short lists are checked on LoCoMo's English turns (they bind none).
    """
    found = {reason for reason, pattern in _OTHER_RULES if pattern.search(text)}
    if chat and RULE in found and not _SPEAKER_WORDS.search(text):
        found.discard(RULE)
    return found


_SPEAKER_WORDS = re.compile(
    r"\b(?:me|mi|m'|moi|mich|mir|mim|meu|minha|mon|ma|mes|mein\w*|mio|mia|nos|nous|uns)\b"
    r"|私|僕|俺",
    re.IGNORECASE,
)


caches.register(text_reasons.cache_clear)

#: the event kind a binding event without a kind of its own is shown under
_SHOWN_KIND = {RULE: "constraint", SCOPE: "constraint", AVERSION: "preference",
               PREFERENCE: "preference", OPEN: "task"}  # fmt: skip


def shown_kind(reasons: Sequence[str]) -> str | None:
    """The kind a binding event is shown under, from its strongest reason that names one."""
    return next((_SHOWN_KIND[r] for r in reasons if r in _SHOWN_KIND), None)


def event_kinds(event: Event) -> tuple[str, ...]:
    """``extract.event_kinds`` plus :data:`BINDING_MARK` when the event binds, sorted:
    what the detection job stores of an event and recall reads back."""
    kinds = set(extract.event_kinds(event))
    open_items = (event.id,) if extract.OPEN_ITEM in kinds else ()  # read once, not twice
    if is_binding(event, extract.cached_event_items(event), open_items=open_items):
        kinds.add(BINDING_MARK)
    return tuple(sorted(kinds))


def may_bind(kinds: Collection[str]) -> bool:
    """Whether an event with these stored kinds (:func:`event_kinds`) binds by itself."""
    return BINDING_MARK in kinds


def is_binding(
    event: Event,
    items: Sequence[Item],
    *,
    open_items: Collection[str] | None = None,
    conflict_sides: Collection[str] = (),
) -> bool:
    """``binding_reasons`` is not empty."""
    return bool(binding_reasons(event, items, open_items=open_items, conflict_sides=conflict_sides))


# Someone else's opinion as reported ("Tom thinks I should quit coffee.", "According to
# Ana, I prefer the window seat") is theirs, not the speaker's rule or preference.
_REPORTED = re.compile(
    r"^(?:[Aa]ccording to [A-Z][\w'-]*|[A-Z][\w'-]* (?:thinks|says|said|believes|reckons|"
    r"suggested|suggests|claims|told me|wants me to))\b"
)


def sentence_reasons(sentence: str, *, not_now: bool = False, chat: bool = False) -> set[str]:
    """The reasons one sentence gives (no speaker prefix; apostrophes straight).

    ``chat``: the sentence is from a chat line, where an instruction is said to the
    other person unless it concerns the speaker (:func:`_speaker_instruction`).
    """
    body = sentence.strip()
    if not body or body.endswith("?") or _REPORTED.match(body):
        return set()  # a question asks, a reported opinion is another's: they bind nobody
    reasons = set()
    if _is_instruction(body) and (not chat or _speaker_instruction(body)):
        reasons.add(RULE)
    if _NOTICE.match(body) and (not chat or _speaker_instruction(body)):
        reasons.add(RULE)  # "No smoking in my car, ever."
    # the patterns below are slow to scan: each runs only where its words are
    words = folded(body)
    if holds_any(words, _MODAL_HINTS) and _MODAL_RULE.search(body):
        reasons.add(RULE)
    if not not_now and holds_any(words, _AVERSION_HINTS) and _AVERSION.search(body):
        reasons.add(AVERSION)
    if not not_now and holds_any(words, _PREFERENCE_HINTS) and _PREFERENCE.search(body):
        reasons.add(PREFERENCE)
    return reasons


# A prohibition written as a notice: "No smoking in my car", "No calls after 9 pm",
# "No shoes inside". Not "No worries", "No way", "No, I ...".
_NOTICE = re.compile(
    r"^no\s+(?!worries|way|problem|idea|doubt|kidding|wonder|matter|one\b|more\b|longer|"
    r"thanks|need|big deal|offense|pressure|rush|clue|luck|chance|joke|surprise)"
    r"(?:\w+ing\b|\w+s? (?:in|on|at|after|before|during|inside|past|until)\b)",
    re.IGNORECASE,
)
# A list of what the speaker must avoid, written as a heading: "Allergies: peanuts, ...".
_LISTED_AVERSION = re.compile(
    r"^(?:my\s+)?(?:allerg(?:y|ies)|allergic to|intolerances?|dietary restrictions?|"
    r"food restrictions?)\s*(?::|-|–|include|are)\s*\w",
    re.IGNORECASE,
)

# On a chat line "Set some goals", "Be sure to call her", "Make sure to exercise them"
# are advice to the other person; "Please don't send me ...", "Keep my replies short"
# ask something for the speaker. "Check my ..." and "Remind us to ..." show or muse.
_FOR_THE_SPEAKER = re.compile(r"\b(?:me|my|mine|us|our|ours)\b", re.I)
_CHAT_SHOWING = re.compile(r"^(?:please\s+)?(?:check|look at|see|remind)\b", re.I)


def _speaker_instruction(sentence: str) -> bool:
    """An instruction on a chat line that asks something for its speaker."""
    return _FOR_THE_SPEAKER.search(sentence) is not None and not _CHAT_SHOWING.match(sentence)


_CONDITION = re.compile(r"^(?:if|when|whenever|unless|before|after)\b[^,]{1,80},\s*", re.I)
_FIRST_WORD = re.compile(r"(?:please\s+)?([A-Za-z]+)\b(?!['’])")  # not "Store's"


def _is_instruction(sentence: str) -> bool:
    # A condition first ("If I'm travelling, skip that week.") leaves the instruction after it.
    head = _CONDITION.sub("", sentence)
    # The opening is read first (two anchored matches): most sentences open with none,
    # and the idioms and a word to the listener can only veto one (two slower searches).
    return (
        _opens_with_instruction(head)
        and not _IDIOMS.search(head)
        and not _TO_THE_LISTENER.search(head)
    )


def _opens_with_instruction(head: str) -> bool:
    opening = _PROHIBITION.match(head)
    if opening is not None:
        word, following = opening.group("word"), opening.group("next").lower()
        past = following in _PAST_FORMS or following.endswith(("ed", "ing"))
        return not (word and (not following or following in _NOT_A_VERB or past))
    first = _FIRST_WORD.match(head)
    return (
        first is not None
        and first.group(1).lower() in _INSTRUCTION_VERBS
        and (first.group(0)[0].isupper())
    )
