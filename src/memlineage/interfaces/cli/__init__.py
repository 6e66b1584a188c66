"""The ``memlineage`` command line: the library's operations, one command each.

Built on click. ``--db``, ``--tenant`` and ``--json`` are accepted before or
after the subcommand. Every reporting command takes ``--json`` and then prints
exactly one JSON document on stdout: its report, or on an error
``{"error": {"code", "type", "message"}}``. Exit codes: 0 success, 1 a check
failed, 2 bad input or usage, with a one-line message on stderr; 130 when
interrupted.

Each module below registers one group of commands on the root; a new group is
one import here.
"""

from __future__ import annotations

from memlineage.interfaces.cli import (  # noqa: F401  (each registers its commands)
    demo,
    derived,
    embeddings,
    evaluation,
    generate,
    jobs,
    lineage,
    raw,
    release,
    service,
    validity,
)
from memlineage.interfaces.cli.app import main, root

__all__ = ["main", "root"]
