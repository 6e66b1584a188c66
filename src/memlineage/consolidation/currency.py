"""The gate's check of what is current: an updated event is never shown without its update. Pure.

``meaning.updates`` finds which later event updates which earlier one without
an explicit ``supersedes`` ("We moved to Lisbon" after "I live in Porto").
A summary that states the older event must state the newer one too, each
dated: otherwise the reader takes the old value for the current one
(``updated_shown_as_current``). Moving the newest word on a matter to
``cold`` while its predecessor stays hot is the same failure.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from memlineage.meaning.updates import Update, find_updates
from memlineage.model import Event, GateFailure, Output

UPDATED_SHOWN_AS_CURRENT = "updated_shown_as_current"


def check_updates(
    output: Output,
    selection: Sequence[Event],
    updates: dict[str, Update] | None = None,
    stated: Collection[str] | None = None,
) -> list[GateFailure]:
    """Every stated event whose update is in the selection has that update stated too.

    ``updates`` and ``stated`` (the ids the statements cite), when the caller has them
    (the gate on a delta), spare reading the selection and the statements again.
    """
    found = find_updates(selection) if updates is None else updates
    if not found:
        return []
    if stated is None:
        stated = {s for statement in output.statements for s in statement.derived_from}
    failures = []
    for event_id in sorted(found.keys() & stated):
        update = found[event_id]
        if update.newer not in stated:
            detail = (
                f"{event_id} is shown but {update.newer}, which updates it"
                f" ({update.rule} on {update.slot!r}), is not"
            )
            failures.append(GateFailure(UPDATED_SHOWN_AS_CURRENT, event_id, detail))
    return failures
