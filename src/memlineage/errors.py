"""One exception tree. The command line and the HTTP service map it to exit codes."""

from __future__ import annotations


class MemlineageError(Exception):
    """Base of every error memlineage raises on purpose."""

    exit_code = 1


class BadInput(MemlineageError):
    """Input that does not fit the contract. Nothing was stored or changed.

    ``line`` is the 1-based line of a JSONL file (None for a single value);
    ``field`` names the offending field.
    """

    exit_code = 2

    def __init__(self, message: str, *, line: int | None = None, field: str | None = None):
        self.line = line
        self.field = field
        self.reason = message
        where = []
        if line is not None:
            where.append(f"line {line}")
        if field is not None:
            where.append(f"field {field!r}")
        super().__init__(f"{', '.join(where)}: {message}" if where else message)

    def at_line(self, line: int) -> BadInput:
        """The same error, located on a JSONL line."""
        return BadInput(self.reason, line=line, field=self.field)


class NotFound(BadInput):
    """An id that names nothing in this tenant."""


class DuplicateEventId(BadInput):
    """I2: an event id that exists already with a different content hash."""


class StoreError(MemlineageError):
    """The store cannot be opened or used as asked (configuration, schema)."""

    exit_code = 2


class SchemaTooNew(StoreError):
    """The database was migrated by a newer memlineage than this one."""
