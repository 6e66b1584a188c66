"""The seam for generators that talk to a model: one completion per call, with its costs.

A chat generator is asked for an output, and once more with the gate's failure
codes when the parser or the gate rejected it (bounded repair, see
:mod:`memlineage.consolidation.generation`). Each call reports what the orchestration needs
to write into the manifest: the model name the server reported, token usage,
latency and the response format the server accepted.
"""

from __future__ import annotations

from collections.abc import Sequence
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


#: what each gate code means, in the words a repair request gives the model: the class
#: of the problem and the rule, never a value to write (a value handed back is laundered
#: into the next answer in other words)
PROBLEMS: dict[str, str] = {
    "missing": "a must-preserve item has no claim with its key and value",
    "value_changed": "a claim changes the value of a must-preserve item",
    "unit_changed": "a claim changes the unit of a must-preserve item",
    "polarity_flipped": "a claim reverses the polarity of a must-preserve item",
    "derivation_missing": "a claim does not name the item's source in derivedFrom",
    "conflict_asserted": "a side of an unresolved conflict is stated as fact, not contested",
    "conflicts_mismatch": "unresolvedConflicts is not exactly the conflicts given",
    "unsupported_claim": "a claim says what its derivedFrom events do not say",
    "unknown_source": "an id names no event given",
    "open_item_dropped": "an open item is missing from openItems",
    "event_dropped": "an event is neither stated nor listed in cold",
    "statement_missing": "an event with a must-preserve or open item has no statement",
    "statement_unsupported": "a statement's derivedFrom, claims or contested mark is wrong",
    "statement_value_unsupported": "a statement names a value no claim of its events carries",
    "statement_at_unsupported": "a statement's at is not its events' time",
    "statement_project_unsupported": "a statement's project is not its events' project",
    "statement_kind_unsupported": "a statement's kind is not supported by its events",
    "statement_part_unmarked": "a statement shows part of an event without its part mark",
    "statement_events_merged": "a statement puts different events in one line",
    "event_parts_incomplete": "an event shown in parts misses some of them",
    "statement_reworded": "a statement's text is not the exact text of the event it cites",
    "statement_speaker_unsupported": "a statement's speaker is not its event's speaker",
    "unsafe_text": "a field has control characters or markup its events lack",
    "claim_text_unsupported": "a claim's text is not words copied from its events",
    "updated_shown_as_current": "an event is shown while the later event that updates it is not",
}
#: codes whose detail names a class and quotes only the answer's own words
_DETAIL_KEPT = ("parse_", "statement_meaning_changed")


@dataclass(frozen=True)
class Repair:
    """A second request: the rejected answer and the failures, each by code, the id or
    field it names, and the class of the problem."""

    previous_text: str
    failures: tuple[GateFailure, ...]

    def to_json(self) -> dict[str, Any]:
        return {"failures": [problem_of(f) for f in self.failures]}


def problem_of(failure: GateFailure) -> dict[str, str]:
    """A failure as the model is told it: code, what it names, the class of the problem."""
    if failure.code.startswith(_DETAIL_KEPT):
        problem = failure.detail
    else:
        problem = PROBLEMS.get(failure.code, f"the answer breaks the rule {failure.code}")
    return {"code": failure.code, "item": failure.item, "problem": problem}


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
