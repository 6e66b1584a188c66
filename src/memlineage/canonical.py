"""RFC 8785 (JCS) canonical bytes, the event hash and a manifest's inputRoot.

JCS comes from the ``rfc8785`` package, which passes the reference vectors
and the ES6 number cases; its errors are wrapped so that a lone surrogate or
a NaN is bad input, never a crash.
"""

from __future__ import annotations

import bisect
import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from json.encoder import encode_basestring
from typing import Any

import rfc8785

from memlineage.errors import BadInput

# JCS treats every number as an IEEE-754 double; integers beyond this are refused.
MAX_SAFE_INTEGER = 2**53 - 1


def _stdlib_serializes_like_jcs(value: Any) -> bool:
    """True when ``json.dumps`` already yields JCS bytes for ``value``.

    Holds for ASCII object keys (code-point order equals JCS's UTF-16 order),
    strings (both escape exactly ``"``, ``\\`` and control characters, with the
    same short forms and lowercase ``\\u00xx``), booleans, null, and integers in
    the safe range. Floats go to ``rfc8785``: their ES6 form differs from repr.
    """
    if isinstance(value, str) or value is None or isinstance(value, bool):
        return True
    if isinstance(value, int | float):
        return is_plain_number(value)
    if isinstance(value, list):
        return all(_stdlib_serializes_like_jcs(v) for v in value)
    if isinstance(value, dict):
        return all(
            isinstance(k, str) and k.isascii() and _stdlib_serializes_like_jcs(v)
            for k, v in value.items()
        )
    return False


def is_plain_number(value: Any) -> bool:
    """Not a float, and an integer only in the safe range: JSON numbers both encoders agree on."""
    if isinstance(value, float):
        return False
    return not isinstance(value, int) or -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER


# json.dumps builds an encoder on every call with these options; one built once
# writes the same text (an event's hash is a tenth cheaper for it).
_STDLIB_ENCODER = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _stdlib_bytes(value: Any) -> bytes:
    return _STDLIB_ENCODER.encode(value).encode()


def canonical_bytes(value: Any) -> bytes:
    """The JCS serialization of ``value``; BadInput for what JSON cannot carry.

    ``rfc8785`` is the reference; it is pure Python and was 70% of the cost of
    an append, so values the stdlib encoder provably serializes the same way
    take that path (a property test holds the two equal).
    """
    try:
        if _stdlib_serializes_like_jcs(value):
            return _stdlib_bytes(value)
        return rfc8785.dumps(value)
    except UnicodeEncodeError as exc:
        raise BadInput(f"string is not valid Unicode (a lone surrogate): {exc.reason}") from exc
    except rfc8785.FloatDomainError as exc:
        raise BadInput(f"number is not JSON (NaN or Infinity): {exc}") from exc
    except rfc8785.IntegerDomainError as exc:
        raise BadInput(f"integer outside the IEEE-754 safe range: {exc}") from exc
    except rfc8785.CanonicalizationError as exc:
        raise BadInput(f"value cannot be canonicalized: {exc}") from exc


def sha256_hex(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def content_hash(content: dict[str, Any], *, plain: bool = False) -> str:
    """SHA-256 over the canonical bytes of an event's content fields.

    ``plain=True`` is the caller's promise that every key is ASCII and every
    number plain (see ``is_plain_number``), which skips the structural check.
    """
    try:
        data = _stdlib_bytes(content) if plain else canonical_bytes(content)
    except UnicodeEncodeError as exc:
        raise BadInput(f"string is not valid Unicode (a lone surrogate): {exc.reason}") from exc
    return sha256_hex(data)


def input_root(inputs: Iterable[tuple[str, str]]) -> str:
    """Hash of the canonical list of ``[id, hash]`` pairs, sorted by id.

    Sorting makes the root independent of the order the selector returned.
    """
    pairs, strings = _sorted_pairs(inputs)
    if strings:
        try:
            return sha256_hex(_stdlib_bytes(pairs))
        except UnicodeEncodeError as exc:
            raise BadInput(f"string is not valid Unicode (a lone surrogate): {exc.reason}") from exc
    return sha256_hex(canonical_bytes(pairs))


def _sorted_pairs(inputs: Iterable[tuple[str, str]]) -> tuple[list[list[Any]], bool]:
    """The ``[id, hash]`` pairs sorted by id, and whether every id and hash is a string:
    the stdlib encodes those as JCS does, one type check per pair instead of
    canonical_bytes' walk (a manifest has 100,000 inputs)."""
    pairs = sorted([event_id, event_hash] for event_id, event_hash in inputs)
    return pairs, all(type(i) is str and type(h) is str for i, h in pairs)


@dataclass(frozen=True)
class RootState:
    """What ``input_root`` hashed, to go on from: the ids in sorted order, each pair's
    canonical JSON in the same order, and sha256 over ``[`` and those texts joined by
    commas, not yet closed by ``]``. Never changed once made (an extension copies)."""

    ids: list[str]
    texts: list[str]
    digest: Any  # hashlib's sha256 object

    @property
    def count(self) -> int:
        return len(self.ids)


def input_root_state(inputs: Iterable[tuple[str, str]]) -> tuple[str, RootState | None]:
    """``input_root`` of the pairs, and the state a longer list can go on from (None when
    a pair is not two strings: the general path, which has none)."""
    pairs, strings = _sorted_pairs(inputs)
    if not strings:
        return sha256_hex(canonical_bytes(pairs)), None
    return _state([i for i, _ in pairs], [_pair_text(i, h) for i, h in pairs])


def extended_input_root(
    state: RootState, added: Iterable[tuple[str, str]]
) -> tuple[str, RootState] | None:
    """``input_root`` of the pairs ``state`` hashed plus ``added``, without sorting and
    encoding every pair again: new ids that sort after every old one are hashed on
    from the state's digest (the tail alone); others are put in their place by id and
    the texts hashed again. None when a new id is already there or a pair is not two
    strings (hash the whole list then)."""
    new, strings = _sorted_pairs(added)
    if not strings:
        return None
    texts = [_pair_text(i, h) for i, h in new]
    if not new or not state.ids or new[0][0] > state.ids[-1]:
        digest = state.digest.copy()
        _update(digest, "".join(("," if n else "") + t for n, t in enumerate(texts, state.count)))
        return _closed(digest), RootState(
            state.ids + [i for i, _ in new], state.texts + texts, digest
        )
    ids, placed = list(state.ids), list(state.texts)
    for (event_id, _), text in zip(new, texts, strict=True):
        at = bisect.bisect_left(ids, event_id)
        if at < len(ids) and ids[at] == event_id:
            return None
        ids.insert(at, event_id)
        placed.insert(at, text)
    return _state(ids, placed)


def _state(ids: list[str], texts: list[str]) -> tuple[str, RootState]:
    digest = hashlib.sha256()
    _update(digest, "[" + ",".join(texts))
    return _closed(digest), RootState(ids, texts, digest)


def _pair_text(event_id: str, event_hash: str) -> str:
    """``[id, hash]`` as ``_stdlib_bytes`` writes it (ensure_ascii off, no spaces)."""
    return f"[{encode_basestring(event_id)},{encode_basestring(event_hash)}]"


def _update(digest: Any, text: str) -> None:
    try:
        digest.update(text.encode())
    except UnicodeEncodeError as exc:
        raise BadInput(f"string is not valid Unicode (a lone surrogate): {exc.reason}") from exc


def _closed(digest: Any) -> str:
    closed = digest.copy()
    closed.update(b"]")
    return "sha256:" + str(closed.hexdigest())
