"""Progress bars on stderr for a person watching: one bar per step the library reports.

A command passes what :func:`progress_bars` yields as the ``progress`` of a
library call (see memlineage.progress). It is None when stderr is not a
terminal or with ``--json``: scripts get exactly the output they got before,
and the library does no extra work for them.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import click

from memlineage.interfaces.cli.app import progress_enabled
from memlineage.progress import Progress

LABEL_WIDTH = len("consolidating")  # the longest step: the bars of one command line up


@contextmanager
def progress_bars() -> Iterator[Progress | None]:
    """A ``progress`` callback that draws the bars, or None when no one is watching."""
    if not progress_enabled():
        yield None
        return
    with _Bars() as bars:
        yield bars.report


class _Bars:
    """The bar of the step in progress; a new step finishes the one before, whose line stays."""

    def __init__(self) -> None:
        self.stack = ExitStack()
        self.step: str | None = None
        self.bar: Any = None  # click types its bar loosely; it has update()
        self.done = 0

    def __enter__(self) -> _Bars:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stack.close()  # an error's own line then starts on a line of its own

    def report(self, step: str, done: int, total: int | None) -> None:
        if step != self.step:
            self._start(step, total)
        if self.bar is not None and done > self.done:
            self.bar.update(done - self.done)
        self.done = done

    def _start(self, step: str, total: int | None) -> None:
        self.stack.close()
        self.step, self.done, self.bar = step, 0, None
        if total == 0:
            return  # nothing to do: no bar
        # Without a total (stdin still arriving) the bar counts instead: click needs an
        # iterable of unknown length for that, and never iterates it here.
        self.bar = self.stack.enter_context(
            click.progressbar(
                iter(int, 1) if total is None else None,
                length=total,
                label=step.ljust(LABEL_WIDTH),
                show_pos=total is None,
                file=sys.stderr,
            )
        )
