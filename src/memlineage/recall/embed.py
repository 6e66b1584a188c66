"""Embedders: text to unit vectors, for recall by meaning (docs/recall.md, "Embeddings").

Three kinds behind one protocol:

- ``wordllama`` (the default): a static embedding model (token vectors averaged)
  whose 16 MB of weights and its tokenizer ship inside the ``wordllama`` wheel.
  CPU only; it never downloads anything: the files are looked up in the
  installed package and a missing one is an error, never a fetch.
- ``openai``: any OpenAI-compatible ``/v1/embeddings`` endpoint (OpenAI, Ollama,
  vLLM, TEI), the API key taken as the generator takes it.
- ``none``: no vectors; recall ranks by words alone.

An embedder is identified by its ``name``, ``version`` and ``dims``; the store
records them per tenant, so vectors of one model are never compared with
another's. Vectors come back as rows of a float32 array, each of unit length
(a text without a known token gets the zero vector: it is similar to nothing).
"""

from __future__ import annotations

import functools
import itertools
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import numpy.typing as npt

from memlineage.errors import BadInput

if TYPE_CHECKING:
    import openai

Vectors = npt.NDArray[np.float32]  # one row per text

WORDLLAMA_CONFIG = "l2_supercat"  # the model whose weights the wheel ships
WORDLLAMA_DIMS = 256
KINDS: tuple[str, ...] = ("wordllama", "openai", "none")
DEFAULT_KIND = "wordllama"


class Embedder(Protocol):
    """Turns texts into unit vectors of ``dims`` dimensions; ``dims`` 0 embeds nothing."""

    @property
    def name(self) -> str:
        """The model, as the store records it."""
        ...

    @property
    def version(self) -> str:
        """Changes when the same name would give other vectors."""
        ...

    @property
    def dims(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One unit-length float32 row per text, in order."""
        ...


@dataclass(frozen=True)
class EmbedderId:
    """What the store records of an embedder (per tenant, and per stored vector)."""

    name: str
    version: str
    dims: int

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "dims": self.dims}


def identity(embedder: Embedder) -> EmbedderId:
    return EmbedderId(embedder.name, embedder.version, embedder.dims)


def normalised(vectors: npt.NDArray[Any]) -> Vectors:
    """Rows scaled to unit length; a zero or non-finite row becomes zero."""
    rows = np.asarray(vectors, dtype=np.float32)
    rows = np.where(np.isfinite(rows), rows, np.float32(0.0))
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    safe = np.where(norms > 0, norms, np.float32(1.0))
    return np.ascontiguousarray(rows / safe, dtype=np.float32)


class NoEmbedder:
    """Lexical recall only: no vectors are ever computed or stored."""

    name = "none"
    version = "0"
    dims = 0

    def embed(self, texts: Sequence[str]) -> Vectors:
        return np.zeros((len(texts), 0), dtype=np.float32)


class WordLlamaEmbedder:
    """The embedded default: ``wordllama``'s shipped model, loaded from the package itself.

    ``WordLlama.load`` looks for the tokenizer in a folder the wheel does not
    have, then in a cache folder, then downloads it. Given the package's own
    folder as the cache, and downloads disabled, it finds both shipped files
    (``weights/`` and ``tokenizers/``) and cannot reach for the network.

    The vectors are the model's own (``embed(..., norm=True)``: the mean of the
    token vectors, scaled to unit length), computed without its padding: each
    batch is tokenised unpadded and the token vectors of a text are summed with
    one ``reduceat`` (the scaling makes a sum and a mean the same). Padding every
    text of a batch to its longest cost about a third of the throughput.
    """

    name = f"wordllama-{WORDLLAMA_CONFIG}"
    dims = WORDLLAMA_DIMS

    def __init__(self, batch_size: int = 128) -> None:
        self.batch_size = batch_size  # texts per tokenizer call (measured best at 128)
        self.version = _wordllama_version()

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        table, tokenizer = _wordllama_parts()
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            ids = [e.ids for e in tokenizer.encode_batch_fast(batch, add_special_tokens=False)]
            out[start : start + len(batch)] = _summed(table, ids)
        return normalised(out)


def _summed(table: Vectors, ids: Sequence[Sequence[int]]) -> Vectors:
    """The sum of each text's token vectors (a text without a token: zero)."""
    sums = np.zeros((len(ids), table.shape[1]), dtype=np.float32)
    lengths = np.fromiter(map(len, ids), dtype=np.intp, count=len(ids))
    filled = np.flatnonzero(lengths)
    if filled.size == 0:
        return sums
    flat = np.fromiter(itertools.chain.from_iterable(ids), dtype=np.intp, count=int(lengths.sum()))
    np.clip(flat, 0, table.shape[0] - 1, out=flat)  # as the model does with unknown ids
    starts = np.zeros(filled.size, dtype=np.intp)
    np.cumsum(lengths[filled][:-1], out=starts[1:])
    sums[filled] = np.add.reduceat(table[flat], starts, axis=0)
    return sums


