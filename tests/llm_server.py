"""A fake OpenAI-compatible chat-completions server on 127.0.0.1, with scripted answers.

It speaks the protocol over real HTTP (``POST /v1/chat/completions``), records
every request (body and headers), and answers from a script: one action per
request, in order, then ``oracle()`` for every later one. The oracle reads the
``<input>`` document of the prompt and answers what the built-in generator
would, extended by the previous output when the prompt carries one; an
``oracle(mutate)`` answer passes that output through ``mutate`` first.

Once the script is spent, every request gets ``default`` (an oracle unless
told). Actions: ``oracle(mutate=None)``, ``content(text)``, ``status(code, message,
headers)``, ``empty_body()``, ``stall(seconds)``, ``loop()`` (a model that
repeats itself until its token limit).

Like the servers people run, whatever the action:

* an answer longer than the request's ``max_tokens`` (4 characters a token) is
  cut there, with ``finish_reason: "length"``;
* ``flavour="openai"`` refuses ``json_schema`` with HTTP 400 naming the format
  (``refuse_json_schema=True`` says the same);
* ``flavour="llama.cpp"`` behaves like llama.cpp's server: HTTP 500 on
  ``json_schema`` with its message, answers in a ```` ```json ```` fence, and
  ``GET /v1/models`` reports the model's window (``meta.n_ctx_train``, 8,192
  unless told).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from memlineage.consolidation.generators.base import GenerationRequest
from memlineage.consolidation.generators.deterministic import DeterministicGenerator
from memlineage.model import Conflict, Event, Fact, Item, Output

SNAPSHOT = "fake-model-2026-01-01"  # what the server reports: not the name asked for
INPUT = re.compile(r"^<input>\n(.*?)\n</input>$", re.S | re.M)

Doc = dict[str, Any]
Mutation = Callable[[Doc, Doc], Doc]  # (answer, input document) -> answer


@dataclass(frozen=True)
class Action:
    kind: str
    mutate: Mutation | None = None
    text: str = ""
    code: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    seconds: float = 0.0


def oracle(mutate: Mutation | None = None) -> Action:
    return Action("oracle", mutate=mutate)


def content(text: str) -> Action:
    return Action("content", text=text)


def status(code: int, message: str = "", headers: dict[str, str] | None = None) -> Action:
    return Action("status", code=code, text=message, headers=tuple((headers or {}).items()))


def empty_body() -> Action:
    return Action("empty_body")


def stall(seconds: float) -> Action:
    return Action("stall", seconds=seconds)


def loop() -> Action:
    return Action("loop")


# llama.cpp's server, asked for a json_schema response format (HTTP 500)
LLAMA_CPP_FORMAT_ERROR = (
    'response_format type must be one of "text" or "json_object", but got: json_schema'
)
OPENAI_FORMAT_ERROR = (
    "Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model."
)


@dataclass
class Recorded:
    body: Doc
    headers: dict[str, str]

    @property
    def messages(self) -> list[dict[str, str]]:
        return list(self.body["messages"])

    @property
    def is_repair(self) -> bool:
        return len(self.messages) > 2

    def input(self) -> Doc:
        return input_document(self.messages)


@dataclass
class FakeServer:
    url: str = ""
    script: list[Action] = field(default_factory=list)
    requests: list[Recorded] = field(default_factory=list)
    refuse_json_schema: bool = False
    flavour: str = "openai"  # or "llama.cpp"
    window: int = 8192  # what a llama.cpp flavour reports on GET /v1/models
    models_requests: int = 0
    budget: int | None = None  # the oracle's token budget: 0 leaves narrative to cold
    default: Action = field(default_factory=lambda: oracle())  # once the script is spent
    lock: threading.Lock = field(default_factory=threading.Lock)
    release: threading.Event = field(default_factory=threading.Event)

    def reset(
        self,
        *actions: Action,
        refuse_json_schema: bool = False,
        budget: int | None = None,
        default: Action | None = None,
        flavour: str = "openai",
        window: int = 8192,
    ) -> None:
        with self.lock:
            self.script = list(actions)
            self.requests = []
            self.refuse_json_schema = refuse_json_schema
            self.flavour = flavour
            self.window = window
            self.models_requests = 0
            self.budget = budget
            self.default = default or oracle()
        self.release.clear()

    def next_action(self, body: Doc, headers: dict[str, str]) -> Action:
        with self.lock:
            self.requests.append(Recorded(body, headers))
            return self.script.pop(0) if self.script else self.default


def input_document(messages: list[dict[str, str]]) -> Doc:
    match = INPUT.search(messages[1]["content"])
    assert match, "the first user message carries the <input> document"
    doc: Doc = json.loads(match.group(1))
    return doc


def correct_answer(doc: Doc, budget: int | None = None) -> Doc:
    """What the built-in generator answers for the prompt's input, over its previous output."""
    events = tuple(
        Event(
            id=e["id"],
            subject="s",
            text=e["text"],
            at=e.get("at"),
            kind=e.get("kind"),
            project=e.get("project"),
            speaker=e.get("speaker"),
            facts=tuple(Fact(**f) for f in e.get("facts", ())),
        )
        for e in doc["events"]
    )
    items = tuple(_item(i) for i in doc["mustPreserve"])
    conflicts = tuple(Conflict(**c) for c in doc["unresolvedConflicts"])
    if budget is None:
        budget = doc.get("budget")  # the fake model keeps to the budget it was given
    request = GenerationRequest(
        "s", events, items, conflicts, tuple(doc["openItems"]), budget=budget
    )
    answer: Doc = DeterministicGenerator().generate(request)
    previous = doc.get("previousOutput")
    if previous:
        answer = _extend(Output.from_json(previous).to_json(), answer, conflicts)
    return answer


