"""A LangGraph ``BaseStore`` over memlineage, so LangMem users switch by changing one line.

How it maps:

- a namespace is a subject: its labels joined by ``/``, a ``/`` or ``%`` inside a
  label written ``%2F`` or ``%25`` (so ``("users", "a/b")`` stays two labels, as in
  LangGraph's own stores); the tenant is the one the store was opened for;
- a key's value is an event whose id is ``lg:<subject>:<key>:<version>``;
  ``put`` on an existing key appends a replacement (``supersedes``), because
  events are immutable, and a ``put`` of the same value again is a no-op;
- ``delete`` revokes the key's current event: it leaves recall and every
  summary derived from it goes stale;
- ``search`` with a query ranks the current values by the text they are indexed
  by: ``content`` (or the whole value when it has no text ``content``), or the
  ``fields`` of LangGraph's ``index`` configuration; with an ``index``, by
  meaning too (its ``embed`` is the tenant's embedder, docs/recall.md). Without
  a query it lists the current values;
- ``created_at`` is when the key got its current life: a ``put`` after a
  ``delete`` starts a new item, as in LangGraph's own stores.

What differs from an in-memory store: writes are append-only (the history of
every key stays, with lineage), and a deleted value is revoked, not erased
(use ``Memory.erase`` for a data-protection request).
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

import numpy as np
from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)
from langgraph.store.base.embed import ensure_embeddings, get_text_at_path

from memlineage.api import Memory
from memlineage.model import Event, NewEvent
from memlineage.raw.ingest import utc_now
from memlineage.raw.validity import source_state
from memlineage.recall.embed import Vectors, normalised
from memlineage.store import async_store
from memlineage.store.bridge import run_bridged

ID_PREFIX = "lg"


def subject_of(namespace: tuple[str, ...]) -> str:
    if not namespace or any(not part for part in namespace):
        raise InvalidNamespaceError(f"namespace labels must be non-empty: {namespace}")
    return "/".join(part.replace("%", "%25").replace("/", "%2F") for part in namespace)


def namespace_of(subject: str) -> tuple[str, ...]:
    return tuple(part.replace("%2F", "/").replace("%25", "%") for part in subject.split("/"))


def index_text(value: Mapping[str, Any], fields: Sequence[str] | None = None) -> str:
    """The text a value is searched by: its ``fields`` (LangGraph paths, ``$`` the whole
    value), else its ``content`` when that is text, else the whole value as JSON."""
    if fields:
        return "\n".join(t for path in fields for t in get_text_at_path(value, path))
    content = value.get("content")
    return content if isinstance(content, str) else json.dumps(value, ensure_ascii=False)


def encode(value: Mapping[str, Any]) -> str:
    """The event text of a value: its ``content`` alone when that is all it holds, else JSON."""
    content = value.get("content")
    if set(value) == {"content"} and isinstance(content, str) and not _is_json_object(content):
        return content
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def decode(text: str) -> dict[str, Any]:
    if _is_json_object(text):
        decoded: dict[str, Any] = json.loads(text)
        return decoded
    return {"content": text}


def _is_json_object(text: str) -> bool:
    if not text.startswith("{"):
        return False
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def _stamp(at: str | None) -> datetime:
    return datetime.fromisoformat(at) if at else datetime.now(UTC)


class _Key:
    """The versions of one key in one subject: every event, and the current valid one."""

    def __init__(self, versions: Sequence[Event] = (), current: Event | None = None) -> None:
        self.versions: list[Event] = list(versions)
        self.current = current

    @property
    def created(self) -> Event:
        """The first version of the current life: the current one's chain of replacements
        back to a ``put`` that replaced nothing (a ``put`` after a ``delete`` starts one)."""
        assert self.current is not None
        by_id = {e.id: e for e in self.versions}
        first = self.current
        while first.supersedes is not None and first.supersedes in by_id:
            first = by_id[first.supersedes]
        return first


class IndexEmbedder:
    """LangGraph's ``index`` configuration as the tenant's embedder.

    ``embed`` is anything LangGraph accepts (an ``Embeddings``, a function of a list
    of texts, a ``"provider:model"`` string); ``fields`` pick the text of each
    value (default: the whole value). A text that is not a JSON value (a query, a
    plain ``content``) is embedded as it is. The vectors are scaled to unit length.
    """

    version = "1"

    def __init__(self, index: IndexConfig) -> None:
        self.embeddings = ensure_embeddings(index["embed"])
        self.dims = int(index["dims"])
        self.fields = list(index.get("fields") or ["$"])
        self.name = f"langgraph:{_label(index['embed'])}:{','.join(self.fields)}"

    def embed(self, texts: Sequence[str]) -> Vectors:
        documents = [index_text(decode(t), self.fields) if _is_json_object(t) else t for t in texts]
        rows = self.embeddings.embed_documents(documents) if documents else []
        return normalised(np.asarray(rows, dtype=np.float32).reshape(len(documents), self.dims))


def _label(embed: object) -> str:
    """A stable name for an embeddings model: its string, or where its code lives."""
    if isinstance(embed, str):
        return embed
    named = embed if callable(embed) and hasattr(embed, "__qualname__") else type(embed)
    return f"{named.__module__}.{named.__qualname__}"


class MemlineageStore(BaseStore):
    """``BaseStore`` over one tenant of a memlineage store (SQLite path or PostgreSQL URL)."""

    supports_ttl = False

    def __init__(
        self, db: str | None = None, *, tenant: str = "default", index: IndexConfig | None = None
    ) -> None:
        """``index``: LangGraph's configuration for search by meaning (``dims``, ``embed``,
        ``fields``); without it a query ranks by words alone."""
        self.index_config = index
        self.embedder = IndexEmbedder(index) if index is not None else None
        self.memory = Memory(db, tenant=tenant, embedder=self.embedder)
        self._threads = ThreadPoolExecutor(self.memory.store.parallelism())
        self._db = db
        self._async = async_store(db) is not None  # PostgreSQL: async methods on its pool
        self._on_loop: tuple[asyncio.AbstractEventLoop, MemlineageStore] | None = None

    def close(self) -> None:
        """Close the synchronous store (``aclose`` closes the one async calls use)."""
        self._threads.shutdown()
        self.memory.close()

    async def aclose(self) -> None:
        """Close the async pool the async methods use on PostgreSQL (from its event loop)."""
        if self._on_loop is not None and self._on_loop[0] is asyncio.get_running_loop():
            twin = self._on_loop[1]
            await run_bridged(twin.memory.store.close)
            self._on_loop = None

    # -- the BaseStore seam --

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return [self._run(op) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """On PostgreSQL the operations await psycopg's async pool on this event loop
        (AsyncMemory's path); on SQLite they run in this store's thread (its one connection)."""
        batch = list(ops)
        if not self._async:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self._threads, self.batch, batch)
        twin = await self._twin_on_loop()
        return await run_bridged(lambda: twin.batch(batch))

    async def _twin_on_loop(self) -> MemlineageStore:
        """This store over an async pool of the running loop (one per loop: a pool is
        tied to the loop that opened it)."""
        loop = asyncio.get_running_loop()
        if self._on_loop is not None and self._on_loop[0] is loop:
            return self._on_loop[1]
        store = async_store(self._db, pool_size=self.memory.store.parallelism())
        assert store is not None  # self._async: the backend has an async store
        await store.open(migrate=False)  # the synchronous store migrated it
        twin = copy.copy(self)
        twin.memory = Memory(store=store, tenant=self.memory.tenant, embedder=self.embedder)
        if self._on_loop is not None and self._on_loop[0] is loop:  # another task won
            await run_bridged(store.close)
            return self._on_loop[1]
        self._on_loop = (loop, twin)
        return twin

    def _run(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            return self._get(op.namespace, op.key)
        if isinstance(op, PutOp):
            self._put(op.namespace, op.key, op.value)
            return None
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._namespaces(op)
        raise TypeError(f"unknown operation {type(op).__name__}")

    # -- operations --

    def _keys(self, subject: str) -> dict[str, _Key]:
        """Every key of a subject (what ``search`` lists): one read of its events."""
        keys: dict[str, _Key] = {}
        with self.memory.store.reader(self.memory.tenant) as reader:
            events = reader.events(subject)
            state = source_state(events, reader.operations(subject), self.memory.store.policy)
        prefix = f"{ID_PREFIX}:{subject}:"
        for event in events:
            if not event.id.startswith(prefix):
                continue
            key = event.id[len(prefix) :].rsplit(":", 1)[0]
            entry = keys.setdefault(key, _Key())
            entry.versions.append(event)
            if state.is_valid(event):
                entry.current = event
        return keys

    def _key(self, subject: str, key: str) -> _Key | None:
        """One key's versions, read without reading the rest of the subject."""
        found = self.memory.store.key_versions(
            self.memory.tenant, subject, f"{ID_PREFIX}:{subject}:{key}:"
        )
        return _Key(found.versions, found.current) if found.versions else None

    def _item(self, subject: str, key: str, entry: _Key) -> Item:
        assert entry.current is not None
        return Item(
            value=decode(entry.current.text),
            key=key,
            namespace=namespace_of(subject),
            created_at=_stamp(entry.created.at),
            updated_at=_stamp(entry.current.at),
        )

    def _get(self, namespace: tuple[str, ...], key: str) -> Item | None:
        subject = subject_of(namespace)
        entry = self._key(subject, key)
        return self._item(subject, key, entry) if entry and entry.current else None

    def _put(self, namespace: tuple[str, ...], key: str, value: Mapping[str, Any] | None) -> None:
        """Append the key's next version, superseding the current one, or revoke it (a
        delete); the same value again changes nothing. One transaction under the
        subject's lock: racing puts of a key queue, and the last one wins (as in
        LangGraph's own stores)."""
        subject = subject_of(namespace)
        prefix = f"{ID_PREFIX}:{subject}:{key}:"
        event = None
        if value is not None:  # its id and supersedes are the store's to set
            event = NewEvent(id=f"{prefix}1", subject=subject, text=encode(value), at=utc_now())
        written = self.memory.store.write_key(
            self.memory.tenant, subject, prefix, event, "deleted through the LangGraph store"
        )
        if written.outcome == "appended" and self.embedder is not None:
            self.memory.embed(subject)  # searchable by meaning as soon as it is stored

    def _search(self, op: SearchOp) -> list[SearchItem]:
        found: list[SearchItem] = []
        for subject in self._subjects_under(op.namespace_prefix):
            keys = self._keys(subject)
            by_event = {e.current.id: k for k, e in keys.items() if e.current is not None}
            ranked = None
            if op.query:
                fields = self.embedder.fields if self.embedder is not None else None
                texts = {
                    e.current.id: index_text(decode(e.current.text), fields)
                    for e in keys.values()
                    if e.current is not None
                }
                ranked = self.memory.rank(subject, op.query, list(by_event), texts=texts)
            order = ranked if ranked is not None else [(i, None) for i in by_event]
            for event_id, score in order:
                item = self._item(subject, by_event[event_id], keys[by_event[event_id]])
                if _matches(item.value, op.filter):
                    found.append(
                        SearchItem(
                            item.namespace,
                            item.key,
                            item.value,
                            item.created_at,
                            item.updated_at,
                            score,
                        )
                    )
        if op.query:
            found.sort(key=lambda i: -(i.score or 0.0))
        return found[op.offset : op.offset + op.limit]

    def _subjects_under(self, prefix: tuple[str, ...]) -> list[str]:
        return [s for s in self.memory.subjects() if namespace_of(s)[: len(prefix)] == prefix]

    def _namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        spaces = {namespace_of(s) for s in self.memory.subjects()}
        if op.match_conditions:
            spaces = {ns for ns in spaces if all(_ns_match(ns, c) for c in op.match_conditions)}
        if op.max_depth is not None:
            spaces = {ns[: op.max_depth] for ns in spaces}
        return sorted(spaces)[op.offset : op.offset + op.limit]


def _ns_match(namespace: tuple[str, ...], condition: MatchCondition) -> bool:
    path = tuple(condition.path)
    if len(path) > len(namespace):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[-len(path) :]
    return all(p == "*" or p == n for p, n in zip(path, part, strict=True))


_COMPARE = {
    "$eq": lambda a, b: a == b,
    "$ne": lambda a, b: a != b,
    "$gt": lambda a, b: a > b,
    "$gte": lambda a, b: a >= b,
    "$lt": lambda a, b: a < b,
    "$lte": lambda a, b: a <= b,
}


def _matches(value: Mapping[str, Any], conditions: Mapping[str, Any] | None) -> bool:
    for field, wanted in (conditions or {}).items():
        actual = value.get(field)
        if isinstance(wanted, Mapping):
            try:
                if not all(_COMPARE[op](actual, operand) for op, operand in wanted.items()):
                    return False
            except (KeyError, TypeError):
                return False
        elif actual != wanted:
            return False
    return True
