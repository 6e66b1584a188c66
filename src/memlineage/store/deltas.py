"""A summary's output stored as a base artifact's output plus what changed (schema 18).

A worker's next summary of a subject carries nearly every claim, statement and cold id
of the last one: at 20,000 events a +100 run changes some 170 entries of 38,700, yet
writing the output whole (7.9 MB) was half of the run's CPU and most of the store's
growth. So a run whose published summary this process wrote or read stores its output as

    {"base": <artifact id>, "baseEpoch": <the base's input epoch>,
     "claims": OPS, "openItems": OPS, "unresolvedConflicts": OPS,
     "cold": OPS, "statements": OPS}

where OPS lists the entries in order, each either ``[start, stop]`` (the base's entries
``start`` to ``stop - 1`` of the same list) or one entry written out (an object for a
claim or a statement, a string for an event or conflict id). A list of strings alone is
OPS too: deltas stored before open items and conflicts were encoded on the base's
(tens of thousands of conflict ids, written out every run) read as they are.

A base is always stored whole, so a chain is one step long: a reader joins one more
row, and staleness and erasure never walk a chain of deltas. Every later run encodes
against the same base until its delta grows past a quarter of the entries it stands
for; that run is stored whole and becomes the next base (``worth_a_delta``).

Nothing here reads or writes the store: ``store/switch.py`` decides when a delta may be
written (its base unchanged since the base's epoch, under the subject's lock), and
``store/rows.py`` serialises one (``delta_text``, beside the whole output's) and
materialises one when it is read.
"""

from __future__ import annotations

import json
import threading
import weakref
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from memlineage.meaning import caches
from memlineage.model import Artifact, Claim, Output, Statement

T = TypeVar("T")

Positions = npt.NDArray[np.int64]

#: how a stored delta begins; a whole output begins with ``{"claims":``
DELTA_PREFIX = '{"base":'
#: a delta is written while its written-out entries and runs stay under this share of
#: the entries it stands for (above it the output is written whole: the next base)
DELTA_SHARE = 0.25


def is_delta(text: str) -> bool:
    return text.startswith(DELTA_PREFIX)


@dataclass
class StoredBase:
    """An artifact stored whole, as this process wrote or read it: what a delta is encoded on.

    ``epoch`` is the input epoch it was built at: an erasure after it may have
    rewritten its row, so a delta on it is written only if none was recorded since."""

    id: str
    epoch: int
    output: Output
    # its inputs: they reach an artifact stored on it through the base's edge
    inputs: frozenset[str] = frozenset()
    # where each of the base's entries is, by the object (claims and statements the
    # generator carried), by its content, or by itself (ids): each built once, on the
    # first delta encoded on this base (which keeps the objects alive)
    _indexes: dict[str, dict[Any, int]] = field(default_factory=dict, repr=False)

    @staticmethod
    def whole(artifact: Artifact, output: Output) -> StoredBase:
        """``artifact``, stored whole with ``output``, as a base."""
        manifest = artifact.manifest
        return StoredBase(artifact.id, manifest.input_epoch, output, frozenset(manifest.input_ids))

    def index(self, name: str, keys: Callable[[], Iterable[Hashable]]) -> dict[Any, int]:
        found = self._indexes.get(name)
        if found is None:
            found = self._indexes[name] = {}
            for position, key in enumerate(keys()):
                found.setdefault(key, position)  # equal entries: the first stands for all
        return found


@dataclass(frozen=True)
class Encoded:
    """One list as OPS (its JSON text) and what it costs: entries written out plus runs."""

    text: str
    cost: int
    entries: int


def positions(keys: Iterable[Hashable], index: Mapping[Any, int], count: int) -> Positions:
    """Where each key is in the base (its index), -1 where it is not: one C-level pass."""
    return np.fromiter(map(index.get, keys, repeat(-1)), dtype=np.int64, count=count)


def encode_positions(found: Positions, literal: Callable[[int], str]) -> Encoded:
    """Entries at base positions ``found`` (-1: not in the base) as OPS: a run wherever
    positions follow one another, ``literal(i)`` for the i-th entry otherwise. Runs are
    found with array operations: the Python loop goes over the ops, not the entries."""
    count = len(found)
    if count == 0:
        return Encoded("[]", 0, 0)
    goes_on = np.zeros(count, dtype=bool)
    goes_on[1:] = (found[1:] >= 0) & (found[:-1] >= 0) & (found[1:] == found[:-1] + 1)
    starts = np.flatnonzero(~goes_on).tolist()
    ops: list[str] = []
    for start, stop in zip(starts, [*starts[1:], count], strict=True):
        at = int(found[start])
        ops.append(literal(start) if at < 0 else f"[{at},{at + stop - start}]")
    return Encoded("[" + ",".join(ops) + "]", len(ops), count)


