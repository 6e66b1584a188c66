"""Consolidation benchmark: ``.venv/bin/python bench/bench_consolidate.py``.

* LoCoMo (read in place from the shared data folder, never copied): every
  speaker is a subject, consolidated with the default budget. Baselines of
  the same run: the tokens of the dialogue and of the observations; the
  QA items (categories 1-4) whose evidence events are all cited by the hot
  summary or left in ``cold``, and by the hot summary alone.
* Chat as agents store it: every LoCoMo turn as one subject, +100 turns at a
  time against its full build (warm worker, CPU).
* Scale: a full consolidation of one subject at 1k, 10k and 100k synthetic
  events (``synthetic.py``), each in a fresh store, with the per-process item
  cache emptied first (what a fresh process pays). Baseline: the size below;
  the ratio per 10x is the growth (aim <= 11).
* Incremental: 100 new events on the largest subject, against its full
  build in the same run (aim < 50 ms), split into prepare (steps 1-7) and the
  switch (step 8, which re-validates every input under the lock), in a worker
  process that consolidated the subject before (warm) and in a fresh one (cold),
  for a tail that contradicts nothing (incremental); and for a tail of the same
  mix as the subject, whose detected conflicts move the epoch (a full rebuild).

    python bench/bench_consolidate.py [--sizes 1000,10000,100000] [--postgres URL]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from common import LOCOMO, PG_URL, Tracer, open_memory, report
from memlineage import Memory
from memlineage.consolidation import consolidate as consolidation
from memlineage.consolidation import generation
from memlineage.consolidation.generators.deterministic import DeterministicGenerator
from memlineage.meaning.extract import clear_caches
from memlineage.operations import locomo
from memlineage.store.base import SqlStore
from memlineage.tokens import default_tokenizer
from synthetic import fill, quiet_tail, self_contradicting_tail, stream

SUBJECT = "user-bench"


# ---------------------------------------------------------------------------
# stores


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """Wall seconds of ``fn()`` and its result; the CPU seconds go to ``CPU`` (see below)."""
    start, cpu = time.perf_counter(), time.process_time()
    result = fn()
    CPU.append(time.process_time() - cpu)
    return time.perf_counter() - start, result


# CPU seconds of this process per timed call, in order: on a shared machine the
# wall time also holds the waits for a core; the CPU time does not (nor does it
# hold the work of a PostgreSQL server).
CPU: list[float] = []


def cold_cache() -> None:
    """Forget everything extraction and binding remember of texts: what a process
    that never saw the subject pays."""
    clear_caches()


# ---------------------------------------------------------------------------
# LoCoMo


def bench_locomo() -> None:
    if not LOCOMO.exists():
        print(f"LoCoMo not found at {LOCOMO} (set MEMLINEAGE_SHARED_DATA): skipped")
        return
    conversations = locomo.load(LOCOMO)
    for view in locomo.VIEWS:
        _locomo_view(conversations, view)
    _turns_incremental(conversations)


TURNS_SUBJECT = "agent-user"


def _turns_incremental(conversations: list[locomo.Conversation], tails: int = 5) -> None:
    """What an agent's memory of chat is: every LoCoMo turn (5,882) as one subject, the
    last ``tails`` x 100 held back and added 100 at a time, each consolidated in the
    worker that built the subject (warm), against its full build. Unlike the synthetic
    stream (a third of whose events bind, so its summary is far over any budget), the
    hot summary here is what the budget holds."""
    turns = [
        {**e.as_added(), "subject": TURNS_SUBJECT}
        for conversation in conversations
        for e in conversation.events("turns")
    ]
    held = len(turns) - 100 * tails
    with open_memory("sqlite") as memory:
        memory.add(turns[:held])
        cold_cache()
        full, result = timed(lambda: memory.consolidate(TURNS_SUBJECT))
        assert result.switched, result.reason
        full_cpu = CPU[-1]
        statements = len(result.artifact.output.statements) if result.artifact.output else 0
        cpus: list[float] = []
        tracer = step_tracer() if PHASES else None
        for first in range(held, len(turns), 100):
            memory.add(turns[first : first + 100])
            _, tail = timed(lambda: memory.consolidate(TURNS_SUBJECT))
            assert tail.switched and tail.artifact.manifest.derived_from_artifact, tail.reason
            cpus.append(CPU[-1])
    name = f"LoCoMo turns as one subject of {held:,}"
    report(f"{name}: full build, CPU", full_cpu * 1000, "ms")
    print(f"  {statements} statements hot, wall {full * 1000:,.0f} ms")
    cpu = statistics.median(cpus)
    report(f"  +100 turns, worker, warm, CPU (median of {tails})", cpu * 1000, "ms",
           "its full build", cpu / full_cpu)  # fmt: skip
    if tracer is not None:
        report_steps(tracer, tails)


# The hot summary a speaker should fit in: the default budget (issue goal: >= 95% of speakers).
HOT_BUDGET = 500


def _locomo_view(conversations: list[locomo.Conversation], view: locomo.View) -> None:
    """Consolidate every speaker of one view; the hot summaries against the dialogue."""
    tokenizer = default_tokenizer()
    dialogue = observations = hot = within = over_budget = 0
    reductions: list[float] = []
    cited: dict[str, set[str]] = {}  # subject -> events its statements cite
    cold: dict[str, set[str]] = {}
    with open_memory("sqlite") as memory:
        for conversation in conversations:
            memory.add([e.as_added() for e in conversation.events(view)])
            # the words of the turns, without the speakers' names
            words = (t.text.partition(": ")[2] for t in conversation.turns)
            dialogue += tokenizer.count("\n".join(words))
            observations += tokenizer.count("\n".join(e.text for e in conversation.observations))
        start = time.perf_counter()
        for conversation in conversations:
            for subject in conversation.subjects:
                result = memory.consolidate(subject)
                assert result.switched, (subject, result.reason, result.artifact.gate.failures[:3])
                over_budget += bool(result.artifact.manifest.over_budget)
                recall = memory.recall(subject)
                tokens = tokenizer.count(recall.summary or "")
                own = [e.text for e in conversation.events(view) if e.subject == subject]
                reductions.append(1 - tokens / max(1, tokenizer.count("\n".join(own))))
                hot += tokens
                within += tokens <= HOT_BUDGET
                cited[subject] = {s for st in recall.statements for s in st.derived_from}
                cold[subject] = set(recall.cold)
        elapsed = time.perf_counter() - start
    events = sum(len(c.events(view)) for c in conversations)
    speakers = len(reductions)
    name = f"LoCoMo {view}:"
    report(f"{name} {speakers} subjects, {events} events, consolidated", elapsed * 1000, "ms")
    report(f"{name} subjects over budget (published whole)", over_budget, "subjects")
    report(
        f"{name} hot summary within {HOT_BUDGET} tokens",
        within,
        "subjects",
        "subjects",
        within / speakers,
    )
    report(f"{name} token reduction per subject, min", min(reductions), "")
    report(f"{name} token reduction per subject, median", statistics.median(reductions), "")
    report(f"{name} dialogue tokens (baseline)", dialogue, "tokens")
    report(f"{name} observation tokens (baseline)", observations, "tokens")
    report(f"{name} hot-summary tokens", hot, "tokens", "dialogue", hot / dialogue)
    report(f"{name} hot-summary tokens", hot, "tokens", "observations", hot / observations)
    _qa_coverage(conversations, view, cited, cold)


def _qa_coverage(
    conversations: list[locomo.Conversation],
    view: locomo.View,
    cited: dict[str, set[str]],
    cold: dict[str, set[str]],
) -> None:
    asked = kept = hot_only = no_evidence = 0
    for conversation in conversations:
        for qa in conversation.qa:
            if qa.category not in locomo.ANSWERED:
                continue
            evidence = qa.evidence_events(conversation, view)
            if not evidence:
                no_evidence += 1  # its dialogue ids name no event of the view: nothing to cite
                continue
            asked += 1
            kept += all(e.id in cited[e.subject] or e.id in cold[e.subject] for e in evidence)
            hot_only += all(e.id in cited[e.subject] for e in evidence)
    name = f"LoCoMo {view} QA:"
    report(f"{name} (cat. 1-4) with evidence events (baseline)", asked, "items")
    report(f"{name} evidence without any event", no_evidence, "items")
    report(f"{name} evidence all in hot summary or cold", kept, "items", "QA", kept / asked)
    report(f"{name} evidence all in the hot summary", hot_only, "items", "QA", hot_only / asked)


# ---------------------------------------------------------------------------
# scale and incremental


def bench_scale(sizes: list[int], repeats: int, postgres: str | None) -> None:
    backend = "PostgreSQL" if postgres else "SQLite"
    previous: tuple[int, float, float] | None = None  # size, wall and CPU medians
    largest = max(sizes)
    backend_name = "postgres" if postgres else "sqlite"
    for size in sizes:
        runs: list[float] = []
        cpus: list[float] = []
        for _ in range(repeats if size < 100_000 else 1):
            with open_memory(backend_name, pg=postgres or PG_URL) as memory:
                fill(memory, SUBJECT, size)
                cold_cache()
                seconds, result = timed(lambda m=memory: m.consolidate(SUBJECT))
                assert result.switched, (result.reason, result.artifact.gate.failures[:3])
                runs.append(seconds)
                cpus.append(CPU[-1])
                if size == largest and len(runs) == 1:
                    full = statistics.median(runs)
                    if postgres:
                        _analyze(memory)
                    bench_incremental(memory, size, full, backend)
        median, cpu = statistics.median(runs), statistics.median(cpus)
        name = f"{backend}: full consolidation, {size:,} events"
        if previous is None:
            report(name, median * 1000, "ms")
            report("  CPU time of this process", cpu * 1000, "ms")
        else:
            decades = _decades(previous[0], size)
            baseline = f"{previous[0]:,} events, per 10x"
            report(name, median * 1000, "ms", baseline, (median / previous[1]) ** (1 / decades))
            report("  CPU time of this process", cpu * 1000, "ms", baseline,
                   (cpu / previous[2]) ** (1 / decades))  # fmt: skip
        previous = (size, median, cpu)


def _analyze(memory: Memory) -> None:
    """PostgreSQL's statistics of the filled subject, as autovacuum gathers them within a
    minute of a bulk load: planned on the empty tables' statistics, a lookup of a few
    operations or derivation edges by event scanned the subject's rows instead."""
    with memory.store._write() as tx:  # type: ignore[attr-defined]
        tx.execute("ANALYZE")


