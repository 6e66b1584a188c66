"""Generators that inject the source document's faults into real worker processes.

A worker loads one with ``--generator fault_generators:NAME`` (``tests`` on
``PYTHONPATH``). Test code only.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

from memlineage.consolidation.generators.base import GenerationRequest
from memlineage.consolidation.generators.deterministic import DeterministicGenerator
from memlineage.store.base import SqlStore


class Sleepy(DeterministicGenerator):
    """Sleeps ``FAULT_SLEEP`` seconds (default 30) before a correct output; first touches
    the file ``FAULT_STARTED`` names, if any, so a test knows it is generating (outside
    any transaction) and not, say, holding a lock."""

    name = "sleepy"

    def generate(self, request: GenerationRequest) -> dict[str, Any]:
        started = os.environ.get("FAULT_STARTED")
        if started:
            Path(started).touch()
        time.sleep(float(os.environ.get("FAULT_SLEEP", "30")))
        return super().generate(request)


class MissingField(DeterministicGenerator):
    """A correct output with its ``claims`` field left out."""

    name = "missing-field"

    def generate(self, request: GenerationRequest) -> dict[str, Any]:
        output = super().generate(request)
        del output["claims"]
        return output


def killed_before_switch() -> DeterministicGenerator:
    """A correct generator in a process that is SIGKILLed when it reaches the switch,
    after its artifact was written."""

    def die(self: SqlStore, tenant: str, artifact_id: str, *, force: bool = False) -> Any:
        os.kill(os.getpid(), signal.SIGKILL)

    SqlStore.switch = die  # type: ignore[method-assign,assignment]
    return DeterministicGenerator()
