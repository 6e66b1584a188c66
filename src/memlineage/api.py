"""The library API: one ``Memory`` per tenant over a store.

>>> from memlineage import Memory
>>> with Memory("memlineage.db", tenant="acme") as memory:
...     memory.add([{"id": "m-1", "subject": "user-7", "text": "Never email after 9 pm."}])
...     memory.consolidate("user-7")
...     memory.recall("user-7").mode
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any

from . import consolidate as consolidation
from .errors import BadInput
from .generators.base import Generator
from .ingest import parse_event
from .model import Artifact, NewEvent
from .recall import Recall, recall
from .store import open_store
from .store.protocol import Appended, OpResult, Store


class Memory:
    """Memory of one tenant. Every method is one or a few short transactions."""

    def __init__(
        self,
        db: str | None = None,
        *,
        tenant: str = "default",
        store: Store | None = None,
        default_budget: int | None = consolidation.DEFAULT_BUDGET,
    ):
        """``default_budget``: the tenant's token budget of a rendered summary (None: none)."""
        if not tenant:
            raise BadInput("must not be empty", field="tenant")
        if default_budget is not None and default_budget < 1:
            raise BadInput("must be a positive number of tokens", field="default_budget")
        self.store = store or open_store(db)
        self.tenant = tenant
        self.default_budget = default_budget

    # -- raw layer --

    def add(self, events: Iterable[Mapping[str, Any] | NewEvent]) -> list[Appended]:
        """Append events (validated first: a bad one leaves the store unchanged)."""
        parsed: list[NewEvent] = []
        for index, event in enumerate(events):
            try:
                parsed.append(event if isinstance(event, NewEvent) else parse_event(dict(event)))
            except BadInput as exc:
                raise BadInput(exc.reason, field=f"[{index}].{exc.field or ''}") from exc
        return self.store.append(self.tenant, parsed)

    def revoke(self, event_id: str, reason: str | None = None) -> OpResult:
        return self.store.revoke(self.tenant, event_id, reason)

    def trust(
        self, event_id: str, level: str | None = None, taint: Sequence[str] | None = None
    ) -> OpResult:
        return self.store.set_trust(self.tenant, event_id, level, taint)

    def conflict(self, a: str, b: str, key: str | None = None) -> OpResult:
        return self.store.declare_conflict(self.tenant, a, b, key)

    def resolve(self, conflict_id: str, winner: str) -> OpResult:
        return self.store.resolve_conflict(self.tenant, conflict_id, winner)

    # -- derived layer --

    def consolidate(
        self,
        subject: str,
        generator: Generator | None = None,
        *,
        force: bool = False,
        budget: int | None = None,
    ) -> consolidation.Consolidation:
        """One consolidation; switches the alias when the gate passes (release mode auto).

        ``budget`` is the token budget of the rendered summary for this call
        (default: the tenant's ``default_budget``). Over it, low-salience
        statements move to cold; what must be kept is kept, and an output
        still over budget is published whole with ``overBudget`` in its manifest.
        """
        if budget is not None and budget < 1:
            raise BadInput("must be a positive number of tokens", field="budget")
        chosen = self.default_budget if budget is None else budget
        return consolidation.consolidate(
            self.store, self.tenant, subject, generator, force=force, budget=chosen
        )

    def recall(self, subject: str) -> Recall:
        with self.store.reader(self.tenant) as reader:
            return recall(reader, subject, self.store.policy)

    def artifacts(self, subject: str | None = None) -> list[Artifact]:
        with self.store.reader(self.tenant) as reader:
            return reader.artifacts(subject)

    # -- lifetime --

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