def _decades(smaller: int, larger: int) -> float:
    return math.log10(larger / smaller)


def bench_incremental(memory: Memory, size: int, full: float, backend: str) -> None:
    """100 new events on a published ``size``-event subject, against ``full``, two tails:

    - a tail that contradicts nothing (``quiet_tail``): the parent stays fresh and the
      run is incremental, warm and cold;
    - a tail whose conflicts are among its own events (``self_contradicting_tail``):
      they bump the epoch but leave what the parent read as it was, so the run is
      incremental too;
    - a tail of the same mix as the subject (``stream``), whose detection records
      conflicts: each bumps the epoch, so the parent is no longer fresh and the run is
      a full rebuild (reported with the conflicts it recorded, warm only).

    Detection of the tail is part of the timed prepare: ``add`` leaves it to the job,
    which the consolidation catches up first.
    """
    added = size
    cases = [("no contradiction, worker, warm", quiet_tail, True)]
    if not NO_COLD:
        cases.append(("no contradiction, fresh process, cold", quiet_tail, False))
    cases.append(("conflicts among the tail, worker, warm", self_contradicting_tail, True))
    cases.append(("contradicting tail, worker, warm", stream, True))
    for label, tail, warm in cases:
        repeats = 5 if warm else 1 if size >= 100_000 else 3
        name = f"{backend}: +100 events on {size:,}, {label}"
        added = _incremental_case(memory, full, name, tail, warm, repeats, added)
        if warm and PROFILE and tail is not stream:
            _profile(memory, added, tail, name)
            added += 100


