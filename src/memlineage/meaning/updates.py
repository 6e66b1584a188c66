"""Which later event updates which earlier one, when nobody wrote ``supersedes``. Pure.

"We moved to Lisbon this weekend" updates "I live in Porto"; "Make that 8
people" updates "Book a table for 6"; "You can email me any time now" updates
"Never email me after 9 pm". An update is a *derived* relation, found by one
of two rules and kept with the rule's name (``why`` shows it); it is not a
raw-layer verdict and never invalidates an event. What it changes is what a
reader is shown: a summary that shows the older event shows the newer one
with it (the gate refuses one that does not), and recall never shows the older
event alone.

- ``same-slot``: both events state, in the first person, a value of one
  attribute a person has one of at a time (where they live, where they work,
  their diet, phone number, e-mail, name, a party size), read by patterns;
  the newer event, of the same speaker and project, updates the older when
  its text differs. "My sister moved to Denver" states no slot of the user's.
- ``change-cue``: a sentence of the newer event carries a change cue (now,
  anymore, no longer, from now on, moved, changed, actually, update, make
  that, after all, instead, switched) and a topic word of the older one (a
  word of four letters or more that is no common word), same speaker and
  project; the older event states a rule or a taste (meaning/binding.py) or a
  slot: chatter is never "updated".

English only, like the binding rules' cue words (docs/concepts.md). Each new
event is compared with the newest older event of each of its slots and topic
words: linear in the events, never pairwise.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from memlineage.meaning import caches
from memlineage.meaning.binding import SPEAKER_PREFIX, sentence_reasons
from memlineage.meaning.extract import ITEM_CACHE_SIZE, split_sentences
from memlineage.model import Event


def _words(text: str) -> list[str]:
    """The words of a word list written as one string: the lists are data, kept compact."""
    return text.split()


SAME_SLOT = "same-slot"
CHANGE_CUE = "change-cue"

_SLOTS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (slot, re.compile(pattern, re.IGNORECASE))
    for slot, pattern in (
        ("residence", r"\b(?:i|we)(?:'m| am| are|'re)? (?:now |still )?(?:live|living|based|"
                      r"staying) in\b|\b(?:i|we)(?:'ve| have| are|'re|'m| am)? (?:just |"
                      r"recently |finally )?(?:moved|moving|relocated|relocating) to\b|"
                      r"\bmy (?:home|flat|apartment|house) is in\b"),
        ("work", r"\bi (?:now |still )?work (?:at|for|as)\b|\bmy (?:new )?job is (?:at|as|with)\b|"
                 r"\bi (?:started|changed|switched) (?:a new job|jobs)\b"),
        ("diet", r"\bi(?:'m| am)(?: now| still)? (?:a )?(?:vegetarian|vegan|pescatarian)\b|"
                 r"\bi (?:now |still |don't |do not |no longer )?eat (?:meat|fish)\b|"
                 r"\bi(?:'ve| have)? started eating\b|\b(?:vegetarian|vegan|pescatarian) now\b"),
        ("phone", r"\bmy (?:new )?(?:phone |mobile |cell )?number is\b"),
        ("email", r"\bmy (?:new )?e-?mail(?: address)? is\b"),
        ("name", r"\bmy name is\b"),
        ("party-size", r"\btable for \d+\b|\bmake (?:that|it) \d+\b|\bfor \d+ (?:people|guests)\b"),
    )
)  # fmt: skip
_CUE = re.compile(
    r"\b(?:now|anymore|any more(?=\s*(?:[.,!?;]|$))|no longer|from now on|moved|changed|"
    r"actually|update[ds]?|make that|make it \d+|after all|instead|switched|these days)\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]{3,}")
#: words too common to name a topic
_COMMON = frozenset(
    _words(
        "about after again also always another anymore anything back been before "
        "being better could didn't does doesn't doing done don't each even ever every "
        "from going good great have having here into just know last like little long "
        "made make many more most much need never next nice only other over really "
        "right said same should since some something still such sure take than that "
        "that's their them then there these they thing things think this those though "
        "time today told very want week well were what when where which while will "
        "with would year yeah your you're actually after all anymore changed instead "
        "moved update updated updates switched days maybe love loved pretty thanks "
        "thank work working"
    )
)


@dataclass(frozen=True)
class Update:
    """``newer`` updates ``older``, found by ``rule`` (on ``slot``: the slot or topic word)."""

    older: str
    newer: str
    rule: str
    slot: str

    def to_json(self) -> dict[str, str]:
        return {"older": self.older, "newer": self.newer, "rule": self.rule, "on": self.slot}


@functools.lru_cache(maxsize=ITEM_CACHE_SIZE)
def reading(text: str) -> tuple[tuple[str, ...], frozenset[str], frozenset[str], str]:
    """A text's slots, its topic words when it can be updated (it states a rule, a taste
    or a slot: chatter is never "updated"), the topic words of its sentences
    that carry a change cue, and its words as shown. Remembered per text: every run
    reads every event of the selection."""
    body = SPEAKER_PREFIX.sub("", text, count=1)  # who spoke is no topic
    chat = len(body) != len(text)
    sentences = split_sentences(body)
    own_slots = slots(body)
    # Only what states a rule, a taste, a restriction or a slot is "updated" by a cue, and
    # only by the words of those sentences: on chat, a cue and any shared word linked
    # chatter (1,492 wrong links among LoCoMo's 5,882 turns).
    words = frozenset().union(*(topic_words(s) for s in sentences if _changeable(s, chat)))
    cued = frozenset().union(*(topic_words(s) for s in sentences if _CUE.search(s) and _short(s)))
    return own_slots, words, cued, " ".join(text.split())


caches.register(reading.cache_clear)

_RESTRICTION = re.compile(
    r"\b(?:i|we)(?: really| just| still)? (?:can't|cannot|can not|won't|don't|do not|"
    r"never)\b(?! wait)",  # "I can't wait" looks forward, restricts nothing
    re.IGNORECASE,
)


#: an update says what changed in a few words ("Make that 8 people."); a long sentence
#: with a "now" in it tells a story (on LoCoMo's turns every such link was wrong)
UPDATE_WORDS = 16


def _short(sentence: str) -> bool:
    return len(sentence.split()) <= UPDATE_WORDS


def _changeable(sentence: str, chat: bool) -> bool:
    """A sentence that states something a later word can change: a slot, a rule or a
    taste (meaning/binding.py), or the speaker's own restriction ("I can't do ...")."""
    straight = sentence.replace("’", "'")
    return (
        bool(slots(straight))
        or _RESTRICTION.search(straight) is not None
        or bool(sentence_reasons(straight, chat=chat))
    )


