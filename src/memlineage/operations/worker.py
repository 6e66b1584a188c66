"""The worker process: claim a job, consolidate its subject, finish the job; repeat.

Between jobs it also runs the contradiction detection job of one subject whose
events are not all checked yet (``Memory.add`` returns before detection by
default): the queue of that job is the watermark ``clocks.detected_through``
itself, so it needs no row of its own, and a crash loses nothing.

``memlineage worker --concurrency N`` starts N such processes (stateless: each
opens its own connections). Each job runs under a lease, renewed by a
heartbeat while the job runs and fenced by the job's token; the generator runs
under a per-job timeout. One JSON line per job goes to stderr.

Signals: the first SIGTERM (or SIGINT) stops claiming and lets the current job
finish (it is bounded by the timeout), then the process exits 0. A second one
abandons the current job: its open transaction rolls back, the job goes back
to the queue (the attempt not counted) and the process exits.
"""

from __future__ import annotations

import dataclasses
import importlib
import io
import json
import multiprocessing
import os
import signal
import socket
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import FrameType
from typing import Any, TextIO

from memlineage.consolidation import consolidate as consolidation
from memlineage.consolidation.generators.base import GenerationRequest, Generator
from memlineage.consolidation.generators.chat import Completion, Repair
from memlineage.consolidation.generators.config import seed_config
from memlineage.errors import BadInput
from memlineage.operations import metrics, release
from memlineage.operations import queue as jobs
from memlineage.operations.queue import RetryPolicy
from memlineage.recall.embed import Embedder, built_in_kind, identity, make_embedder
from memlineage.store import open_store
from memlineage.store.protocol import Detection, Embedded, Job, JobEnd, Store


class GenerationTimeout(Exception):
    """The generator ran past the job's timeout; the attempt fails with a kept artifact."""


class Abandon(BaseException):
    """A second stop signal: leave the current job now (not an ``Exception``, so no
    handler on the way swallows it)."""


@dataclass(frozen=True)
class WorkerOptions:
    url: str | None = None
    tenant: str | None = "default"  # None: jobs of every tenant
    metrics_port: int | None = None  # Prometheus metrics on 127.0.0.1:port (+ process index)
    once: bool = False  # drain the due jobs, then exit
    lease: float = 60.0  # seconds; renewed every lease/3 while a job runs
    timeout: float = 30.0  # seconds a generator may take per job (0: no limit)
    poll: float = 1.0  # seconds between claims when the queue is empty
    schedule: float | None = None  # run the schedule trigger every so many seconds
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    generator: str | None = None  # "module:attr" (an instance or a factory); None: built-in

    def __post_init__(self) -> None:
        if self.lease <= 0:
            raise BadInput("must be positive", field="lease")
        if self.timeout < 0:
            raise BadInput("must not be negative", field="timeout")
        if self.poll <= 0:
            raise BadInput("must be positive", field="poll")
        if self.schedule is not None and (self.schedule <= 0 or self.tenant is None):
            raise BadInput("needs a positive period and one tenant", field="schedule")


@dataclass(frozen=True)
class JobReport:
    """One finished attempt, as logged."""

    worker: str
    tenant: str
    subject: str
    token: int
    attempt: int
    outcome: str
    state: str | None  # the job's state after this attempt; None when fenced
    artifact_id: str | None
    artifact_status: str | None
    duration_ms: float
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "ts": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
            "event": "job",
            **self.__dict__,
        }


def load_generator(spec: str | None) -> Generator | None:
    """``module:attr``: a generator instance, or a class or callable that returns one."""
    if spec is None:
        return None
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise BadInput(f"{spec!r} is not module:attr", field="generator")
    try:
        found = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise BadInput(f"cannot load {spec!r}: {exc}", field="generator") from exc
    # An instance is used as it is; a class or a factory is called once per process.
    is_instance = hasattr(found, "generate") and not isinstance(found, type)
    generator = found if is_instance else found()
    if not hasattr(generator, "generate"):
        raise BadInput(f"{spec!r} is not a generator", field="generator")
    return generator  # type: ignore[no-any-return]