def _incremental_case(
    memory: Memory,
    full: float,
    name: str,
    tail: Callable[..., list[dict[str, Any]]],
    warm: bool,
    repeats: int,
    added: int,
) -> int:
    store, tenant = memory.store, memory.tenant
    prepares: list[float] = []
    switches: list[float] = []
    cpus: list[float] = []
    prepare_cpus: list[float] = []
    incremental: list[bool] = []
    edges: list[int] = []
    grown: list[int] = []
    conflicts_before = _conflicts(memory)
    tracer = step_tracer() if PHASES and warm and tail is not stream else None
    for _ in range(repeats):
        events = tail(SUBJECT, 100, start=added)
        memory.add(events)
        added += 100
        if not warm:
            cold_cache()
        size_before = _store_bytes(memory)
        seconds, artifact = timed(
            lambda: consolidation.prepare(store, tenant, SUBJECT, budget=memory.default_budget)
        )
        incremental.append(artifact.manifest.derived_from_artifact is not None)
        prepares.append(seconds)
        cpu_prepare = CPU[-1]
        prepare_cpus.append(cpu_prepare)
        seconds, switch = timed(lambda a=artifact: consolidation.publish(store, tenant, a))
        assert switch is not None and switch.switched, switch
        switches.append(seconds)
        cpus.append(cpu_prepare + CPU[-1])
        edges.append(_lineage_rows(memory, artifact.id))
        grown.append(_store_bytes(memory) - size_before)
    if tail is quiet_tail or tail is self_contradicting_tail:
        assert all(incremental), "a tail that contradicts nothing before it must be incremental"
    total = statistics.median(p + s for p, s in zip(prepares, switches, strict=True))
    report(name, total * 1000, "ms", "its full build", total / full)
    recorded = _conflicts(memory) - conflicts_before
    print(f"  {sum(incremental)} of {repeats} runs incremental;"
          f" {recorded / repeats:.1f} conflicts recorded per tail")  # fmt: skip
    report("  CPU time of this process", statistics.median(cpus) * 1000, "ms")
    report("  prepare (steps 1-7)", statistics.median(prepares) * 1000, "ms")
    report("    its CPU time", statistics.median(prepare_cpus) * 1000, "ms")
    if tracer is not None:
        report_steps(tracer, repeats)
    switch_ms = statistics.median(switches) * 1000
    report("  switch (step 8)", switch_ms, "ms")
    report("  lineage rows the run wrote", statistics.median(edges), "rows")
    report("  store growth of a run (not its 100 events)", statistics.median(grown) / 1e6, "MB")
    return added