def encode_keys(
    keys: Sequence[Hashable], index: Mapping[Any, int], literal: Callable[[int], str]
) -> Encoded:
    """``keys`` (the child's entries as the base's ``index`` names them) as OPS."""
    return encode_positions(positions(keys, index, len(keys)), literal)


@dataclass(frozen=True)
class Parts:
    """Each list of an output, encoded as OPS on its base's."""

    claims: Encoded
    open_items: Encoded
    unresolved_conflicts: Encoded
    cold: Encoded
    statements: Encoded

    def __iter__(self) -> Iterator[Encoded]:
        yield from (self.claims, self.open_items, self.unresolved_conflicts, self.cold)
        yield self.statements


def worth_a_delta(parts: Iterable[Encoded]) -> bool:
    """Whether the delta stays small beside what it stands for (else: a new base)."""
    listed = list(parts)
    return sum(p.cost for p in listed) <= DELTA_SHARE * max(1, sum(p.entries for p in listed))


def base_of(text: str) -> str:
    """The base artifact a stored delta names."""
    return str(json.loads(text[: text.index(',"baseEpoch":')] + "}")["base"])


def apply(ops: Sequence[Any], base: Sequence[T], literal: Callable[[Any], T]) -> list[T]:
    """The entries OPS stand for: runs copied from ``base``, the rest made by ``literal``."""
    out: list[T] = []
    for op in ops:
        if type(op) is list:
            out.extend(base[op[0] : op[1]])
        else:
            out.append(literal(op))
    return out


def materialise(delta: Mapping[str, Any], base: Output) -> Output:
    """The output a parsed delta stands for, on its base's parsed output."""
    return Output(
        claims=tuple(apply(delta["claims"], base.claims, Claim.from_json)),
        open_items=tuple(apply(delta["openItems"], base.open_items, str)),
        unresolved_conflicts=tuple(
            apply(delta["unresolvedConflicts"], base.unresolved_conflicts, str)
        ),
        cold=tuple(apply(delta["cold"], base.cold, str)),
        statements=tuple(apply(delta["statements"], base.statements, Statement.from_json)),
    )


def materialise_json(delta: Mapping[str, Any], base: Mapping[str, Any]) -> dict[str, Any]:
    """``materialise`` on JSON documents (what an erasure rewrites whole)."""

    def same(entry: Any) -> Any:
        return entry

    return {
        "claims": apply(delta["claims"], base["claims"], same),
        "openItems": apply(delta["openItems"], base.get("openItems", ()), same),
        "unresolvedConflicts": apply(
            delta["unresolvedConflicts"], base.get("unresolvedConflicts", ()), same
        ),
        "cold": apply(delta["cold"], base["cold"], same),
        "statements": apply(delta["statements"], base.get("statements", ()), same),
    }


def parts(output: Output) -> int:
    """What a cache of outputs counts an output as: its claims, statements and cold ids."""
    return len(output.claims) + len(output.statements) + len(output.cold)


#: the artifacts this process stored last, per store: (tenant, id) to the base their
#: stored output is (themselves when stored whole), so the next run can encode on it;
#: bounded by the bases' parts in all, so a worker cycling a thousand small subjects
#: keeps every one's, as it keeps their events (store/inputs.py)
RECORDED_PARTS = 1 << 20
_recorded: weakref.WeakKeyDictionary[object, caches.LastPerKey[tuple[str, str], StoredBase]] = (
    weakref.WeakKeyDictionary()
)
_recorded_lock = threading.Lock()


def record(store: object, tenant: str, artifact_id: str, base: StoredBase) -> None:
    """``artifact_id`` was stored on ``base`` (or whole, ``base`` being itself)."""
    with _recorded_lock:
        kept = _recorded.get(store)
        if kept is None:
            kept = _recorded[store] = caches.LastPerKey(
                lambda base: parts(base.output), RECORDED_PARTS, registered=False
            )
    kept.keep((tenant, artifact_id), base)


def recorded(store: object, tenant: str, artifact_id: str) -> StoredBase | None:
    """The base ``artifact_id`` was stored on by this process, if it was."""
    with _recorded_lock:
        kept = _recorded.get(store)
    return kept.get((tenant, artifact_id)) if kept is not None else None


def forget_recorded() -> None:
    """What a new process starts with: it stores its first output whole."""
    with _recorded_lock:
        _recorded.clear()


caches.register(forget_recorded)
