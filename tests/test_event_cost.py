"""The cost of one long event, on both backends: bounded per clause, linear in the text.

A 1 MB and a 10 MB event of 12-word lowercase sentences (a lowercase word after
". " must not defeat sentence splitting) are added in a child process with a
cap on its address space, so a regression fails the test instead of the
machine. The child reports its peak resident memory, the bytes the store holds
and the longest clause an item carries; the bounds are the documented
constants (docs/concepts.md, "Limits per event"): peak memory under
BASE_RSS + RSS_PER_BYTE x text, stored bytes under STORED_PER_BYTE x text + 1 MB,
no item's clause over MAX_CLAUSE characters.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

BASE_RSS = 150 * 2**20
RSS_PER_BYTE = 40
STORED_PER_BYTE = 20
MAX_CLAUSE = 4096
ADDRESS_SPACE = 2 * 2**30  # the child's cap: a regression dies here, not on the machine
CPU_SECONDS = 600  # a guard against running forever, not a speed assertion

CHILD = """
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, ({space}, {space}))
resource.setrlimit(resource.RLIMIT_CPU, ({cpu}, {cpu}))
from memlineage import Memory
from memlineage.api import must_preserve
words = "tea eur budget friday deploy never always price team plan call review".split()
sentences, size, n = [], 0, 0
while size < {size}:
    sentence = " ".join(words[(n + i) % len(words)] for i in range(12)) + "."
    sentences.append(sentence)
    size += len(sentence) + 2
    n += 1
text = "  ".join(sentences)
event = {{"id": "long-{size}", "subject": "user-7", "text": text}}
with Memory(sys.argv[1], tenant="acme") as memory:
    memory.add([event])
longest = max((len(i.clause or "") for i in must_preserve([event])), default=0)
# VmHWM: the peak of this process's own memory since exec (ru_maxrss keeps the parent's
# size at fork, so a child of a large test runner would report the runner's memory)
peak = [l for l in open("/proc/self/status") if l.startswith("VmHWM:")]
usage = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
rss = int(peak[0].split()[1]) * 1024 if peak else usage
print(json.dumps({{"text": len(text.encode()), "rss": rss, "longest": longest}}))
"""


def stored_bytes(db_url: str) -> int:
    if not db_url.startswith("postgresql://"):
        return sum(p.stat().st_size for p in Path(db_url).parent.glob(Path(db_url).name + "*"))
    with psycopg.connect(db_url) as conn:
        row = conn.execute(
            "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = current_schema() AND c.relkind = 'r'"
        ).fetchone()
    return int(row[0]) if row else 0


@pytest.mark.slow
def test_one_long_event_costs_memory_time_and_bytes_linear_in_its_text(db_url: str) -> None:
    for size in (2**20, 10 * 2**20):
        before = stored_bytes(db_url)
        script = CHILD.format(space=ADDRESS_SPACE, cpu=CPU_SECONDS, size=size)
        child = subprocess.run(
            [sys.executable, "-c", script, db_url], capture_output=True, text=True, check=False
        )
        assert child.returncode == 0, child.stderr[-2000:]
        seen = json.loads(child.stdout)
        assert seen["longest"] <= MAX_CLAUSE, seen
        assert seen["rss"] <= BASE_RSS + RSS_PER_BYTE * seen["text"], seen
        grown = stored_bytes(db_url) - before
        assert grown <= STORED_PER_BYTE * seen["text"] + 2**20, (grown, seen)