def _lineage_rows(memory: Memory, artifact_id: str) -> int:
    """The derivation edges written for ``artifact_id``."""
    store = memory.store
    assert isinstance(store, SqlStore)
    with store._read() as tx:
        row = tx.one("SELECT count(*) FROM derivation WHERE child = ?", (artifact_id,))
    return int(row[0]) if row else 0


def _store_bytes(memory: Memory) -> int:
    """The bytes the store's database takes: SQLite's pages in use (the file less its
    free pages), PostgreSQL's database size."""
    store = memory.store
    assert isinstance(store, SqlStore)
    with store._read() as tx:
        if store.dialect == "sqlite":
            (pages,), (free,), (size,) = (
                tx.one(f"PRAGMA {name}") or (0,)
                for name in ("page_count", "freelist_count", "page_size")
            )
            return (int(pages) - int(free)) * int(size)
        row = tx.one("SELECT pg_database_size(current_database())")
        return int(row[0]) if row else 0


def _conflicts(memory: Memory) -> int:
    """The conflicts recorded on the benchmark's subject so far."""
    audit = memory.store
    assert isinstance(audit, SqlStore)
    with audit.reader(memory.tenant) as reader:
        return sum(op.kind == "conflict" for op in reader.operations(SUBJECT))


NO_COLD: list[bool] = []  # --no-cold: skip the incremental run of a fresh process
PROFILE: list[str] = []  # where to write the profile of one more warm incremental run
PHASES: list[bool] = []  # --phases: CPU of each step of the warm quiet runs