def tenant_generator(store: Store, tenant: str) -> Generator:
    """The generator a job uses when the worker was given none (see ``tenant_configuration``)."""
    return tenant_configuration(store, tenant)[0]


def tenant_configuration(
    store: Store,
    tenant: str,
    claimed: tuple[str, int | None] | None = None,
    stored: dict[tuple[str, int], dict[str, Any]] | None = None,
) -> tuple[Generator, int | None]:
    """The tenant's stored configuration (seeded from the configuration file the first
    time; docs/generators.md) as a generator, and its version, which the worker then runs
    under its timeout and records in the manifest.

    ``claimed``: the release state the claim read (``Job.release``); with it the store
    is read only for a version missing from ``stored`` (a stored version never changes,
    so a worker keeps what it read) or to seed the tenant's first configuration.
    """
    active = _claimed_configuration(store, tenant, claimed, stored)
    if active is None:
        active = release.configured(store, tenant)
        if stored is not None and active.version is not None:
            stored[(tenant, active.version)] = active.config
    return release.generator_for(active.config, tenant), active.version


def _claimed_configuration(
    store: Store,
    tenant: str,
    claimed: tuple[str, int | None] | None,
    stored: dict[tuple[str, int], dict[str, Any]] | None,
) -> release.ActiveConfig | None:
    """What ``configured`` would find, from the claim's release state; None: ask it."""
    if claimed is None or stored is None:
        return None
    version = claimed[1]
    if version is None:
        try:
            seeds = seed_config(tenant)
        except BadInput:  # a bad file: ``configured`` says so, or ignores it when stored
            return None
        # No active version and no file to seed from: the built-in generator.
        return release.ActiveConfig(None, dict(release.BUILTIN_CONFIG)) if seeds is None else None
    if (tenant, version) not in stored:
        stored[(tenant, version)] = release.stored_config(store, tenant, version)
    return release.ActiveConfig(version, stored[(tenant, version)])


class TimeLimited:
    """A generator that raises :class:`GenerationTimeout` past ``seconds``.

    SIGALRM interrupts a sleeping or blocked call (an HTTP request to a model
    included), which a thread with a deadline could not: the thread would run on.
    It only works in the main thread; elsewhere the lease is the only bound.
    """

    def __init__(self, inner: Generator, seconds: float):
        self.inner = inner
        self.seconds = seconds
        self.name = inner.name
        self.prompt_version = inner.prompt_version
        self.model_snapshot = inner.model_snapshot

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def generate(self, request: GenerationRequest) -> Any:
        return self._limited(self.inner.generate, request)

    def complete(self, request: GenerationRequest, repair: Repair | None = None) -> Completion:
        """A model's call (generators/chat.py), under the same limit as ``generate``."""
        complete = self.inner.complete  # type: ignore[attr-defined]
        completion: Completion = self._limited(complete, request, repair)
        return completion

    def _limited(self, call: Any, *args: Any) -> Any:
        if self.seconds <= 0 or threading.current_thread() is not threading.main_thread():
            return call(*args)
        previous = signal.signal(signal.SIGALRM, self._expired)
        signal.setitimer(signal.ITIMER_REAL, self.seconds)
        try:
            return call(*args)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)

    def _expired(self, _signum: int, _frame: FrameType | None) -> None:
        raise GenerationTimeout(f"generation took longer than {self.seconds:g} s")