def _item(shown: Doc) -> Item:
    """An item as the prompt shows it; one from a conflict's side is a plain fact to the oracle.

    The built-in generator makes every claim of a side a conflict claim itself.
    """
    fields = dict(shown)
    if fields.pop("contested", None) is not None:
        fields["kind"] = "fact"
    return Item(**fields)


def _extend(previous: Doc, new: Doc, conflicts: tuple[Conflict, ...]) -> Doc:
    """The previous output plus the new answer; what a new conflict names becomes contested."""
    sides = {side: c for c in conflicts for side in (c.a, c.b)}
    for claim in previous["claims"]:
        hit = next((sides[s] for s in claim["derivedFrom"] if s in sides), None)
        if hit is not None:
            claim["kind"] = "conflict"
            claim["derivedFrom"] = list(dict.fromkeys([*claim["derivedFrom"], hit.a, hit.b]))
    for statement in previous.get("statements", []):
        hit = next((sides[s] for s in statement["derivedFrom"] if s in sides), None)
        if hit is not None:
            statement["contested"] = hit.id
    merged = dict(new)
    for name in ("claims", "statements"):
        merged[name] = previous.get(name, []) + new.get(name, [])
    for name in ("openItems", "cold"):
        merged[name] = list(dict.fromkeys(previous[name] + new[name]))
    if "summary" in new:
        merged["summary"] = "\n".join(s for s in (previous.get("summary"), new["summary"]) if s)
    return merged


def _completion(text: str, model: str, prompt_chars: int, limit: int | None = None) -> Doc:
    finish = "stop"
    if limit is not None and len(text) // 4 > limit:  # the model stops at its token limit
        text, finish = text[: limit * 4], "length"
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": finish,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_chars // 4,
            "completion_tokens": len(text) // 4,
            "total_tokens": prompt_chars // 4 + len(text) // 4,
        },
    }


def _handler(server: FakeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def do_GET(self) -> None:
            if not self.path.rstrip("/").endswith("/models"):
                self._json(404, _error("not found"))
                return
            with server.lock:
                server.models_requests += 1
            entry: Doc = {"id": "fake-model", "object": "model", "owned_by": "fake"}
            if server.flavour == "llama.cpp":
                entry["meta"] = {"n_ctx_train": server.window, "n_vocab": 49152}
            self._json(200, {"object": "list", "data": [entry]})

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", 0))
            raw = self.rfile.read(length)
            body = json.loads(raw)
            headers = {k.lower(): v for k, v in self.headers.items()}
            action = server.next_action(body, headers)
            fmt = (body.get("response_format") or {}).get("type")
            if fmt == "json_schema" and server.flavour == "llama.cpp":
                self._json(500, _error(LLAMA_CPP_FORMAT_ERROR, "server_error"))
                return
            if fmt == "json_schema" and server.refuse_json_schema:
                self._json(400, _error(OPENAI_FORMAT_ERROR))
                return
            if action.kind == "status":
                extra = dict(action.headers)
                self._json(action.code, _error(action.text or f"status {action.code}"), extra)
            elif action.kind == "empty_body":
                self._send(200, b"", {"content-type": "application/json"})
            elif action.kind == "stall":
                server.release.wait(action.seconds)
                answer = correct_answer(input_document(body["messages"]), server.budget)
                self._send_text(answer, body, raw)
            elif action.kind == "content":
                self._json(200, _completion(action.text, SNAPSHOT, len(raw), _limit(body)))
            elif action.kind == "loop":
                text = '{"claims": [' + '{"key": "again", ' * (4 * (_limit(body) or 100_000))
                self._json(200, _completion(text, SNAPSHOT, len(raw), _limit(body)))
            else:
                answer = correct_answer(input_document(body["messages"]), server.budget)
                if action.mutate is not None:
                    answer = action.mutate(answer, input_document(body["messages"]))
                self._send_text(answer, body, raw)

        def _send_text(self, answer: Doc, body: Doc, raw: bytes) -> None:
            text = json.dumps(answer)
            if server.flavour == "llama.cpp":
                text = f"```json\n{text}\n```"  # what small models write in plain JSON mode
            self._json(200, _completion(text, SNAPSHOT, len(raw), _limit(body)))

        def _json(self, code: int, doc: Doc, headers: dict[str, str] | None = None) -> None:
            self._send(code, json.dumps(doc).encode(), {"content-type": "application/json",
                                                        **(headers or {})})  # fmt: skip

        def _send(self, code: int, payload: bytes, headers: dict[str, str]) -> None:
            try:
                self.send_response(code)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout): nothing to answer

    return Handler


def _limit(body: Doc) -> int | None:
    limit = body.get("max_tokens", body.get("max_completion_tokens"))
    return int(limit) if limit is not None else None


def _error(message: str, kind: str = "invalid_request_error") -> Doc:
    return {"error": {"message": message, "type": kind, "code": None}}


@contextmanager
def running() -> Iterator[FakeServer]:
    """A server on a free port of 127.0.0.1, for the duration of the block."""
    fake = FakeServer()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    httpd.daemon_threads = True
    fake.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        fake.release.set()
        httpd.shutdown()
        httpd.server_close()
