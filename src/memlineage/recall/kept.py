"""What recall keeps between calls in one process, so that its cost follows what changed.

A recall used to read the subject's every operation, fold them twice, and read
the published artifact's manifest, output and gate on every call: on a subject of
5,000 events, some 2,700 operations and 2 MB of JSON, the same each time. Kept
here per store object (``Reader.scope``):

- **A subject's operations, folded**, with the clock's operation counter they
  were read at. Operations are only ever appended, each numbered by that counter
  under the subject's lock (store/inputs.py says the same of a consolidation's
  read), so a recall reads those after it and continues the fold
  (``validity.fold_operations(after=…)``). New operations that are not numbered
  on from the ones kept (another database under a long-lived process), or that
  hold an erasure (which rewrites rows), make it read and fold them all again.
- **A published artifact** (its manifest, output and gate) by id, and what a
  recall derives from it: the rendered summary and its statements as passages,
  each statement's binding test decided (read.py), for the unresolved conflicts
  they were built with. An artifact's row changes only by an erasure, and an
  erasure stales every artifact citing the event, which a recall then no longer
  uses; the erasing process also empties these caches (meaning/caches.py).

- **Where the last recall of a subject read from** (the summary's coverage, or
  the whole subject when it was raw, and whether it had cold events): the next
  recall reads the head and, in the same round trip, the events after that
  point and the query's full-text matches (``Reader.recall_read``); a head that
  says otherwise has them read again in the same snapshot.

All are bounded by what they hold (operations; an output's parts; subjects), the
subjects used last kept.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from memlineage.meaning import caches
from memlineage.model import Artifact, Conflict
from memlineage.raw.validity import Folded, TrustPolicy, fold_operations
from memlineage.recall.context import Passage
from memlineage.store import deltas
from memlineage.store.protocol import HeadState, Reader
from memlineage.store.reader import operations_follow_on

#: operations kept per store in all, and published outputs' parts
KEPT_OPERATIONS = 1 << 18
KEPT_PARTS = 1 << 20


@dataclass(frozen=True)
class _Fold:
    ops: int  # the clock's operation counter they were read at
    count: int  # how many operations were folded (what the cache is bounded by)
    policy: TrustPolicy  # the store's, the fold's starting point
    folded: Folded


@dataclass(frozen=True)
class Published:
    """A published artifact and what recall derives from it alone."""

    artifact: Artifact
    summary: str  # its statements rendered


@dataclass(frozen=True)
class LastRecall:
    """What the subject's last recall found: a guess at what the next one will read,
    which that one's head confirms or belies in its own snapshot."""

    events_after: int  # its summary's coverage (0: it was raw, every event was read)
    cold: bool  # the summary left events cold, which a query's words may match


@dataclass(frozen=True)
class StatementPassages:
    """A summary's statements as passages, for the unresolved conflicts they show."""

    conflicts: tuple[Conflict, ...]
    passages: tuple[Passage, ...]


K = TypeVar("K")
V = TypeVar("V")
_Caches = weakref.WeakKeyDictionary[object, caches.LastPerKey[K, V]]
_lock = threading.Lock()  # a server recalls on several threads
_folds: _Caches[tuple[str, str], _Fold] = weakref.WeakKeyDictionary()
_published: _Caches[tuple[str, str], Published] = weakref.WeakKeyDictionary()
_statements: _Caches[tuple[str, str], StatementPassages] = weakref.WeakKeyDictionary()
_last: _Caches[tuple[str, str], LastRecall] = weakref.WeakKeyDictionary()
#: subjects whose last recall is kept, per store (a few dozen bytes each)
KEPT_SUBJECTS = 1 << 16


def _of(
    kept: _Caches[K, V], scope: object, size: Callable[[V], int], limit: int
) -> caches.LastPerKey[K, V]:
    with _lock:
        found = kept.get(scope)
        if found is None:
            found = kept[scope] = caches.LastPerKey(size, limit, registered=False)
        return found


def folded_operations(
    reader: Reader, subject: str, state: HeadState, policy: TrustPolicy
) -> Folded:
    """The subject's operations folded, as of ``state`` (read in the same snapshot)."""
    if reader.scope is None:
        return fold_operations(reader.operations(subject), policy)
    kept = _of(_folds, reader.scope, lambda f: f.count, KEPT_OPERATIONS)
    key = (reader.tenant, subject)
    last = kept.get(key)
    found = _continued(reader, subject, state, policy, last) if last is not None else None
    if found is None:
        operations = reader.operations(subject)
        found = _Fold(state.ops, len(operations), policy, fold_operations(operations, policy))
    kept.keep(key, found)
    return found.folded


def _continued(
    reader: Reader, subject: str, state: HeadState, policy: TrustPolicy, last: _Fold
) -> _Fold | None:
    """``last`` continued by the operations recorded since; None: fold them all again."""
    if last.policy != policy or state.ops < last.ops:
        return None
    if state.ops == last.ops:
        return last
    new = reader.operations(subject, after=last.ops)
    if not operations_follow_on(new, last.ops, state.ops):
        return None
    folded = fold_operations(new, policy, after=last.folded)
    return _Fold(state.ops, last.count + len(new), policy, folded)


def published(
    reader: Reader, subject: str, artifact_id: str, render: Callable[[Artifact], str]
) -> Published | None:
    """The alias's artifact (its status as stored when it was read) and its summary."""
    kept = _of(_published, reader.scope, _parts, KEPT_PARTS) if reader.scope is not None else None
    key = (reader.tenant, artifact_id)
    found = kept.get(key) if kept is not None else None
    if found is None:
        artifact = reader.artifact(artifact_id, subject)
        if artifact is None or artifact.output is None:
            return None
        found = Published(artifact, render(artifact))
        if kept is not None:
            kept.keep(key, found)
    return found


def statement_passages(
    reader: Reader,
    artifact_id: str,
    conflicts: tuple[Conflict, ...],
    build: Callable[[], tuple[Passage, ...]],
) -> tuple[Passage, ...]:
    """The statements' passages of ``artifact_id`` for ``conflicts``, built once."""
    if reader.scope is None:
        return build()
    kept = _of(_statements, reader.scope, lambda s: len(s.passages), KEPT_PARTS)
    key = (reader.tenant, artifact_id)
    found = kept.get(key)
    if found is None or found.conflicts != conflicts:
        found = StatementPassages(conflicts, build())
        kept.keep(key, found)
    return found.passages


def last_recall(reader: Reader, subject: str) -> LastRecall | None:
    if reader.scope is None:
        return None
    return _of(_last, reader.scope, _one, KEPT_SUBJECTS).get((reader.tenant, subject))


def recalled(reader: Reader, subject: str, found: LastRecall) -> None:
    if reader.scope is not None:
        _of(_last, reader.scope, _one, KEPT_SUBJECTS).keep((reader.tenant, subject), found)


def _one(_: LastRecall) -> int:
    return 1


def _parts(found: Published) -> int:
    output = found.artifact.output
    return deltas.parts(output) if output is not None else 1


def forget() -> None:
    """What a new process starts with (an erasure in this process empties it too)."""
    with _lock:
        _folds.clear()
        _published.clear()
        _statements.clear()
        _last.clear()


caches.register(forget)
