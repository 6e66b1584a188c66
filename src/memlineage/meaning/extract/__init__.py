"""Step 3: deterministic extraction of the must-preserve set.

Hand-written, ordered patterns over each sentence (see docs/extraction.md for
exactly what each kind recognises and what it does not). Recognisers run in a
fixed priority order and claim character spans, so an email address is never
also read as a number and a date is never also read as an account number.

Pure: no I/O. Same input, same items, same ids, whatever else is in the batch.

The package by kind, each module importing only those above it: ``patterns``
(compiled patterns, word lists), ``sentences`` (sentences, clauses, spans,
negations), ``sentiment`` (attitude predicates), ``clauses`` (constraint,
negation, preference, decision), ``recognisers`` (ids, scopes, dates, times,
money, numbers), ``items`` (assembling items). This module is the public API.
"""

from memlineage.meaning.extract.items import (
    CUT_MARK,
    GLOBAL_SCOPE,
    ITEM_CACHE_SIZE,
    KINDS,
    OPEN_ITEM,
    RULES_VERSION,
    Extracted,
    cached_event_items,
    clear_caches,
    conflict_item,
    conflict_items_start,
    event_items,
    event_kinds,
    expected_open_items,
    extract_items,
    extract_with_stored,
    is_open_item,
    item_id,
    trailing_conflict_items,
)
from memlineage.meaning.extract.patterns import MAX_SENTENCE_CHARS
from memlineage.meaning.extract.recognisers import text_values
from memlineage.meaning.extract.sentences import sentence_spans, sentence_windows, split_sentences
from memlineage.meaning.extract.sentiment import sentiment_lexicon

__all__ = [
    "CUT_MARK",
    "GLOBAL_SCOPE",
    "ITEM_CACHE_SIZE",
    "KINDS",
    "MAX_SENTENCE_CHARS",
    "OPEN_ITEM",
    "RULES_VERSION",
    "Extracted",
    "cached_event_items",
    "clear_caches",
    "conflict_item",
    "conflict_items_start",
    "event_items",
    "event_kinds",
    "expected_open_items",
    "extract_items",
    "extract_with_stored",
    "is_open_item",
    "item_id",
    "sentence_spans",
    "sentence_windows",
    "sentiment_lexicon",
    "split_sentences",
    "text_values",
    "trailing_conflict_items",
]