class Worker:
    """Claims and runs jobs over one store, in the calling thread."""

    def __init__(
        self,
        store: Store,
        options: WorkerOptions,
        name: str | None = None,
        log: TextIO | None = None,
        generator: Generator | None = None,
        embedder: Embedder | None = None,
    ):
        """``log``: where the JSON line of each job goes (default stderr). ``generator``:
        an instance to use instead of ``options.generator``. ``embedder``: the one the
        embedding job uses (default: the built-in model, made when first needed)."""
        self.store = store
        self.options = options
        self.name = name or f"{socket.gethostname()}:{os.getpid()}"
        self.log = log
        self.stopping = threading.Event()
        self.running: Job | None = None
        self.outcomes: Counter[str] = Counter()
        self.last_detected: tuple[str, str] | None = None  # (tenant, subject) detected last
        self.last_embedded: str | None = None  # the subject embedded last
        self._embedder = embedder
        self.generator = generator or load_generator(options.generator)
        self.configs: dict[tuple[str, int], dict[str, Any]] = {}  # stored versions read

    # -- the loop --

    def run(self) -> Counter[str]:
        """Claim and run jobs until stopped (or, with ``once``, until none is due)."""
        next_sweep = time.monotonic()
        while not self.stopping.is_set():
            try:
                if self.options.schedule is not None and time.monotonic() >= next_sweep:
                    assert self.options.tenant is not None
                    jobs.schedule(self.store, self.options.tenant)
                    next_sweep = time.monotonic() + self.options.schedule
                detected = self.detect_step()
                embedded = self.embed_step()
                if self.step() is not None or detected is not None or embedded is not None:
                    continue
            except Exception as exc:  # the database went away: log, wait, try again
                self.outcomes["error"] += 1
                self._write({"event": "error", "worker": self.name, "error": f"{exc!r}"})
            if self.options.once:
                break
            self.stopping.wait(self.options.poll)
        return self.outcomes

    def step(self) -> JobReport | None:
        """Claim one due job and run it; None when no job is due."""
        o = self.options
        job = self.store.claim(o.tenant, self.name, o.lease, o.retry.max_attempts)
        if job is None:
            return None
        if job.state == "dead":  # its lease expired after the last allowed attempt
            return self._report(job, job.last_outcome or "dead", "dead", None, None, 0.0)
        return self.run_job(job)

    def detect_step(self) -> Detection | None:
        """Run the detection job of one subject with unchecked events; None when none has.

        Subjects are taken in turn (after the last one this worker checked), so a
        subject that keeps receiving events does not starve the others.
        """
        started = time.monotonic()
        found = self.store.detect_next(self.options.tenant, self.last_detected)
        if found is None:
            return None
        assert found.tenant is not None
        self.last_detected = (found.tenant, found.subject)  # not an outcome: not a job
        self._write(
            {
                "ts": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
                "event": "detect",
                "worker": self.name,
                "tenant": found.tenant,
                "subject": found.subject,
                "detected_through": found.detected_through,
                "conflicts": len(found.conflicts),
                "duration_ms": round((time.monotonic() - started) * 1000, 1),
            }
        )
        return found

    def embed_step(self) -> Embedded | None:
        """Embed one chunk of one subject's events not embedded yet; None when none is behind.

        Only for one tenant (``options.tenant``) that chose an embedder (``Memory.embed``,
        ``memlineage embed``), and only when this worker's embedder is that one: vectors
        of two models are never mixed. Subjects are taken in turn, as for detection.
        """
        tenant = self.options.tenant
        if tenant is None:
            return None
        settings = self.store.embedder_settings(tenant)
        if settings is None or settings[1].dims == 0:
            return None
        pending = self.store.pending_embedding(tenant)
        if not pending:
            return None
        if self._embedder is None and (kind := built_in_kind(settings[1].name)) is not None:
            try:  # the tenant's model runs here too, when its package is installed
                self._embedder = make_embedder(kind)
            except BadInput:
                return None
        if self._embedder is None or identity(self._embedder) != settings[1]:
            return None  # another model's vectors: `memlineage embed` with it catches up
        later = [s for s in pending if self.last_embedded is None or s > self.last_embedded]
        subject = (later or pending)[0]
        started = time.monotonic()
        run = self.store.embed_pending(tenant, subject, self._embedder, limit=EMBED_STEP)
        self.last_embedded = subject
        self._write(
            {
                "ts": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
                "event": "embed",
                "worker": self.name,
                "tenant": tenant,
                "subject": subject,
                "embedded": run.embedded,
                "through": run.through,
                "duration_ms": round((time.monotonic() - started) * 1000, 1),
            }
        )
        return run

    def run_job(self, job: Job) -> JobReport:
        started = time.monotonic()
        result: consolidation.Consolidation | None = None
        self.running = job
        try:
            with self._heartbeat(job):
                try:
                    chosen, version = (
                        (self.generator, None)
                        if self.generator is not None
                        else tenant_configuration(self.store, job.tenant, job.release, self.configs)
                    )
                    result = consolidation.consolidate(
                        self.store,
                        job.tenant,
                        job.subject,
                        TimeLimited(chosen, self.options.timeout),
                        force=job.force,
                        config_version=version,
                        release_mode=job.release[0] if job.release else None,
                    )
                    metrics.consolidated(
                        job.tenant, result, time.monotonic() - started, interface="worker"
                    )
                    end = jobs.end_of(job, result, self.options.retry)
                except Exception as exc:  # a store or generator error fails the attempt
                    end = jobs.failed(job, f"{type(exc).__name__}: {exc}", self.options.retry)
        except Abandon:
            self.store.finish(job, JobEnd("queued", "abandoned", counted=False))
            self._report(job, "abandoned", "queued", None, None, started)
            raise
        finally:
            self.running = None
        owned = self.store.finish(job, end)
        artifact = result.artifact if result is not None else None
        return self._report(
            job,
            end.outcome if owned else "fenced",
            end.state if owned else None,
            artifact.id if artifact else end.artifact_id,
            str(result.status) if result is not None else None,
            started,
            end.error if owned else "lease lost: another worker claimed the job since",
        )

    @contextmanager
    def _heartbeat(self, job: Job) -> Iterator[None]:
        """Renew the lease every third of it while the job runs (a thread: generation
        blocks the main one). A renewal refused means another worker owns the job now;
        this attempt runs to its end and its finish is refused too."""
        done = threading.Event()

        def beat() -> None:
            while not done.wait(self.options.lease / 3):
                try:
                    if not self.store.renew(job, self.options.lease):
                        return
                except Exception:  # a lost connection: the lease may lapse; the CAS still fences
                    continue

        thread = threading.Thread(target=beat, name="lease-heartbeat", daemon=True)
        thread.start()
        try:
            yield
        finally:
            done.set()
            thread.join()

    def _report(
        self,
        job: Job,
        outcome: str,
        state: str | None,
        artifact_id: str | None,
        artifact_status: str | None,
        started: float,
        error: str | None = None,
    ) -> JobReport:
        report = JobReport(
            worker=self.name,
            tenant=job.tenant,
            subject=job.subject,
            token=job.token,
            attempt=job.attempts,
            outcome=outcome,
            state=state,
            artifact_id=artifact_id,
            artifact_status=artifact_status,
            duration_ms=round((time.monotonic() - started) * 1000, 1) if started else 0.0,
            error=error or (job.last_error if state == "dead" else None),
        )
        self.outcomes[outcome] += 1
        metrics.JOBS_RUN.labels(outcome).inc()
        self._write(report.to_json())
        return report

    def _write(self, line: dict[str, Any]) -> None:
        out = self.log or sys.stderr
        out.write(json.dumps(line, ensure_ascii=False) + "\n")
        out.flush()

    # -- signals --

    def install_signal_handlers(self) -> dict[int, Any]:
        """First SIGTERM/SIGINT: stop after the current job. Second: abandon it.

        Returns the handlers it replaced."""

        def on_signal(_signum: int, _frame: FrameType | None) -> None:
            if self.stopping.is_set() and self.running is not None:
                raise Abandon()
            self.stopping.set()

        return _install({signal.SIGTERM: on_signal, signal.SIGINT: on_signal})


