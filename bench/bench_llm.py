"""What memlineage adds to a model call: ``.venv/bin/python bench/bench_llm.py``.

For outputs of 50, 500 and 5,000 statements (one event, one claim and one
statement each), against a fake OpenAI-compatible server on 127.0.0.1 that
answers at once with a prepared output:

* ``response``: the HTTP round trip of one completion through the ``openai``
  client (the fake server's response time, with the answer's JSON decoded);
* ``prompt``: building the prompt and checking that it fits the context;
* ``parse + gate``: the strict parser and the fidelity gate on the answer text;
* ``write + switch``: writing the artifact and switching the alias (SQLite);
* ``bookkeeping``: parse + gate + write + switch (what the issue measures;
  the prompt is reported beside it), as a share of a typical 2 s model call
  (aim: under 5% at 500 statements) and as a ratio to the fake server's
  response time measured in the same run.

Medians of several repeats; ``--quick`` skips 5,000.
"""

from __future__ import annotations

import json
import sys
import tempfile
import threading
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from common import median_seconds
from memlineage import Memory
from memlineage.consolidation.consolidate import new_artifact_id, prepare
from memlineage.consolidation.generation import judge
from memlineage.consolidation.generators.base import GenerationRequest
from memlineage.consolidation.generators.openai import OpenAIConfig, OpenAIGenerator
from memlineage.meaning.extract import expected_open_items, extract_items
from memlineage.model import Artifact, ArtifactStatus

TYPICAL_CALL_MS = 2000.0
SIZES = (50, 500, 5000)
REPEATS = 7


class Answer:
    body: bytes = b"{}"


def _server() -> tuple[ThreadingHTTPServer, str]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", 0)))
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(Answer.body)))
            self.end_headers()
            self.wfile.write(Answer.body)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}/v1"


def _completion(text: str) -> bytes:
    return json.dumps({
        "id": "bench", "object": "chat.completion", "created": 0, "model": "bench-model",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }).encode()  # fmt: skip


def _events(count: int) -> list[dict[str, Any]]:
    return [
        {"id": f"m-{i}", "subject": "bench", "text": f"Ticket T-{i} costs ${i + 1},250.",
         "at": "2026-11-02T09:00:00Z"}
        for i in range(count)
    ]  # fmt: skip


def bench_size(tmp: Path, url: str, count: int) -> dict[str, float]:
    with Memory(str(tmp / f"llm-{count}.db"), tenant="bench") as memory:
        memory.add(_events(count))
        store = memory.store
        # the built-in output, a correct answer; no budget, so that every event is a
        # statement (a budget would move most of them to cold)
        built = prepare(store, "bench", "bench", budget=None)
        assert built.output is not None and built.gate.passed
        with store.reader("bench") as reader:
            events = tuple(reader.events("bench"))
        items = tuple(extract_items(events))
        request = GenerationRequest("bench", events, items, (), expected_open_items(events))
        text = json.dumps(built.output.to_json())
        Answer.body = _completion(text)
        generator = OpenAIGenerator(
            OpenAIConfig(model="bench-model", base_url=url, response_format="json_object")
        )
        small = replace(request, events=events[:1], items=items[:1])
        response = median_seconds(lambda: generator.complete(small), REPEATS)
        prompt = median_seconds(lambda: generator.fits(request), REPEATS)
        parse_gate = median_seconds(lambda: judge(text, request), REPEATS)
        output, report = judge(text, request)
        assert report.passed and output is not None

        def write_switch() -> None:
            with store.reader("bench") as reader:
                head = reader.head("bench")
            assert head is not None
            manifest = replace(
                built.manifest,
                artifact_id=new_artifact_id("bench", head.clock.high_water),
                expected_alias=head.alias,
            )
            artifact = Artifact(manifest.artifact_id, "bench", ArtifactStatus.CANDIDATE,
                                manifest, output, report)  # fmt: skip
            store.write_artifact("bench", artifact)
            # Every repeat publishes the same coverage at the same epoch, which the switch
            # refuses as up_to_date unless forced (one publish per coverage and epoch):
            # forced, it does the same work and skips only that check.
            switched = store.switch("bench", artifact.id, force=True)
            assert switched.switched, switched.to_json()

        write = median_seconds(write_switch, REPEATS)
        generator.close()
    statements = len(output.statements) or len(output.claims)
    return {
        "statements": statements,
        "claims": len(output.claims),
        "response": response * 1000,
        "prompt": prompt * 1000,
        "parse_gate": parse_gate * 1000,
        "write_switch": write * 1000,
    }


def main() -> int:
    quick = "--quick" in sys.argv[1:]
    httpd, url = _server()
    print(f"python {sys.version.split()[0]}; medians of {REPEATS}; a typical model call = 2 s")
    header = (f"{'statements':>10} {'response':>9} {'prompt':>8} {'parse+gate':>10} "
              f"{'write+switch':>12} {'bookkeeping':>11} {'of 2 s':>7} "
              f"{'x response':>10}")  # fmt: skip
    print(header)
    with tempfile.TemporaryDirectory(prefix="memlineage-bench-llm-") as tmp:
        for count in SIZES[:2] if quick else SIZES:
            r = bench_size(Path(tmp), url, count)
            bookkeeping = r["parse_gate"] + r["write_switch"]
            print(f"{int(r['statements']):>10,} {r['response']:>7.1f}ms {r['prompt']:>6.1f}ms "
                  f"{r['parse_gate']:>8.1f}ms {r['write_switch']:>10.1f}ms {bookkeeping:>9.1f}ms "
                  f"{bookkeeping / TYPICAL_CALL_MS:>7.1%} {bookkeeping / r['response']:>10.2f}",
                  flush=True)  # fmt: skip
    httpd.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