#: the steps of a consolidation --phases times, as (name, owner, attribute)
STEPS: tuple[tuple[str, object, str], ...] = (
    ("detection of the tail", consolidation, "_detect_first"),
    ("read the subject", consolidation, "_read_input"),
    ("selection", consolidation, "select"),
    ("extraction and open items", consolidation.extract, "extract_with_stored"),
    ("built-in generator", DeterministicGenerator, "output"),
    ("parse the output (a model's)", generation.parse, "parse_output"),
    ("gate", generation.gate_delta, "check"),
    ("budget count", consolidation, "exceeds_budget"),
    ("write the artifact", consolidation.Built, "write"),
)


def step_tracer() -> Tracer:
    """A tracer over a consolidation's steps (this process's CPU; no server to charge)."""
    tracer = Tracer(None, list)
    for name, owner, attribute in STEPS:
        tracer.wrap(owner, attribute, name)
    return tracer


def report_steps(tracer: Tracer, runs: int) -> None:
    """Each step's CPU per run (the steps run one after the other, so they add up)."""
    tracer.restore()
    print("    by step (CPU per run, the mean over the runs):")
    for name, _, _ in STEPS:
        if name in tracer.cpu:
            report(f"      {name}", tracer.cpu[name] / runs * 1000, "ms")


def _profile(
    memory: Memory, added: int, tail: Callable[..., list[dict[str, Any]]], name: str
) -> None:
    """One more run of the case ``name`` under cProfile, appended to the profile file."""
    import cProfile
    import pstats

    memory.add(tail(SUBJECT, 100, start=added))  # incremental, as the runs profiled
    profiler = cProfile.Profile()
    profiler.runcall(memory.consolidate, SUBJECT)
    with open(PROFILE[0], "a") as out:
        print(f"# {name}", file=out)
        pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(60)
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(40)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--repeats", type=int, default=3, help="full builds below 100k events")
    parser.add_argument("--postgres", help="also run the scale figures on this PostgreSQL URL")
    parser.add_argument("--skip-locomo", action="store_true")
    parser.add_argument("--skip-sqlite", action="store_true", help="with --postgres: it alone")
    parser.add_argument("--quick", action="store_true", help="sizes 1000,10000")
    parser.add_argument("--no-cold", action="store_true", help="skip the cold incremental run")
    parser.add_argument("--profile", help="write a cProfile of one warm incremental run here")
    parser.add_argument("--phases", action="store_true", help="CPU of each step of warm +100s")
    args = parser.parse_args()
    if args.no_cold:
        NO_COLD.append(True)
    if args.profile:
        PROFILE.append(args.profile)
    if args.phases:
        PHASES.append(True)
    sizes = [1000, 10000] if args.quick else [int(s) for s in args.sizes.split(",")]
    if not args.skip_locomo:
        bench_locomo()
    if not (args.skip_sqlite and args.postgres):
        bench_scale(sizes, args.repeats, None)
    if args.postgres:
        bench_scale(sizes, args.repeats, args.postgres)
    return 0


if __name__ == "__main__":
    sys.exit(main())