def run_process(options: WorkerOptions, index: int = 0, results: Any = None) -> Counter[str]:
    """One worker process: its own store, its own connections.

    Under a supervisor (``results`` given) it ignores SIGINT: Ctrl-C reaches the
    whole process group, and the supervisor passes it on once, as SIGTERM.
    """
    schedule = options.schedule if index == 0 else None  # one sweeper per `worker` command
    store = open_store(options.url)
    if options.metrics_port is not None:  # worker i of --concurrency N: port + i
        metrics.attach(store)
        if options.tenant is not None:
            metrics.STORE.watch(options.tenant)
        metrics.serve_on(options.metrics_port + index)
    previous: dict[int, Any] = {}
    try:
        worker = Worker(store, dataclasses.replace(options, schedule=schedule))
        previous = worker.install_signal_handlers()
        if results is not None:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            outcomes = worker.run()
        except Abandon:
            outcomes = worker.outcomes
    finally:
        _install(previous)
        store.close()
    if results is not None:
        results.put(dict(outcomes))
    return outcomes


def run(options: WorkerOptions, concurrency: int = 1) -> Counter[str]:
    """Run ``concurrency`` worker processes until they stop; the outcomes of all of them.

    With one, the worker runs in this process. With more, this process only
    starts them and passes each stop signal on to them.
    """
    if concurrency < 1:
        raise BadInput("must be at least 1", field="concurrency")
    load_generator(options.generator)  # a bad spec fails here, before any process starts
    if concurrency == 1:
        return run_process(options)
    context = multiprocessing.get_context("spawn")  # no inherited connections or locks
    results = context.SimpleQueue()
    procs = [
        context.Process(target=run_process, args=(options, i, results), name=f"worker-{i}")
        for i in range(concurrency)
    ]

    def forward(_signum: int, _frame: FrameType | None) -> None:
        for proc in procs:
            if proc.pid is not None and proc.is_alive():
                os.kill(proc.pid, signal.SIGTERM)

    previous = _install({signal.SIGTERM: forward, signal.SIGINT: forward})
    try:
        for proc in procs:
            proc.start()
        for proc in procs:
            proc.join()
    finally:
        _install(previous)
    total: Counter[str] = Counter()
    while not results.empty():
        total.update(results.get())
    failed = [p.name for p in procs if p.exitcode != 0]
    if failed:
        total["crashed_processes"] = len(failed)
    return total


