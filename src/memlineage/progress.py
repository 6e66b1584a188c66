"""Progress of long calls, for whoever shows it (the command line draws bars on stderr).

A long call takes ``progress: Progress | None``. It calls ``progress(step,
done, total)`` as its work advances: ``done`` units of ``step`` are finished
out of ``total`` (None while the total is not known, e.g. lines still arriving
on stdin). Each step is first reported with ``done == 0``; ``done`` only grows.
Steps are short words a person reads as a label: ``reading``, ``checking``,
``appending``, ``detecting``, ``consolidating``, ``rolling out``,
``rebuilding``, ``recovering``.

Without a callback a call does no extra work, so a script pays nothing for it.
"""

from __future__ import annotations

from collections.abc import Callable

Progress = Callable[[str, int, "int | None"], None]
Advance = Callable[[int], None]


def begin(progress: Progress | None, step: str, total: int | None) -> Advance | None:
    """Report that ``step`` starts; the function returned advances it by a number of units.

    None without a callback, so a loop tests one name instead of building reports.
    ``done`` never passes ``total``: work done twice (a transaction retried after a
    race) is not counted twice.
    """
    if progress is None:
        return None
    report = progress
    done = 0
    report(step, 0, total)

    def advance(units: int) -> None:
        nonlocal done
        done = done + units if total is None else min(done + units, total)
        report(step, done, total)

    return advance
