"""What a candidate changes in the published summary, line by line, for the review page.

Pure: two texts in, rows out. ``difflib`` (the standard library's) does the
matching; the page renders the rows on the server, without script.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

MARKS = {" ": "same", "+": "added", "-": "removed"}


@dataclass(frozen=True)
class DiffLine:
    kind: str  # same, added (only in the candidate), removed (only in the published)
    text: str

    @property
    def sign(self) -> str:
        return {"same": " ", "added": "+", "removed": "-"}[self.kind]


def summary_diff(published: str, candidate: str) -> list[DiffLine]:
    """Every line of both summaries, in order, marked same, added or removed."""
    rows = difflib.ndiff(published.splitlines(), candidate.splitlines())
    # ndiff's "? " lines point at characters within a changed line: not shown
    return [DiffLine(MARKS[row[0]], row[2:]) for row in rows if row[0] in MARKS]