def _install(handlers: dict[int, Any]) -> dict[int, Any]:
    return {signum: signal.signal(signum, handler) for signum, handler in handlers.items()}


EMBED_STEP = 512  # events a worker embeds of one subject before it looks at the queue again


def drain(
    store: Store,
    tenant: str,
    generator: Generator | None = None,
    retry: RetryPolicy | None = None,
    log: TextIO | None = None,
    timeout: float = 30.0,
    limit: int | None = None,
    embedder: Embedder | None = None,
) -> list[JobReport]:
    """Run the due jobs of one tenant in this thread until none is due (``Memory.work``),
    or ``limit`` jobs have run; the detection and embedding jobs of its subjects first.

    Each job is claimed, leased and finished as ``memlineage worker --once`` does it.
    Nothing is logged unless ``log`` is given.
    """
    if limit is not None and (isinstance(limit, bool) or limit < 1):
        raise BadInput("must be at least 1", field="limit")
    options = WorkerOptions(tenant=tenant, once=True, timeout=timeout, retry=retry or RetryPolicy())
    worker = Worker(
        store, options, log=log or io.StringIO(), generator=generator, embedder=embedder
    )
    while worker.detect_step() is not None:  # the detection jobs first: they are cheap
        pass
    while worker.embed_step() is not None:
        pass
    reports: list[JobReport] = []
    while limit is None or len(reports) < limit:
        report = worker.step()
        if report is None:
            break
        reports.append(report)
    return reports


def drained_json(reports: Sequence[JobReport]) -> dict[str, Any]:
    """A drain as the worker command counts it (``jobs``, ``outcomes``), with each job's line."""
    return {
        "jobs": len(reports),
        "outcomes": dict(Counter(r.outcome for r in reports)),
        "reports": [r.to_json() for r in reports],
    }
