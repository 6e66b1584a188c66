"""The seam for generators that talk to a model: one completion per call, with its costs.

A chat generator is asked for an output, and once more with the gate's failure
codes when the parser or the gate rejected it (bounded repair, see
:mod:`memlineage.consolidation.generation`). Each call reports what the orchestration needs
to write into the manifest: the model name the server reported, token usage,
latency and the response format the server accepted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from memlineage.consolidation.generators.base import GenerationRequest
from memlineage.errors import MemlineageError
from memlineage.model import Event, GateFailure, Item


@dataclass(frozen=True)
class Usage:
    """Tokens the server reported for one call (0 when it reported none)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_json(self) -> dict[str, int]:
        return {
            "promptTokens": self.prompt_tokens,
            "completionTokens": self.completion_tokens,
            "totalTokens": self.total_tokens,
        }


@dataclass(frozen=True)
class Completion:
    """One answer of the model: its text (parsed later) and what it cost."""

    text: str
    model: str  # the model name the server reported back: the manifest's modelSnapshot
    usage: Usage = field(default_factory=Usage)
    latency_ms: float = 0.0
    response_format: str = ""
    calls: int = 1  # HTTP requests made, retries included
    finish_reason: str | None = None
    refused_formats: tuple[str, ...] = ()  # response formats the server refused first
    context_tokens: int | None = None  # the window the request was planned for
    max_tokens: int | None = None  # the token limit the request carried


@dataclass(frozen=True)
class Repair:
    """A second request: the rejected answer, the failures, and the items they name."""

    previous_text: str
    failures: tuple[GateFailure, ...]
    named: tuple[Mapping[str, Any], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "failures": [f.to_json() for f in self.failures],
            "named": [dict(n) for n in self.named],
        }


class GenerationFailed(MemlineageError):
    """No answer to judge: a timeout, a refused or failing request, retries exhausted.

    ``code`` is stable (``timeout``, ``rate_limited``, ``server_error``,
    ``connection``, ``refused``, ``bad_response``, ``too_large``, ``error`` for
    any other exception, e.g. a worker's time limit); the message
    never carries the API key.
    """

    def __init__(
        self,
        code: str,
        detail: str,
        *,
        latency_ms: float = 0.0,
        calls: int = 0,
        model: str = "",
    ) -> None:
        self.code = code
        self.detail = detail
        self.latency_ms = latency_ms
        self.calls = calls
        self.model = model
        super().__init__(f"{code}: {detail}")


@runtime_checkable
class ChatGenerator(Protocol):
    """A generator behind a model: asked per chunk, repairable, and aware of its context size."""

    name: str
    prompt_version: str
    model_snapshot: str

    def complete(self, request: GenerationRequest, repair: Repair | None = None) -> Completion:
        """Ask the model for an output of ``request`` (or a corrected one)."""
        ...

    def input_token_limit(self) -> int:
        """How many prompt tokens one request may use (context minus the answer's share)."""
        ...

    def fits(self, request: GenerationRequest) -> bool:
        """Whether the whole prompt of ``request`` fits :meth:`input_token_limit`."""
        ...

    def prompt_tokens(self, request: GenerationRequest) -> int:
        """The prompt tokens of ``request`` as given (with no events: a chunk's fixed part)."""
        ...

    def event_tokens(self, event: Event, items: Sequence[Item]) -> int:
        """What one more event (with its items) adds to a prompt."""
        ...