def could_change(text: str) -> bool:
    """Whether a text takes part in any update: it states a slot, something changeable,
    or a change cue (what the rules read of every other text is nothing)."""
    own_slots, words, cued, _ = reading(text)
    return bool(own_slots or words or cued)


def may_update(text: str) -> bool:
    """Whether a text could update an earlier event (a slot or a change cue)."""
    own_slots, _, cued, _ = reading(text)
    return bool(own_slots) or bool(cued)


#: the words a later event that states a slot anew would use ("We moved to Lisbon")
_SLOT_TERMS: dict[str, tuple[str, ...]] = {
    "residence": ("moved", "live", "living", "based", "relocated", "moving", "home"),
    "work": ("work", "job", "jobs", "started"),
    "diet": ("vegetarian", "vegan", "pescatarian", "eat", "eating", "meat", "fish"),
    "phone": ("number", "phone"),
    "email": ("email", "mail", "address"),
    "name": ("name", "call"),
    "party-size": ("table", "make", "people", "guests"),
}


def update_terms(text: str) -> list[str]:
    """Words to look for a later event that may update ``text`` by: its slots' words
    and its changeable topic words (a full-text search with them finds the
    candidates; :func:`find_updates` decides)."""
    own_slots, words, _, _ = reading(text)
    terms = {term for slot in own_slots for term in _SLOT_TERMS.get(slot, ())}
    return sorted(terms | words)