def _quiet_import() -> Any:
    """Import ``wordllama`` without the root logging handler its import installs.

    Its ``__init__`` calls ``logging.basicConfig(level=INFO)``: left in place, an
    application's (and our CLI's) stderr would get every library's INFO lines.
    """
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    import wordllama

    for handler in root.handlers[:]:
        if handler not in handlers:
            root.removeHandler(handler)
    root.setLevel(level)
    return wordllama


@functools.lru_cache(maxsize=1)
def _wordllama_version() -> str:
    return str(_quiet_import().__version__)


@functools.lru_cache(maxsize=1)
def _wordllama_parts() -> tuple[Vectors, Any]:
    """The model's token vectors and a copy of its tokenizer that does not pad."""
    model = _wordllama_model()
    tokenizer = type(model.tokenizer).from_str(model.tokenizer.to_str())
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return np.ascontiguousarray(model.embedding, dtype=np.float32), tokenizer


@functools.lru_cache(maxsize=1)
def _wordllama_model() -> Any:
    """The shipped model, loaded once per process (about 0.1 s)."""
    package = _quiet_import()
    folder = Path(package.__file__).parent
    try:
        return package.WordLlama.load(
            WORDLLAMA_CONFIG, cache_dir=folder, dim=WORDLLAMA_DIMS, disable_download=True
        )
    except FileNotFoundError as exc:  # a wheel without its files: say so, never download
        raise BadInput(f"the wordllama package lacks its model files: {exc}") from None


@dataclass
class OpenAIEmbedder:
    """Any OpenAI-compatible ``/v1/embeddings`` endpoint.

    ``dims``: the length of the model's vectors; asked of the server with one
    short text when not given. ``version``: raise it when the model behind the
    same name changes (the store then embeds every event again).
    """

    model: str
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    timeout: float = 60.0
    max_retries: int = 3
    batch_size: int = 256
    version: str = "1"
    dims_given: int | None = None
    _client: openai.OpenAI | None = field(default=None, init=False, repr=False)

    @property
    def name(self) -> str:
        return f"openai:{self.model}"

    @property
    def dims(self) -> int:
        if self.dims_given is None:
            self.dims_given = int(self._request(["dimensions"]).shape[1])
        return self.dims_given

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        parts = [
            self._request(texts[start : start + self.batch_size])
            for start in range(0, len(texts), self.batch_size)
        ]
        rows = np.concatenate(parts)
        if self.dims_given is None:
            self.dims_given = int(rows.shape[1])
        elif rows.shape[1] != self.dims_given:
            raise BadInput(
                f"the embeddings endpoint returned {rows.shape[1]} dimensions,"
                f" not {self.dims_given}",
                field="dims",
            )
        return rows

    def _request(self, texts: Sequence[str]) -> Vectors:
        response = self.client().embeddings.create(model=self.model, input=list(texts))
        ordered = sorted(response.data, key=lambda item: item.index)
        return normalised(np.array([item.embedding for item in ordered], dtype=np.float32))

    def client(self) -> openai.OpenAI:
        if self._client is None:
            import openai

            from memlineage.consolidation.generators.openai import (
                NO_KEY,
                api_key_from_environment,
            )

            self._client = openai.OpenAI(
                api_key=self.api_key or api_key_from_environment() or NO_KEY,
                base_url=self.base_url,
                timeout=self.timeout,
                max_retries=self.max_retries,
            )
        return self._client


def make_embedder(
    kind: str = DEFAULT_KIND,
    *,
    base_url: str | None = None,
    model: str | None = None,
    dims: int | None = None,
) -> Embedder:
    """The embedder named ``kind`` (``wordllama``, ``openai``, ``none``)."""
    if kind == "none":
        return NoEmbedder()
    if kind == "wordllama":
        return WordLlamaEmbedder()
    if kind == "openai":
        if not model:
            raise BadInput("the openai embedder needs a model name", field="model")
        return OpenAIEmbedder(model, base_url=base_url, dims_given=dims)
    raise BadInput(f"unknown embedder {kind!r}: use one of {', '.join(KINDS)}", field="embedder")