def slots(text: str) -> tuple[str, ...]:
    """The one-at-a-time attributes a text states a value of."""
    return tuple(slot for slot, pattern in _SLOTS if pattern.search(text))


def topic_words(text: str) -> frozenset[str]:
    """The words that say what a text is about: four letters or more, no common word."""
    words = {_singular(w.casefold().strip("'-")) for w in _WORD.findall(text)}
    return frozenset(
        w for w in words if w not in _COMMON and len(w) >= 4 and "'" not in w and w[-2:] != "ly"
    )


def _singular(word: str) -> str:
    """'flights' and 'flight' name one topic (a plural's s only: no stemmer guesses)."""
    return word[:-1] if len(word) > 4 and word.endswith("s") and not word.endswith("ss") else word


def find_updates(events: Sequence[Event]) -> dict[str, Update]:
    """Per event id, the newest later event that updates it (events in the order they were
    said: the store's seq). An event updated twice points at the newest update."""
    index = UpdateIndex()
    index.extend(events)
    return index.updates()


@dataclass
class UpdateIndex:
    """:func:`find_updates` over events read so far, extended by the next ones: a run
    over a subject plus a tail reads the tail alone (the result is the same)."""

    # per (speaker, project): the newest event of each slot and of each topic word
    newest_by: dict[tuple[str | None, str | None], dict[str, Event]] = field(default_factory=dict)
    found: dict[str, Update] = field(default_factory=dict)  # links, before the newest
    _resolved: dict[str, Update] | None = None
    linked: dict[str, Event] = field(default_factory=dict)  # the events of the links, by id

    def extend(self, events: Iterable[Event]) -> None:
        newest_by = self.newest_by
        for event in events:
            own_slots, words, cued, said = reading(event.text)
            if not own_slots and not words and not cued:
                continue
            newest = newest_by.setdefault((event.speaker, event.project), {})
            for slot in own_slots:
                self._link(newest.get("slot:" + slot), event, said, SAME_SLOT, slot)
            for word in sorted(cued):  # a cue and a topic word in one sentence of the newer
                self._link(newest.get(word), event, said, CHANGE_CUE, word)
            for slot in own_slots:
                newest["slot:" + slot] = event
            for word in words:
                newest[word] = event
            self._resolved = None

    def _link(self, older: Event | None, newer: Event, said: str, rule: str, on: str) -> None:
        if older is None or older.id in self.found or older.id == newer.id:
            return
        if reading(older.text)[3] == said:
            return  # said again, not changed
        self.found[older.id] = Update(older.id, newer.id, rule, on)
        self.linked[older.id], self.linked[newer.id] = older, newer

    def copy(self) -> UpdateIndex:
        """An index to extend without changing this one (a base's, kept for its next child)."""
        newest_by = {owner: dict(newest) for owner, newest in self.newest_by.items()}
        return UpdateIndex(newest_by, dict(self.found), self._resolved, dict(self.linked))

    def updates(self) -> dict[str, Update]:
        if self._resolved is None:
            self._resolved = _newest_updates(self.found)
        return self._resolved


def _newest_updates(found: dict[str, Update]) -> dict[str, Update]:
    """An update that was itself updated points at the newest word on the matter.

    Chains are followed once each (an event's newest is remembered), so a long
    history of updates costs its length, not its square.
    """
    newest: dict[str, str] = {}

    def newest_of(event_id: str) -> str:
        path: list[str] = []
        seen: set[str] = set()
        while event_id in found and event_id not in newest and event_id not in seen:
            path.append(event_id)  # a cycle cannot come from seq order; ``seen`` stops one
            seen.add(event_id)
            event_id = found[event_id].newer
        end = newest.get(event_id, event_id)
        for step in path:
            newest[step] = end
        return end

    return {
        older: Update(older, newest_of(older), update.rule, update.slot)
        for older, update in found.items()
    }


def updated_ids(updates: dict[str, Update], shown: Iterable[str]) -> list[str]:
    """The ids among ``shown`` whose update is not among them: shown as if current."""
    shown_set = set(shown)
    return [i for i in shown_set if i in updates and updates[i].newer not in shown_set]
